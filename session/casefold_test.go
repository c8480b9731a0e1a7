package session

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-corral/git-corral/audit"
	"github.com/git-corral/git-corral/gitshadow"
	"github.com/git-corral/git-corral/internal/casefs/casefstest"
	"github.com/git-corral/git-corral/project"
)

// lockedBuffer is the terminal the watcher goroutine reports on.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// repoIn makes a repository in dir with fixed dates and a hermetic git environment.
func repoIn(t *testing.T, dir string) *project.Project {
	t.Helper()
	cfg := t.TempDir()
	t.Setenv("HOME", cfg)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(cfg, "gitconfig"))
	for _, kv := range []string{"GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"} {
		t.Setenv(kv, "2026-01-01T00:00:00Z")
	}
	top := filepath.Join(dir, "proj")
	for _, args := range [][]string{{"init", "-q", "-b", "main", top}, {"-C", top, "-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-q", "--allow-empty", "-m", "init"}} {
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

// shadowRestores returns the detail of every shadow-restore record in the audit log.
func shadowRestores(t *testing.T, path string) []string {
	t.Helper()
	res, err := audit.Read(path, audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range res.Records {
		if r.Event == audit.EventShadowRestore {
			out = append(out, r.Detail)
		}
	}
	return out
}

// TestSessionCatchesCaseVariantWrites is the host-side guard of a whole session on a
// case-insensitive filesystem (internal/casefs, a case-folding FUSE loopback, which runs where
// the kernel has no case-folding ext4): a box writing the real git metadata under other
// spellings (.git/CONFIG, .GIT/hooks/pre-commit, .Git/Hooks/post-checkout,
// .git/hoo\u212As/pre-push) has each write restored by the watcher within a second (the
// periodic backstop is off, so only inotify events can trigger it), reported on the terminal
// and recorded in the audit log; afterwards config and hooks are byte-identical and the host's
// git runs nothing planted.
func TestSessionCatchesCaseVariantWrites(t *testing.T) {
	ctx := context.Background()
	dir := casefstest.Dir(t)
	noCollectionWhileServingFUSE(t)
	p := repoIn(t, dir)
	saved := gitshadow.WatchInterval
	gitshadow.WatchInterval = time.Hour
	t.Cleanup(func() { gitshadow.WatchInterval = saved })
	h := snapshotBeforeBoot(t, p)
	cfg := filepath.Join(p.GitDir, "config")
	origCfg, _ := os.ReadFile(cfg)
	var term lockedBuffer
	lg := &audit.Log{Path: h.SessionsLog()}
	report := Report(&term, lg, audit.Record{Box: p.Box})
	g, err := Begin(ctx, Options{Project: p, Home: h, Box: p.Box, Protect: true, OnChange: report})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // let the watches be added
	canary := t.TempDir()
	writes := []struct{ spelling, canonical, data string }{
		{".git/CONFIG", ".git/config", "[core]\n\tfsmonitor = touch \"$C/fsmonitor\"\n"},
		{".GIT/hooks/pre-commit", ".git/hooks/pre-commit", "#!/bin/sh\ntouch \"$C/hook\"\n"},
		{".Git/Hooks/post-checkout", ".git/hooks/post-checkout", "#!/bin/sh\ntouch \"$C/checkout\"\n"},
		{".git/hoo\u212As/pre-push", ".git/hooks/pre-push", "#!/bin/sh\ntouch \"$C/push\"\n"}, // KELVIN SIGN
	}
	for _, w := range writes {
		before := len(shadowRestores(t, lg.Path))
		f, err := os.OpenFile(filepath.Join(p.TopLevel, w.spelling), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o755)
		if err != nil {
			t.Fatalf("%s: %v", w.spelling, err)
		}
		f.WriteString(w.data)
		f.Close()
		want := filepath.Join(p.TopLevel, w.canonical)
		deadline := time.Now().Add(time.Second)
		for !recorded(shadowRestores(t, lg.Path)[before:], want) {
			if time.Now().After(deadline) {
				t.Fatalf("a write to %s was not restored and audited within a second", w.spelling)
			}
			time.Sleep(10 * time.Millisecond)
		}
		// The restore raises events of its own; let the check they trigger pass, so that it
		// cannot be what catches the next write.
		time.Sleep(200 * time.Millisecond)
	}
	if err := g.End(ctx, report); err != nil {
		t.Fatalf("end: %v", err)
	}
	if got, _ := os.ReadFile(cfg); !bytes.Equal(got, origCfg) {
		t.Errorf("config not restored:\n%s", got)
	}
	for _, w := range writes {
		want := filepath.Join(p.TopLevel, w.canonical)
		if !strings.Contains(term.String(), "restored: "+want) {
			t.Errorf("the terminal does not report %s restored:\n%s", want, term.String())
		}
		if strings.Contains(w.canonical, "hooks/") {
			if _, err := os.Lstat(want); !os.IsNotExist(err) {
				t.Errorf("%s is still there (%v)", want, err)
			}
		}
	}
	hostGitRunsNothing(t, p.TopLevel, canary)
}

// noCollectionWhileServingFUSE turns the garbage collector off for a test whose FUSE server
// (internal/casefs) runs in this process while git is started with its working directory on the
// mount (project.Find, the session base's git ls-files). Go starts a program with vfork: the
// forking thread keeps its P until the child calls exec, so a child whose chdir waits on the
// FUSE server while a collection waits to stop that thread deadlocks the whole process. This
// test hung so in about one run of six, before the stat cache as after it.
func noCollectionWhileServingFUSE(t *testing.T) {
	old := debug.SetGCPercent(-1)
	t.Cleanup(func() { debug.SetGCPercent(old) })
}

// recorded reports whether an audit detail says path was restored.
func recorded(details []string, path string) bool {
	for _, d := range details {
		if strings.Contains(d, ", restored: "+path) {
			return true
		}
	}
	return false
}

// hostGitRunsNothing runs the host's git where planted hooks and config would fire.
func hostGitRunsNothing(t *testing.T, work, canary string) {
	t.Helper()
	for _, argv := range [][]string{{"status"}, {"commit", "-q", "--allow-empty", "-m", "host"}, {"checkout", "-q", "-b", "b2"}} {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t.invalid"}, argv...)...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "C="+canary)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("git %v: %v %s", argv, err, out)
		}
	}
	ents, _ := os.ReadDir(canary)
	for _, e := range ents {
		t.Errorf("host git ran a command planted under another spelling: %s", e.Name())
	}
}
