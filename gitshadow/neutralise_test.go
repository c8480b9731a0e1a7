package gitshadow

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSanitizeConfig feeds hostile configs of a git dir that appeared mid-session through the
// allow-list and checks, with git itself reading the result, that only safe keys survive.
func TestSanitizeConfig(t *testing.T) {
	hostile := map[string]string{
		"executing keys": "[core]\n\tfsmonitor = touch /tmp/x\n\thooksPath = /tmp\n\tpager = sh\n\tsshCommand = sh\n\teditor = sh\n" +
			"[filter \"x\"]\n\tclean = sh\n\tsmudge = sh\n\tprocess = sh\n[diff \"x\"]\n\tcommand = sh\n\ttextconv = sh\n" +
			"[merge \"x\"]\n\tdriver = sh\n[credential]\n\thelper = !sh\n[alias]\n\tst = !sh\n",
		"includes":           "[include]\n\tpath = /tmp/evil\n[includeIf \"gitdir:/\"]\n\tpath = /tmp/evil\n",
		"case variants":      "[CORE]\n\tFSMONITOR = sh\n[Core]\n\tHooksPath = /tmp\n",
		"remote helper urls": "[remote \"origin\"]\n\turl = ext::sh -c touch% /tmp/x\n\tpushurl = -oProxyCommand=sh\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n",
		"quoted subsection":  "[remote \"a\\\"b\"]\n\turl = https://example.com/x.git\n",
		"continuation":       "[core]\n\tbare = false\\\n\tfsmonitor = sh\n",
		"worktree extension": "[extensions]\n\tworktreeConfig = true\n\tobjectFormat = sha1\n[core]\n\trepositoryformatversion = 1\n",
	}
	allowed := func(key string) bool {
		parts := strings.Split(key, ".")
		sec, name := parts[0], parts[len(parts)-1]
		if len(parts) > 2 {
			sec += ".*"
		}
		return safeKeys[sec][name]
	}
	for name, cfg := range hostile {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "config")
			os.WriteFile(path, []byte(cfg), 0o644)
			s := &Snapshot{StateDir: dir}
			os.Mkdir(filepath.Join(dir, "quarantine"), 0o700)
			if _, _, _, err := s.sanitizeConfig(path); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command("git", "config", "-f", path, "--list").CombinedOutput()
			if err != nil {
				t.Fatalf("git cannot read the sanitised config: %v\n%s", err, out)
			}
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				key, value, _ := strings.Cut(line, "=")
				if line != "" && (!allowed(key) || strings.Contains(value, "::") || strings.HasPrefix(value, "-")) {
					t.Errorf("sanitised config keeps %q", line)
				}
			}
		})
	}
}

// TestWatchNeutralisesNewSubmodule adds a submodule git dir with a hook and an fsmonitor while
// Watch runs (as a box would mid-session) and checks the host neutralises it at once.
func TestWatchNeutralisesNewSubmodule(t *testing.T) {
	root := fixture(t)
	work := filepath.Join(root, "work")
	reported, stop := watchOnEvents(t, work)
	gd := filepath.Join(work, ".git/modules/late")
	run(t, work, "git", "clone", "-q", "--separate-git-dir", gd, filepath.Join(root, "src/leaf"), "late")
	run(t, work, "git", "-C", "late", "config", "core.fsmonitor", "touch "+filepath.Join(root, "canary-late"))
	hook := filepath.Join(gd, "hooks/post-checkout")
	os.WriteFile(hook, []byte("#!/bin/sh\ntouch "+filepath.Join(root, "canary-hook")+"\n"), 0o755)
	deadline := time.Now().Add(20 * time.Second) // generous: CI shares its cores with a VM
	for time.Now().Before(deadline) {
		cfg, _ := os.ReadFile(filepath.Join(gd, "config"))
		if _, err := os.Lstat(hook); os.IsNotExist(err) && !strings.Contains(string(cfg), "fsmonitor") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	if _, err := os.Lstat(hook); err == nil {
		t.Errorf("the new submodule's hook is still there")
	}
	if cfg, _ := os.ReadFile(filepath.Join(gd, "config")); strings.Contains(string(cfg), "fsmonitor") {
		t.Errorf("the new submodule's config still sets fsmonitor:\n%s", cfg)
	}
	run(t, filepath.Join(work, "late"), "git", "status")
	run(t, filepath.Join(work, "late"), "git", "checkout", "-q", "-b", "x")
	for _, c := range []string{"canary-late", "canary-hook"} {
		if _, err := os.Stat(filepath.Join(root, c)); err == nil {
			t.Errorf("host git ran %s", c)
		}
	}
	if len(reported()) == 0 {
		t.Errorf("Watch reported nothing")
	}
}

// watchOnEvents snapshots work and runs Watch on it with WatchInterval an hour, so that only
// events drive its checks. It returns what Watch has reported so far, and stop, which ends
// Watch and waits for it (also run at the test's end).
func watchOnEvents(t *testing.T, work string) (reported func() []Change, stop func()) {
	t.Helper()
	snap, err := TakeSnapshot(context.Background(), discover(t, work), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	saved := WatchInterval
	WatchInterval = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var got []Change
	done := make(chan error, 1)
	go func() { done <- Watch(ctx, snap, func(c Change) { mu.Lock(); got = append(got, c); mu.Unlock() }) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
			WatchInterval = saved
		})
	}
	t.Cleanup(stop)
	time.Sleep(100 * time.Millisecond) // the watches are in place
	return func() []Change {
		mu.Lock()
		defer mu.Unlock()
		return append([]Change(nil), got...)
	}, stop
}

