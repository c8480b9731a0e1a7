package vm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/policy"
)

// fakeLimactl makes, boots and deletes instance directories under $LIMA_HOME the way limactl's
// verbs do, logs each call to $FAKE_DIR/calls, and blocks in the verb named by $FAKE_BLOCK
// (after writing its PID to $FAKE_DIR/<verb>.reached): the phase a test interrupts.
const fakeLimactl = `#!/bin/sh
while [ "${1#--}" != "$1" ]; do shift; done
verb=$1; shift
echo "$verb $*" >>"$FAKE_DIR/calls"
case $verb in
create) mkdir -p "$LIMA_HOME/$2" && cp "$3" "$LIMA_HOME/$2/lima.yaml" || exit 1 ;;
delete) rm -rf "$LIMA_HOME/$2" ;;
esac
if [ "$verb" = start ] && [ -n "${FAKE_CONSOLE:-}" ]; then
	for box; do :; done
	cp "$FAKE_CONSOLE" "$LIMA_HOME/$box/serial.log" || exit 1
	[ -z "${FAKE_FAIL_START:-}" ] || { echo 'did not receive an event with the "running" status' >&2; exit 1; }
fi
if [ "$verb" = "$FAKE_BLOCK" ]; then echo $$ >"$FAKE_DIR/$verb.tmp"; mv "$FAKE_DIR/$verb.tmp" "$FAKE_DIR/$verb.reached"; exec sleep 300; fi
`

const creatorBox = "proj-abc123"

// fakeHome is a $CORRAL_HOME with a base image of the current recipe (empty files), a KVM
// probe already answered for this boot, and the fake limactl; its environment for a creator.
func fakeHome(t *testing.T) (home.Home, []string) {
	t.Helper()
	root := t.TempDir()
	h := home.Home{Dir: filepath.Join(root, "corral")}
	img := filepath.Join(h.Images(), RecipeHash())
	if err := os.MkdirAll(img, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{ImageDisk, ImageKernel, ImageInitrd} {
		writeTestFile(t, filepath.Join(img, f), "")
	}
	writeTestFile(t, filepath.Join(img, imageMeta), fmt.Sprintf(`{"hash":%q,"arch":%q}`, RecipeHash(), HostArch()))
	writeTestFile(t, h.KVMProbe(), fmt.Sprintf(`{"usable":false,"reason":"test","bootId":%q}`, bootID()))
	limactl := filepath.Join(root, "limactl")
	writeTestFile(t, limactl, fakeLimactl)
	if err := os.Chmod(limactl, 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"CORRAL_TEST_HOME=" + h.Dir, "CORRAL_TEST_LIMACTL=" + limactl, "FAKE_DIR=" + root,
		"LIMA_HOME=" + h.LimaHome(), "CORRAL_SYSTEM_IMAGES=" + filepath.Join(root, "none"), "PROJECT_DIR=" + t.TempDir()}
	return h, env
}

func writeTestFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestMain runs the package's tests, or, with CORRAL_TEST_CREATOR=1, is the git corral process
// the creation tests start and interrupt: it creates creatorBox through Ensure.
func TestMain(mt *testing.M) {
	if os.Getenv("CORRAL_TEST_CREATOR") == "1" {
		os.Exit(creator())
	}
	os.Exit(mt.Run())
}

// creator creates creatorBox; exit 3 when Ensure fails.
func creator() int {
	m := &Manager{Limactl: os.Getenv("CORRAL_TEST_LIMACTL"), Home: home.Home{Dir: os.Getenv("CORRAL_TEST_HOME")}}
	spec := BoxSpec{Box: creatorBox, ProjectDir: os.Getenv("PROJECT_DIR"),
		Config: policy.Default(), Create: true, Notice: func(s string) { fmt.Fprintln(os.Stderr, "notice:", s) }}
	if os.Getenv("FAKE_BLOCK") == "confirm" {
		// The user never answers "Create box…?".
		spec.Confirm = func() (bool, error) {
			p := filepath.Join(os.Getenv("FAKE_DIR"), "confirm.reached")
			_ = os.WriteFile(p+".tmp", []byte("none\n"), 0o600) // no fake limactl to end
			_ = os.Rename(p+".tmp", p)
			time.Sleep(time.Hour)
			return false, nil
		}
	}
	_, err := m.Ensure(context.Background(), spec)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 3
	}
	return 0
}

