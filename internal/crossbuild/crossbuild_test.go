package crossbuild

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// targets are the hosts git corral promises to run on.
var targets = []struct{ goos, goarch string }{
	{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"},
}

// TestCrossBuild builds the binary and vets every package (with its tests) for each target, and
// fails naming the target and the compiler's or vet's own message.
func TestCrossBuild(t *testing.T) {
	root := moduleRoot(t)
	for _, tg := range targets {
		name := tg.goos + "/" + tg.goarch
		t.Run(tg.goos+"-"+tg.goarch, func(t *testing.T) {
			if out, err := goCmd(root, tg.goos, tg.goarch, "build", "-o", os.DevNull, "./cmd/git-corral"); err != nil {
				t.Fatalf("%s: go build ./cmd/git-corral: %v\n%s", name, err, out)
			}
			if out, err := goCmd(root, tg.goos, tg.goarch, "vet", "./..."); err != nil {
				t.Fatalf("%s: go vet ./...: %v\n%s", name, err, out)
			}
		})
	}
}

// goCmd runs the go command in root for goos/goarch, without cgo. go test puts its own
// toolchain's bin directory first on PATH, so "go" is the toolchain running the test.
func goCmd(root, goos, goarch string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

// moduleRoot is the directory holding go.mod, above this package's directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test's directory")
		}
		dir = parent
	}
}
