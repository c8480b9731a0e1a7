package crossbuild

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// targets are the hosts git corral promises to run on besides this one, and what each proves.
// Files are per system (*_darwin.go, *_linux.go) and, where a file must be, per architecture
// only for amd64 and arm64 (the light tier's seccomp program is built into amd64 binaries and
// assembled at run time elsewhere). So vet, which type-checks every package with its tests,
// runs once per system on arm64, the architecture neither CI nor the native tests compile for;
// darwin/amd64 builds the binary, for a dependency that would break there alone. linux/amd64 is the native build: go test and make
// lint compile and vet it already. Each vet costs a whole build of every dependency for its
// target, minutes on this machine kind, so a target is here only for what no other proves.
var targets = []struct {
	goos, goarch string
	vet          bool
}{
	{"linux", "arm64", true}, {"darwin", "arm64", true}, {"darwin", "amd64", false},
}

// TestCrossBuild builds the binary for each target, and vets every package (with its tests)
// where the target says so, and fails naming the target and the compiler's or vet's own message.
func TestCrossBuild(t *testing.T) {
	root := moduleRoot(t)
	for _, tg := range targets {
		name := tg.goos + "/" + tg.goarch
		t.Run(tg.goos+"-"+tg.goarch, func(t *testing.T) {
			// The full binary, and the front make install puts on PATH as git-corral.
			for _, pkg := range []string{"./cmd/git-corral", "./cmd/git-corral-front"} {
				if out, err := goCmd(root, tg.goos, tg.goarch, "build", "-o", os.DevNull, pkg); err != nil {
					t.Fatalf("%s: go build %s: %v\n%s", name, pkg, err, out)
				}
			}
			if !tg.vet {
				return
			}
			if out, err := goCmd(root, tg.goos, tg.goarch, "vet", "./..."); err != nil {
				t.Fatalf("%s: go vet ./...: %v\n%s", name, err, out)
			}
		})
	}
}

// TestTargetsCoverEverySystem keeps the cut above honest: every GOOS a file of the module is
// built for alone (a _GOOS.go suffix) is vetted by some target, and every architecture a file is
// built for alone, or that a //go:build line names, is linux/amd64 (the native build: go test
// and make lint compile and vet it) or vetted by some target.
func TestTargetsCoverEverySystem(t *testing.T) {
	root := moduleRoot(t)
	vetted := map[string]bool{}
	vettedArch := map[string]bool{"amd64": true}
	for _, tg := range targets {
		if tg.vet {
			vetted[tg.goos] = true
			vettedArch[tg.goarch] = true
		}
	}
	arches := []string{"amd64", "arm64", "386", "arm", "riscv64", "ppc64le", "s390x", "loong64"}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		name := strings.TrimSuffix(strings.TrimSuffix(d.Name(), ".go"), "_test")
		if d.IsDir() || !strings.HasSuffix(d.Name(), ".go") {
			return nil
		}
		for _, a := range arches {
			if strings.HasSuffix(name, "_"+a) && !vettedArch[a] {
				t.Errorf("%s is built for %s alone: add a vetted %s target to TestCrossBuild", p, a, a)
			}
		}
		for _, goos := range []string{"linux", "darwin"} {
			if strings.HasSuffix(name, "_"+goos) && !vetted[goos] {
				t.Errorf("%s is built for %s alone and no target vets %s", p, goos, goos)
			}
		}
		if b, err := os.ReadFile(p); err == nil {
			for _, line := range goBuildLine.FindAll(b, -1) {
				for _, w := range archWord.FindAll(line, -1) {
					if a := string(w); !vettedArch[a] {
						t.Errorf("%s has a //go:build line naming %s: add a vetted %s target to TestCrossBuild", p, a, a)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// goBuildLine matches a build constraint line, archWord an architecture named in it.
var (
	goBuildLine = regexp.MustCompile(`(?m)^//go:build .*$`)
	archWord    = regexp.MustCompile(`\b(amd64|arm64|386|arm|riscv64|ppc64le|s390x|loong64)\b`)
)

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
