package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRootRefused: limactl refuses root, so git corral does too, with the fix. No box boots.
func TestRootRefused(t *testing.T) {
	group(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root to show the refusal (CI runs as root)")
	}
	dir := t.TempDir() // owned by root: git refuses a repository of another owner
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	cmd := exec.Command(suite.bin, "-C", dir, "run", "--yes", "--", "true")
	cmd.Env = []string{"CORRAL_HOME=" + t.TempDir(), "HOME=" + t.TempDir(), "PATH=/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("as root: err %v, want exit 1: %s", err, out)
	}
	if !strings.Contains(string(out), "refuses to run as root") || !strings.Contains(string(out), "runuser -u USER") {
		t.Errorf("as root: %s, want the refusal and the fix", out)
	}
}

// TestBoxLifecycle is the vm group: one box, booted once from nothing, then every session
// promise on it, then stop, start again, delete.
func TestBoxLifecycle(t *testing.T) {
	group(t)
	dir := newProject(t, "lifecycle")
	box := boxName(t, dir)
	cleanupBox(t, box)
	// The box is created with git_tokens (a trusted per-project setting), so its guest gets the
	// credential helper; every session then needs the token variable on the host.
	token := randomSecret(t)
	writeProjectConfig(t, box, lifecycleConfig)
	setGroupEnv(t, "CORRAL_E2E_GIT_TOKEN="+token)

	t.Run("no box, no terminal, no --yes: refused", func(t *testing.T) {
		r := corral(t, dir, nil, "run", "--", "true")
		if r.code != 1 || !strings.Contains(r.stderr, "--yes") {
			t.Fatalf("exit %d, stderr %q: want exit 1 naming --yes", r.code, r.stderr)
		}
	})

	// Two concurrent runs from no box: one creates it, the other waits on the lock; one box.
	t.Run("run --yes from no box prints the guest kernel; concurrent runs make one box", func(t *testing.T) {
		var wg sync.WaitGroup
		res := make([]result, 2)
		for i, argv := range [][]string{{"uname", "-a"}, {"uname", "-n"}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if i == 1 {
					time.Sleep(2 * time.Second)
				}
				res[i] = corral(t, dir, nil, append([]string{"run", "--yes", "--"}, argv...)...)
			}()
		}
		wg.Wait()
		for i, r := range res {
			if r.code != 0 {
				t.Fatalf("run %d: exit %d: %s", i, r.code, r.stderr)
			}
		}
		if !strings.HasPrefix(res[0].stdout, "Linux lima-"+box+" ") {
			t.Errorf("uname -a = %q, want the guest's kernel and hostname lima-%s", res[0].stdout, box)
		}
		host, _ := exec.Command("uname", "-n").Output()
		if strings.TrimSpace(res[0].stdout) == "" || strings.Contains(res[0].stdout, strings.TrimSpace(string(host))+" ") {
			t.Errorf("uname -a = %q looks like the host's", res[0].stdout)
		}
		if l := listBox(t, dir, box); len(l) != 1 || l[0].Box != box || l[0].Status != "Running" || l[0].Drift {
			t.Errorf("list = %+v, want exactly box %s running without drift", l, box)
		}
		t.Logf("TIMING create+boot+run %.1fs", res[0].took.Seconds())
	})

	t.Run("exit status passes through", func(t *testing.T) {
		if r := corral(t, dir, nil, "run", "--", "sh", "-c", "exit 7"); r.code != 7 {
			t.Fatalf("exit %d, want 7", r.code)
		}
	})

	t.Run("timeout exits 124", func(t *testing.T) {
		r := corral(t, dir, nil, "run", "--timeout", "2s", "--", "sleep", "60")
		if r.code != 124 || r.took > 30*time.Second || !strings.Contains(r.stderr, "timed out after 2s") {
			t.Fatalf("exit %d after %s, stderr %q: want 124 soon after 2s, saying so", r.code, r.took, r.stderr)
		}
	})

	t.Run("a file the guest writes at the project path appears on the host", func(t *testing.T) {
		r := corral(t, dir, nil, "run", "--", "sh", "-c", `pwd && echo "from $(uname -n)" > written-by-guest.txt`)
		if r.code != 0 || strings.TrimSpace(r.stdout) != dir {
			t.Fatalf("exit %d, pwd %q: want 0 in %s", r.code, r.stdout, dir)
		}
		b, err := os.ReadFile(filepath.Join(dir, "written-by-guest.txt"))
		if err != nil || string(b) != "from lima-"+box+"\n" {
			t.Fatalf("host sees %q, %v", b, err)
		}
	})

	t.Run("a secret reaches the guest command and no argv or log", func(t *testing.T) {
		secret := randomSecret(t)
		// The guest script checks every guest argv with the shell builtin case (no argv of its own
		// holds the value) while the host side scans every host argv.
		script := `echo "seen:$CORRAL_E2E_SECRET"; sleep 3; for f in /proc/[0-9]*/cmdline; do ` +
			`a=$(tr '\0' ' ' < "$f" 2>/dev/null); case "$a" in *"$CORRAL_E2E_SECRET"*) echo "ARGV-LEAK $f";; esac; done`
		// The scan runs from before git corral starts until it ends (argvwatch_test.go).
		scan := watchArgv(t, secret)
		r := corral(t, dir, []string{"CORRAL_E2E_SECRET=" + secret}, "run", "--env", "CORRAL_E2E_SECRET", "--", "sh", "-c", script)
		if r.code != 0 || !strings.Contains(r.stdout, "seen:"+secret) {
			t.Fatalf("exit %d, stdout %q: the guest command did not see the secret", r.code, r.stdout)
		}
		if strings.Contains(r.stdout, "ARGV-LEAK") {
			t.Errorf("the secret is on a guest argv: %s", r.stdout)
		}
		if leaks := scan.stop(t); len(leaks) > 0 {
			t.Errorf("the secret is on a host argv: %v", leaks)
		}
		if hits := grepTree(suite.home, secret); len(hits) > 0 {
			t.Errorf("the secret is in files under CORRAL_HOME (logs): %v", hits)
		}
	})

	secretsOnBox(t, dir, box, token) // secrets_test.go

	t.Run("stop, start again, delete", func(t *testing.T) {
		if r := corral(t, dir, nil, "stop"); r.code != 0 {
			t.Fatalf("stop: exit %d: %s", r.code, r.stderr)
		}
		if l := listBox(t, dir, box); len(l) != 1 || l[0].Status != "Stopped" {
			t.Fatalf("after stop, list = %+v", l)
		}
		start := asUser([]string{suite.bin, "-C", dir, "start", "--no-create"})
		start.Stdin = strings.NewReader("echo started-$((6*7)) > started.txt\n")
		if r := runCmd(t, start, "start --no-create"); r.code != 0 {
			t.Fatalf("start: exit %d: %s", r.code, r.stderr)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "started.txt")); string(b) != "started-42\n" {
			t.Errorf("the login shell of start did not run its input: %q", b)
		}
		if r := corral(t, dir, nil, "delete"); r.code != 1 || !strings.Contains(r.stderr, "--yes") {
			t.Errorf("delete without a terminal or --yes: exit %d %q, want a refusal naming --yes", r.code, r.stderr)
		}
		if r := corral(t, dir, nil, "delete", "--yes"); r.code != 0 {
			t.Fatalf("delete --yes: exit %d: %s", r.code, r.stderr)
		}
		if l := listBox(t, dir, box); len(l) != 0 {
			t.Fatalf("after delete, list = %+v", l)
		}
	})
}

func randomSecret(t *testing.T) string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "corral-secret-" + hex.EncodeToString(b)
}

// grepTree returns the regular files under root (instance disks excluded) that contain s.
func grepTree(root, s string) []string {
	var hits []string
	_ = filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil || !fi.Mode().IsRegular() || fi.Size() > 64<<20 {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), s) {
			hits = append(hits, p)
		}
		return nil
	})
	return hits
}