// TestLoadSnapshotVerifies checks that a snapshot saved by one process can be verified (and
// restores) after a crash, from its state dir alone.
func TestLoadSnapshotVerifies(t *testing.T) {
	root := fixture(t)
	work := filepath.Join(root, "work")
	state := t.TempDir()
	if _, err := TakeSnapshot(context.Background(), discover(t, work), state); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(work, ".git/modules/a/modules/b/config")
	before, _ := os.ReadFile(cfg)
	os.WriteFile(cfg, append(before, "[core]\n\tfsmonitor = sh\n"...), 0o644)
	snap, err := LoadSnapshot(context.Background(), state)
	if err != nil {
		t.Fatal(err)
	}
	changes, err := Verify(context.Background(), snap)
	if err != nil || len(changes) != 1 || changes[0].Path != cfg || !changes[0].Restored {
		t.Fatalf("Verify after LoadSnapshot: %v %+v", err, changes)
	}
	if after, _ := os.ReadFile(cfg); string(after) != string(before) {
		t.Errorf("config not restored byte for byte")
	}
	q, _ := os.ReadFile(changes[0].Quarantine)
	if !strings.Contains(string(q), "fsmonitor") {
		t.Errorf("the box's version was not kept in quarantine: %q", q)
	}
}

// TestAdoptRacingWriter: a box still writing a new git dir (git clone, git submodule add) can
// write between the host neutralising it and adopting it into the snapshot. Such writes (a hook,
// core.fsmonitor appended to config, a config.worktree, info/ swapped for a symlink) must be
// undone in the same check, not
// adopted as the host's own state. Verify is used, so no watcher event can help.
func TestAdoptRacingWriter(t *testing.T) {
	root := fixture(t)
	work := filepath.Join(root, "work")
	snap, err := TakeSnapshot(context.Background(), discover(t, work), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	gd := filepath.Join(work, ".git/modules/racy")
	run(t, work, "git", "init", "-q", "--bare", gd)
	hook := filepath.Join(gd, "hooks", "post-checkout")
	cfg := filepath.Join(gd, "config")
	wtCfg := filepath.Join(gd, "config.worktree")
	betweenNeutraliseAndAdopt = func(dir string) {
		if dir != gd {
			return
		}
		os.WriteFile(hook, []byte("#!/bin/sh\ntouch /tmp/racy\n"), 0o755)
		f, _ := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
		f.WriteString("[core]\n\tfsmonitor = touch /tmp/racy\n")
		f.Close()
		os.WriteFile(wtCfg, []byte("[core]\n\tfsmonitor = sh\n"), 0o644)
		os.Rename(filepath.Join(gd, "info"), filepath.Join(gd, "info.old"))
		os.Symlink(filepath.Join(gd, "info.old"), filepath.Join(gd, "info"))
	}
	t.Cleanup(func() { betweenNeutraliseAndAdopt = nil })
	changes, err := Verify(context.Background(), snap)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{hook, wtCfg} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s, written while the git dir was being neutralised, was adopted", p)
		}
	}
	if fi, err := os.Lstat(filepath.Join(gd, "info")); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		t.Error("info/, swapped for a symlink while the git dir was being neutralised, was adopted")
	}
	if data, _ := os.ReadFile(cfg); strings.Contains(string(data), "fsmonitor") {
		t.Errorf("config keeps what the box appended while it was being neutralised:\n%s", data)
	}
	reported := map[string]bool{}
	for _, c := range changes {
		reported[c.Path] = reported[c.Path] || c.Restored
	}
	for _, p := range []string{hook, cfg, wtCfg} {
		if !reported[p] {
			t.Errorf("%s: not reported as restored: %+v", p, changes)
		}
	}
	if again, err := Verify(context.Background(), snap); err != nil || len(again) != 0 {
		t.Errorf("a second Verify still finds %+v (%v)", again, err)
	}
}