// startCreator starts the creator process, blocking in phase ("" blocks nowhere), and waits
// until it is there; it returns the process and, when it blocks, the fake limactl's PID.
func startCreator(t *testing.T, env []string, phase string) (*exec.Cmd, *bytes.Buffer, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Env = append(os.Environ(), append(env, "CORRAL_TEST_CREATOR=1", "FAKE_BLOCK="+phase)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if phase == "" {
		return cmd, &out, 0
	}
	fakeDir := envValue(env, "FAKE_DIR")
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(filepath.Join(fakeDir, phase+".reached")); err == nil {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err == nil && pid > 1 {
				// The fake limactl is ours: end it whatever the creator does.
				t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
			}
			return cmd, &out, pid
		}
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	t.Fatalf("the creator never reached %s: %s", phase, out.String())
	return nil, nil, 0
}

// waitExit waits for cmd and returns its exit code (-1 when killed by a signal).
func waitExit(t *testing.T, cmd *exec.Cmd, out *bytes.Buffer) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("the creator did not exit within 30 s of its signal: %s", out.String())
	}
	return cmd.ProcessState.ExitCode()
}

// boxLeft reports what is left of creatorBox: its instance directory and its metadata's state
// ("none" when there is no metadata).
func boxLeft(t *testing.T, h home.Home) (bool, string) {
	t.Helper()
	_, err := os.Stat(filepath.Join(h.LimaHome(), creatorBox))
	inst := err == nil
	b, err := os.ReadFile(h.BoxMeta(creatorBox))
	if err != nil {
		return inst, "none"
	}
	var meta Meta
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatalf("metadata %s: %v", b, err)
	}
	if meta.State == "" {
		return inst, "ready"
	}
	return inst, meta.State
}

// envValue is the value of name in env.
func envValue(env []string, name string) string {
	for _, kv := range env {
		if k, v, _ := strings.Cut(kv, "="); k == name {
			return v
		}
	}
	return ""
}

// TestCreateInterrupted: SIGINT, SIGTERM or SIGHUP to the creator while limactl copies the image
// or boots and provisions the new box leaves nothing behind: the creator removes its half box
// and says so. The control: the same creator with nothing interrupting it makes a ready box.
func TestCreateInterrupted(t *testing.T) {
	for _, c := range []struct {
		phase string
		sig   syscall.Signal
	}{
		{"create", syscall.SIGINT}, {"create", syscall.SIGTERM}, {"start", syscall.SIGINT},
		{"start", syscall.SIGTERM}, {"start", syscall.SIGHUP},
	} {
		t.Run(c.phase+"/"+c.sig.String(), func(t *testing.T) {
			h, env := fakeHome(t)
			cmd, out, _ := startCreator(t, env, c.phase)
			if inst, state := boxLeft(t, h); state != StateCreating || (c.phase == "start" && !inst) {
				t.Fatalf("while in %s: instance %v, metadata %q: want the creating marker first", c.phase, inst, state)
			}
			if err := cmd.Process.Signal(c.sig); err != nil {
				t.Fatal(err)
			}
			code := waitExit(t, cmd, out)
			if inst, state := boxLeft(t, h); inst || state != "none" {
				t.Errorf("after %v in %s: instance left %v, metadata %q: want nothing left", c.sig, c.phase, inst, state)
			}
			if code != 3 || !strings.Contains(out.String(), "interrupted by") || !strings.Contains(out.String(), "half-created box was removed") {
				t.Errorf("creator exit %d, output %q: want exit 3 saying the interrupted box was removed", code, out.String())
			}
		})
	}
	t.Run("confirm/interrupt: Ctrl-C at the question ends git corral at once, nothing made", func(t *testing.T) {
		h, env := fakeHome(t)
		cmd, out, _ := startCreator(t, env, "confirm")
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		if code := waitExit(t, cmd, out); code != -1 {
			t.Errorf("creator exit %d, want killed by SIGINT (-1): %s", code, out.String())
		}
		if inst, state := boxLeft(t, h); inst || state != "none" {
			t.Errorf("instance %v, metadata %q: want nothing made", inst, state)
		}
	})
	t.Run("control: not interrupted", func(t *testing.T) {
		h, env := fakeHome(t)
		cmd, out, _ := startCreator(t, env, "")
		if code := waitExit(t, cmd, out); code != 0 {
			t.Fatalf("creator exit %d: %s", code, out.String())
		}
		if inst, state := boxLeft(t, h); !inst || state != "ready" {
			t.Errorf("instance %v, metadata %q: want a ready box", inst, state)
		}
	})
}

