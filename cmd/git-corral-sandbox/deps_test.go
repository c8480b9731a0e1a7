package main

import (
	"debug/elf"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// helperImports are the only packages outside the standard library that the helper may link:
// what the init and exec steps need (package sandbox/inside) and nothing of the host side. The
// manifest's TOML, the broker (and through it gqlparser, golang.org/x/text and x/net's idna),
// login, home, audit, policy and go-seccomp-bpf's tables cost every sandboxed command their
// initialisers; they were linked until the inside steps had a package of their own.
var helperImports = map[string]bool{
	"github.com/git-corral/git-corral/cmd/git-corral-sandbox": true,
	"github.com/git-corral/git-corral/sandbox/inside":         true,
	"github.com/git-corral/git-corral/internal/inherit":       true,
	"golang.org/x/sys/unix":                                   true,
	"github.com/landlock-lsm/go-landlock/landlock":            true,
	"github.com/landlock-lsm/go-landlock/landlock/syscall":    true,
	"github.com/landlock-lsm/go-landlock/landlock/internal":   true,
	"kernel.org/pub/linux/libs/security/libcap/psx":           true,
}

// helperStdRefused are standard packages the helper must not link: each would add start-up
// work (TLS, HTTP and its x/text tables) or need the host's passwd entry (os/user) inside.
var helperStdRefused = []string{"net/http", "crypto/tls", "os/user", "text/template", "runtime/cgo"}

// TestHelperDependencies pins what git-corral-sandbox links, as the Makefile builds it (without
// cgo): every package outside the standard library is in helperImports, none of
// helperStdRefused is linked, and the binary is static (no dynamic loader to start inside the
// sandbox, none to grant in its Landlock domain).
func TestHelperDependencies(t *testing.T) {
	mk, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^\tCGO_ENABLED=0 \$\(GO\) build .*-o (bin|\$\(BINDIR\))/git-corral-sandbox \./cmd/git-corral-sandbox$`).Match(mk) {
		t.Errorf("the Makefile does not build bin/git-corral-sandbox with CGO_ENABLED=0")
	}
	list := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{else}}std {{.ImportPath}}{{end}}", ".")
	list.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := list.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	std := map[string]bool{}
	for _, p := range strings.Fields(strings.ReplaceAll(string(out), "std ", "std:")) {
		if name, ok := strings.CutPrefix(p, "std:"); ok {
			std[name] = true
		} else if !helperImports[p] {
			t.Errorf("git-corral-sandbox links %s: the inside steps may link only %v; move what needs it to package sandbox (the host side)", p, keys(helperImports))
		}
	}
	for _, p := range helperStdRefused {
		if std[p] {
			t.Errorf("git-corral-sandbox links the standard package %s", p)
		}
	}
	bin := filepath.Join(t.TempDir(), "git-corral-sandbox")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build without cgo: %v\n%s", err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("git-corral-sandbox built without cgo still names a dynamic loader")
		}
	}
}

func keys(m map[string]bool) []string {
	return slices.Sorted(maps.Keys(m))
}
