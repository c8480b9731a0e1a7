package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-corral/git-corral/audit"
)

// boxStatus is the box's state as limactl itself reports it: no git corral command runs, so
// nothing but the box's own watcher can have stopped it.
func boxStatus(t *testing.T, box string) string {
	t.Helper()
	out, err := limactl("list", "--format", "{{.Status}}", box)
	if err != nil {
		t.Fatalf("limactl list %s: %v: %s", box, err, out)
	}
	return strings.TrimSpace(out)
}

// waitStatus waits up to bound for the box to reach want and returns how long it took.
func waitStatus(t *testing.T, box, want string, bound time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < bound {
		if boxStatus(t, box) == want {
			return time.Since(start)
		}
		time.Sleep(2 * time.Second)
	}
	t.Fatalf("box %s is %s, not %s, %v after its last session ended with no other command run", box, boxStatus(t, box), want, bound)
	return 0
}

// commitIdentity makes an empty commit in a repository of the box's own disk (away from the
// shadowed project mount) and returns "author <email>|committer <email>".
func commitIdentity(t *testing.T, dir string) string {
	t.Helper()
	r := corral(t, dir, nil, "run", "--yes", "--", "sh", "-c",
		`rm -rf /tmp/id && git init -q /tmp/id && git -C /tmp/id commit --allow-empty -qm in-box && git -C /tmp/id log -1 --format='%an <%ae>|%cn <%ce>'`)
	if r.code != 0 {
		t.Fatalf("commit in the box: exit %d: %s", r.code, r.stderr)
	}
	return strings.TrimSpace(r.stdout)
}

// TestKeysLifecycle is the lifecycle keys on two boxes, each new from the golden base:
// git_identity = "corral" puts the corral identity on a commit made in the box (control: "host"
// puts the host's user.name); stop_on_exit stops the box after `run` returns with no other git
// corral command run (control: without it the box is still running right after the run);
// idle_stop = "20s" stops the box by itself after 20 s without a session, and each stop is in the
// audit log. (The second box is a new one rather than the first started again: a restart boots
// from disk, a minute or more under emulation, and a restart is not what either key is about.)
func TestKeysLifecycle(t *testing.T) {
	group(t)
	project := func(name string) (dir, box, config string) {
		dir = newProject(t, name)
		box = boxName(t, dir)
		cleanupBox(t, box)
		gitAsUser(t, dir, "config", "user.name", "Host Person")
		gitAsUser(t, dir, "config", "user.email", "host@example.invalid")
		return dir, box, filepath.Join(dir, ".corral.toml")
	}
	dir, box, config := project("keys-lifecycle")

	t.Run("git_identity corral on a commit in the box, then stop_on_exit stops the box", func(t *testing.T) {
		writeFile(t, config, "git_identity = \"corral\"\nstop_on_exit = true\n", 0o644)
		began := time.Now()
		if got, want := commitIdentity(t, dir), "git corral <corral@git-corral.invalid>|git corral <corral@git-corral.invalid>"; got != want {
			t.Errorf("commit in the box carries %q, want %q", got, want)
		}
		took := waitStatus(t, box, "Stopped", 3*time.Minute)
		t.Logf("stopped %v after the run returned", took)
		auditStop(t, box, "stop_on_exit", began)
	})
	t.Run("git_identity host (control); idle_stop stops the box by itself, stop_on_exit off keeps it running at first", func(t *testing.T) {
		dir, box, config := project("keys-lifecycle-idle")
		writeFile(t, config, "git_identity = \"host\"\nidle_stop = \"20s\"\n", 0o644)
		if got, want := commitIdentity(t, dir), "Host Person <host@example.invalid>|Host Person <host@example.invalid>"; got != want {
			t.Errorf("commit in the box carries %q, want the host's %q", got, want)
		}
		ended := time.Now()
		if st := boxStatus(t, box); st != "Running" {
			t.Fatalf("box is %s right after the run: without stop_on_exit and before idle_stop it must still run", st)
		}
		waitStatus(t, box, "Stopped", 4*time.Minute)
		if d := time.Since(ended); d < 20*time.Second {
			t.Errorf("box stopped %v after its session, before idle_stop 20s", d)
		}
		auditStop(t, box, "idle_stop 20s", ended)
	})
}

// auditStop fails unless the sessions log gets, within auditBound of the box being seen
// stopped, a stop of box recorded at or after since whose detail names reason. The watcher
// writes that record when `limactl stop` returns, and limactl returns only after the box
// reads as stopped (it then polls the instance's state every 500 ms and reconciles Lima's
// networks): the record legitimately lands a moment after the stop the test saw.
func auditStop(t *testing.T, box, reason string, since time.Time) {
	t.Helper()
	const auditBound = 60 * time.Second
	seen := time.Now()
	for {
		res, err := audit.Read(filepath.Join(suite.home, "logs", "sessions.jsonl"), audit.Filter{Box: box})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Records {
			if r.Event == audit.EventStop && strings.Contains(r.Detail, reason) && !r.Time.Before(since) {
				t.Logf("audited %v after the stop was seen: %s", time.Since(seen).Round(100*time.Millisecond), r.Detail)
				return
			}
		}
		if time.Since(seen) > auditBound {
			t.Errorf("no audited stop of %s by %q since %s in the sessions log %v after the box was seen stopped", box, reason, since.Format(time.RFC3339), auditBound)
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}