// TestCreateKilled: SIGKILL cannot be caught, so the creator leaves a half box marked creating;
// the next command to take the box finds it, says so and removes it, and then creates the box
// afresh (or, not allowed to create, reports no box). The controls: a ready box is started, not
// removed; an instance with no metadata at all is refused with a hint, never booted or removed.
func TestCreateKilled(t *testing.T) {
	for _, phase := range []string{"create", "start"} {
		t.Run(phase, func(t *testing.T) {
			h, env := fakeHome(t)
			for _, kv := range env {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
			cmd, out, _ := startCreator(t, env, phase)
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			waitExit(t, cmd, out)
			if inst, state := boxLeft(t, h); !inst || state != StateCreating {
				t.Fatalf("after SIGKILL in %s: instance %v, metadata %q: want the half box marked creating", phase, inst, state)
			}
			var notices []string
			m := &Manager{Limactl: envValue(env, "CORRAL_TEST_LIMACTL"), Home: h}
			spec := BoxSpec{Box: creatorBox, ProjectDir: envValue(env, "PROJECT_DIR"), Config: policy.Default(),
				Notice: func(s string) { notices = append(notices, s) }}
			if _, err := m.Ensure(context.Background(), spec); !errors.Is(err, ErrNoBox) {
				t.Fatalf("Ensure without Create after the kill = %v, want ErrNoBox", err)
			}
			if inst, state := boxLeft(t, h); inst || state != "none" || len(notices) != 1 || !strings.Contains(notices[0], "half-created") {
				t.Fatalf("instance left %v, metadata %q, notices %q: want the half box removed with a notice", inst, state, notices)
			}
			spec.Create = true
			if _, err := m.Ensure(context.Background(), spec); err != nil {
				t.Fatal(err)
			}
			if inst, state := boxLeft(t, h); !inst || state != "ready" {
				t.Errorf("after creating again: instance %v, metadata %q, want a ready box", inst, state)
			}
			calls := readCalls(t, envValue(env, "FAKE_DIR"))
			m.Ensure(context.Background(), spec) // control: a ready box is started, not removed
			if got := strings.TrimPrefix(readCalls(t, envValue(env, "FAKE_DIR")), calls); got != "start --timeout 20m "+creatorBox+"\n" {
				t.Errorf("Ensure of a ready box ran %q, want only a start", got)
			}
		})
	}
	t.Run("no metadata: refused, not booted", func(t *testing.T) {
		h, env := fakeHome(t)
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			t.Setenv(k, v)
		}
		cmd, out, _ := startCreator(t, env, "")
		if code := waitExit(t, cmd, out); code != 0 {
			t.Fatalf("creator exit %d: %s", code, out.String())
		}
		if err := os.Remove(h.BoxMeta(creatorBox)); err != nil {
			t.Fatal(err)
		}
		calls := readCalls(t, envValue(env, "FAKE_DIR"))
		m := &Manager{Limactl: envValue(env, "CORRAL_TEST_LIMACTL"), Home: h}
		_, err := m.Ensure(context.Background(), BoxSpec{Box: creatorBox, Config: policy.Default(), Create: true})
		if !errors.Is(err, ErrNoMeta) || !strings.Contains(err.Error(), "git corral delete --yes") {
			t.Errorf("Ensure of a box without metadata = %v, want ErrNoMeta with the hint", err)
		}
		if got := strings.TrimPrefix(readCalls(t, envValue(env, "FAKE_DIR")), calls); got != "" {
			t.Errorf("Ensure of a box without metadata ran limactl %q, want nothing", got)
		}
	})
}