// TestNewGitDirSymlinkedHooks: a git dir the box adds may have hooks/ (or info/) as a symlink to
// a directory the box keeps writing, in the work tree. The host must quarantine the symlink
// itself: adopting it would let a hook written there later run on the host, and quarantining
// "through" it would move files out of whatever it points at.
func TestNewGitDirSymlinkedHooks(t *testing.T) {
	root := fixture(t)
	work := filepath.Join(root, "work")
	snap, err := TakeSnapshot(context.Background(), discover(t, work), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	evil := filepath.Join(work, "evilhooks")
	os.Mkdir(evil, 0o755)
	keep := filepath.Join(evil, "keep-me")
	os.WriteFile(keep, []byte("the box's or the user's file, not git metadata\n"), 0o644)
	gd := filepath.Join(work, ".git/modules/linked")
	run(t, work, "git", "init", "-q", "--bare", gd)
	for _, d := range []string{"hooks", "info"} {
		os.RemoveAll(filepath.Join(gd, d))
		if err := os.Symlink(evil, filepath.Join(gd, d)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Verify(context.Background(), snap); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(evil, "pre-commit"), []byte("#!/bin/sh\ntouch "+filepath.Join(root, "canary")+"\n"), 0o755)
	if _, err := Verify(context.Background(), snap); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"hooks", "info"} {
		if fi, err := os.Lstat(filepath.Join(gd, d)); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			t.Errorf("%s of the new git dir is still a symlink to a directory the box writes", d)
		}
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("neutralising moved a file out of the symlink's target: %v", err)
	}
	cmd := exec.Command("git", "--git-dir="+gd, "--work-tree="+t.TempDir(), "-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-q", "--allow-empty", "-m", "x")
	cmd.Run()
	if _, err := os.Stat(filepath.Join(root, "canary")); err == nil {
		t.Error("host git ran a hook through the new git dir's symlinked hooks/")
	}
}

