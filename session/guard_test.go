package session

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/git-corral/git-corral/gitshadow"
	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/project"
)

func gitRepo(t *testing.T) *project.Project {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(dir, "gitconfig"))
	top := filepath.Join(dir, "proj")
	for _, args := range [][]string{{"init", "-q", top}, {"-C", top, "-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-q", "--allow-empty", "-m", "init"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	p, err := project.Find(context.Background(), top)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// snapshotBeforeBoot takes p's git metadata snapshot, as before a box boots, under a fresh
// CORRAL_HOME, and returns that home.
func snapshotBeforeBoot(t *testing.T, p *project.Project) home.Home {
	t.Helper()
	h := home.Home{Dir: filepath.Join(t.TempDir(), "corral")}
	plan, err := gitshadow.Discover(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if err := SnapshotBeforeBoot(context.Background(), h, p.Box, plan); err != nil {
		t.Fatal(err)
	}
	return h
}

type changes struct {
	mu  sync.Mutex
	all []gitshadow.Change
}

func (c *changes) add(ch gitshadow.Change) { c.mu.Lock(); c.all = append(c.all, ch); c.mu.Unlock() }
func (c *changes) n() int                  { c.mu.Lock(); defer c.mu.Unlock(); return len(c.all) }

// TestGuardRestoresBetweenAndDuringSessions: a hook planted while no session ran is removed
// when the next session begins; a config change during a session is restored by the end.
func TestGuardRestoresBetweenAndDuringSessions(t *testing.T) {
	ctx := context.Background()
	p := gitRepo(t)
	h := snapshotBeforeBoot(t, p)
	hook := filepath.Join(p.GitDir, "hooks", "pre-commit")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\ntouch /tmp/pwned\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var seen changes
	g, err := Begin(ctx, Options{Project: p, Home: h, Box: p.Box, Protect: true, OnChange: seen.add})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(hook); !os.IsNotExist(err) {
		t.Fatalf("the hook planted between sessions is still there (%v)", err)
	}
	if seen.n() == 0 {
		t.Fatal("the restore at Begin was not reported")
	}
	if g.Base == "" {
		t.Error("no session base recorded")
	}
	cfg := filepath.Join(p.GitDir, "config")
	orig, _ := os.ReadFile(cfg)
	f, _ := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("[core]\n\tfsmonitor = touch /tmp/pwned\n")
	f.Close()
	time.Sleep(300 * time.Millisecond)
	before := seen.n()
	if err := g.End(ctx, seen.add); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(cfg)
	if string(got) != string(orig) {
		t.Fatalf("config not restored:\n%s", got)
	}
	if seen.n() == before && before < 2 {
		t.Error("the config change was not reported")
	}
}

// TestWatcherRestoresWhileTheSessionRuns: a config change written just after Begin, before the
// watcher has started (WatchDelay), is restored while the session still runs, without End; and
// a session that ends before the watcher starts is still verified at End.
func TestWatcherRestoresWhileTheSessionRuns(t *testing.T) {
	ctx := context.Background()
	p := gitRepo(t)
	h := snapshotBeforeBoot(t, p)
	cfg := filepath.Join(p.GitDir, "config")
	orig, _ := os.ReadFile(cfg)
	plant := func() {
		if err := os.WriteFile(cfg, append(append([]byte{}, orig...), "[core]\n\tfsmonitor = touch /tmp/pwned\n"...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var seen changes
	g, err := Begin(ctx, Options{Project: p, Home: h, Box: p.Box, Protect: true, OnChange: seen.add})
	if err != nil {
		t.Fatal(err)
	}
	plant()
	deadline := time.Now().Add(WatchDelay + 5*time.Second)
	for {
		got, _ := os.ReadFile(cfg)
		if string(got) == string(orig) && seen.n() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the change made before the watcher started was not restored while the session ran")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := g.End(ctx, seen.add); err != nil {
		t.Fatal(err)
	}
	// A session shorter than WatchDelay: End alone restores and reports.
	g, err = Begin(ctx, Options{Project: p, Home: h, Box: p.Box, Protect: true, OnChange: seen.add})
	if err != nil {
		t.Fatal(err)
	}
	plant()
	before := seen.n()
	if err := g.End(ctx, seen.add); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(cfg); string(got) != string(orig) || seen.n() == before {
		t.Fatalf("a short session's change was not restored and reported at End:\n%s", got)
	}
}

// TestEndWaitsForTheSessionBase: the base Begin names (written while the session runs) is on
// disk once End returns, with and without git metadata protection, and BaseError is nil. A
// write that fails is diff's TestRecordStartReadsBeforeWriting.
func TestEndWaitsForTheSessionBase(t *testing.T) {
	p := gitRepo(t)
	h := snapshotBeforeBoot(t, p)
	ctx := context.Background()
	for _, protect := range []bool{true, false} {
		g, err := Begin(ctx, Options{Project: p, Home: h, Box: p.Box, Protect: protect, OnChange: func(gitshadow.Change) {}})
		if err != nil {
			t.Fatal(err)
		}
		if err := g.End(ctx, func(gitshadow.Change) {}); err != nil || g.BaseError() != nil {
			t.Fatalf("protect %v: End %v, BaseError %v", protect, err, g.BaseError())
		}
		if _, err := os.Stat(g.Base); err != nil {
			t.Errorf("protect %v: the session base after End: %v", protect, err)
		}
	}
}