func readCalls(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "calls"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return string(b)
}

// TestCreateFailedKeepsConsole: a first boot that fails (here: Lima never saw the box running)
// removes the half box, and the end of its serial console, which goes with the instance, is
// kept in the box's log, escaped (the guest wrote it) and bounded. The control is the creation
// with a console log and no failure: the box is made, and its log has no console block.
func TestCreateFailedKeepsConsole(t *testing.T) {
	h, env := fakeHome(t)
	var console strings.Builder
	console.WriteString(strings.Repeat("x", consoleTailBytes) + "\n") // beyond what is read
	for i := 1; i <= consoleTailLines+5; i++ {
		fmt.Fprintf(&console, "[ %d.000000] line %d\r\n", i, i)
	}
	console.WriteString("hostile \x1b]0;title\x07 \u202e tail " + strings.Repeat("y", consoleLineMax) + "\n")
	path := filepath.Join(t.TempDir(), "serial.log")
	writeTestFile(t, path, console.String())
	cmd, out, _ := startCreator(t, append(env, "FAKE_CONSOLE="+path, "FAKE_FAIL_START=1"), "")
	if code := waitExit(t, cmd, out); code != 3 || !strings.Contains(out.String(), "half-created box was removed") {
		t.Fatalf("creator exit %d: %s; want exit 3, the half box removed", code, out.String())
	}
	if inst, state := boxLeft(t, h); inst || state != "none" {
		t.Errorf("instance %v, metadata %q: want nothing left", inst, state)
	}
	m := &Manager{Home: h}
	b, err := os.ReadFile(m.LogPath(creatorBox))
	if err != nil {
		t.Fatal(err)
	}
	log := string(b)
	var kept []string
	for _, l := range strings.Split(log, "\n") {
		if c, ok := strings.CutPrefix(l, "console: "); ok {
			kept = append(kept, c)
		}
	}
	if len(kept) != consoleTailLines {
		t.Fatalf("%d console lines kept, want the last %d:\n%s", len(kept), consoleTailLines, log)
	}
	if want := "[ 7.000000] line 7"; kept[0] != want {
		t.Errorf("first kept line %q, want %q (the last lines, without their CR)", kept[0], want)
	}
	last := kept[len(kept)-1]
	if strings.ContainsAny(last, "\x1b\x07\u202e\r") || !strings.Contains(last, `\x1b]0;title\x07`) || !strings.HasSuffix(last, " [cut]") {
		t.Errorf("last kept line %q: want its control and bidi characters escaped and the line cut", last)
	}
	if !strings.Contains(log, "the guest console (serial.log)") {
		t.Errorf("no console header in the log:\n%s", log)
	}

	t.Run("control: a boot that succeeds keeps no console", func(t *testing.T) {
		h, env := fakeHome(t)
		cmd, out, _ := startCreator(t, append(env, "FAKE_CONSOLE="+path), "")
		if code := waitExit(t, cmd, out); code != 0 {
			t.Fatalf("creator exit %d: %s", code, out.String())
		}
		b, _ := os.ReadFile((&Manager{Home: h}).LogPath(creatorBox))
		if strings.Contains(string(b), "console: ") {
			t.Errorf("a ready box's log has console lines:\n%s", b)
		}
	})
}