// TestAddedGitDirsRemovedOrFinished: a git dir the box adds and removes again (a failed git
// worktree add cleans up) is forgotten, not "restored" into existence, and the session's check
// passes; a worktree git dir adopted before git wrote its commondir and gitdir keeps them, so the
// box's own git worktree add works; a commondir pointing anywhere else is still removed.
func TestAddedGitDirsRemovedOrFinished(t *testing.T) {
	root := fixture(t)
	work := filepath.Join(root, "work")
	snap, err := TakeSnapshot(context.Background(), discover(t, work), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	gd := filepath.Join(work, ".git/modules/gone")
	run(t, work, "git", "init", "-q", "--bare", gd)
	if _, err := Verify(context.Background(), snap); err != nil {
		t.Fatalf("adopting a new git dir: %v", err)
	}
	if !snap.Adopted[gd] {
		t.Fatalf("%s was not adopted", gd)
	}
	os.RemoveAll(gd)
	changes, err := Verify(context.Background(), snap)
	if err != nil {
		t.Fatalf("a git dir the box added and removed again fails the check: %v (%+v)", err, changes)
	}
	if _, err := os.Lstat(gd); err == nil {
		t.Errorf("%s was re-created", gd)
	}
	if snap.GitDirs[gd] || len(changes) != 1 || changes[0].What != "added and removed again" {
		t.Errorf("not forgotten: gitDirs %v, changes %+v", snap.GitDirs[gd], changes)
	}

	// A linked worktree's git dir as git leaves it for a moment: HEAD first, the rest later.
	wt := filepath.Join(work, ".git/worktrees/late")
	os.MkdirAll(wt, 0o755)
	os.WriteFile(filepath.Join(wt, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	if _, err := Verify(context.Background(), snap); err != nil {
		t.Fatal(err)
	}
	if !snap.Adopted[wt] {
		t.Skipf("this layout is not taken for a git dir yet (%s): nothing to check", wt)
	}
	// git opens each file and writes it after: a check may see it empty first.
	for _, f := range []string{"commondir", "gitdir"} {
		os.WriteFile(filepath.Join(wt, f), nil, 0o644)
	}
	if _, err := Verify(context.Background(), snap); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"commondir", "gitdir"} {
		if _, err := os.Lstat(filepath.Join(wt, f)); err != nil {
			t.Errorf("the worktree's %s was removed while git was still writing it", f)
		}
	}
	os.WriteFile(filepath.Join(wt, "commondir"), []byte("../..\n"), 0o644)
	os.WriteFile(filepath.Join(wt, "gitdir"), []byte(filepath.Join(work, "late/.git")+"\n"), 0o644)
	if _, err := Verify(context.Background(), snap); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"commondir", "gitdir"} {
		if _, err := os.Lstat(filepath.Join(wt, f)); err != nil {
			t.Errorf("the worktree's %s git wrote after adoption was removed", f)
		}
	}
	wt2 := filepath.Join(work, ".git/worktrees/evil")
	os.MkdirAll(wt2, 0o755)
	os.WriteFile(filepath.Join(wt2, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	Verify(context.Background(), snap)
	os.WriteFile(filepath.Join(wt2, "commondir"), []byte(root+"\n"), 0o644)
	Verify(context.Background(), snap)
	if _, err := os.Lstat(filepath.Join(wt2, "commondir")); err == nil {
		t.Errorf("a commondir pointing outside the common dir was kept")
	}
}

// TestWorktreeAdoptedWhileGitWritesIt: a linked worktree's git dir first seen with commondir
// and gitdir opened but still empty (git writes them right after) is adopted with them pending:
// what git then writes ("../..", the gitdir path) stays, and a commondir pointing elsewhere is
// still restored away. CI once saw the box's own `git worktree add` fail when an empty
// commondir was quarantined at adoption.
func TestWorktreeAdoptedWhileGitWritesIt(t *testing.T) {
	root := fixture(t)
	work := filepath.Join(root, "work")
	snap, err := TakeSnapshot(context.Background(), discover(t, work), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, commondir string
		keep            bool
	}{
		{"early", "../..\n", true},
		{"early-evil", "../../../elsewhere/.git\n", false},
	} {
		wt := filepath.Join(work, ".git/worktrees", tc.name)
		os.MkdirAll(wt, 0o755)
		os.WriteFile(filepath.Join(wt, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
		for _, f := range []string{"commondir", "gitdir"} {
			os.WriteFile(filepath.Join(wt, f), nil, 0o644)
		}
		if _, err := Verify(context.Background(), snap); err != nil {
			t.Fatal(err)
		}
		if !snap.Adopted[wt] {
			t.Skipf("this layout is not taken for a git dir yet (%s): nothing to check", wt)
		}
		for _, f := range []string{"commondir", "gitdir"} {
			if _, err := os.Lstat(filepath.Join(wt, f)); err != nil {
				t.Fatalf("%s: the empty %s was quarantined at adoption", tc.name, f)
			}
		}
		os.WriteFile(filepath.Join(wt, "commondir"), []byte(tc.commondir), 0o644)
		os.WriteFile(filepath.Join(wt, "gitdir"), []byte(filepath.Join(work, tc.name, ".git")+"\n"), 0o644)
		if _, err := Verify(context.Background(), snap); err != nil && tc.keep {
			t.Fatal(err)
		}
		_, err := os.Lstat(filepath.Join(wt, "commondir"))
		if kept := err == nil; kept != tc.keep {
			t.Errorf("%s: commondir %q kept %v, want %v", tc.name, tc.commondir, kept, tc.keep)
		}
		if _, err := os.Lstat(filepath.Join(wt, "gitdir")); err != nil {
			t.Errorf("%s: the gitdir git wrote was removed", tc.name)
		}
	}
}
