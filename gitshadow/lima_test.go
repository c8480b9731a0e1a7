package gitshadow

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLimaBox is the real-box demonstration, run by hand or by an end-to-end CI stage:
// a Lima VM (QEMU, TCG when KVM is unusable) mounts the fixture over 9p at its real path; the
// guest script is applied as root in the guest; the guard check passes; then, as the guest's
// unprivileged user, the agent's moves are tried — core.fsmonitor, hooks, a submodule added with
// a hook — and afterwards the host's Verify restores what got through and the host's git runs
// nothing planted.
//
//	GITSHADOW_LIMA_IMAGE=/var/cache/git-corral/images/HASH go test ./gitshadow -run LimaBox -v
//
// It needs root (to create and delete the unprivileged user limactl must run as), limactl on
// PATH or in GITSHADOW_LIMA_PREFIX/bin, and an image directory with debian-12-lima.qcow2, vmlinuz
// and initrd.img (see /work/shared/reference/lima-recipe).
func TestLimaBox(t *testing.T) {
	image := os.Getenv("GITSHADOW_LIMA_IMAGE")
	if image == "" {
		t.Skip("set GITSHADOW_LIMA_IMAGE to an image dir to boot a real box (takes minutes)")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to create the unprivileged user limactl runs as")
	}
	prefix := os.Getenv("GITSHADOW_LIMA_PREFIX")
	if prefix == "" {
		prefix = "/usr/local/lib/git-corral/lima"
	}
	const user = "gitshadow-e2e"
	run(t, "/", "useradd", "-m", "-s", "/bin/sh", user)
	t.Cleanup(func() { exec.Command("userdel", "-r", user).Run() })
	root := fixture(t)
	for _, d := range []string{"work", "wt", "src"} {
		run(t, root, "chown", "-R", user+":", d)
	}
	canary := filepath.Join(root, "canary")
	os.Mkdir(canary, 0o777)
	run(t, root, "chown", user+":", root, canary)
	work := filepath.Join(root, "work")
	plan := discover(t, work)
	script, err := plan.GuestScript()
	if err != nil {
		t.Fatal(err)
	}
	guard, _ := plan.GuardChecks()
	snap, err := TakeSnapshot(context.Background(), plan, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	box := limaBox{t: t, user: user, prefix: prefix, name: "gitshadow-e2e"}
	box.start(image, root)

	out, err := box.shell(work, script, "sudo", "sh", "-s")
	t.Logf("guest script: %v\n%s", err, out)
	if err != nil {
		t.Fatal("the guest script failed in the box")
	}
	if out, err := box.shell(work, guard, "sh", "-s"); err != nil {
		t.Fatalf("guard check in the box: %v\n%s", err, out)
	}
	// One stream, in order: ssh carries the guest's stdout and stderr on two channels, and a
	// stderr line landing inside a "step: status" line hid the step (CI of 66f70fe).
	agent := strings.NewReplacer("$C", canary, "$R", root).Replace(`
set +e
exec 2>&1
export GIT_AUTHOR_NAME=agent GIT_AUTHOR_EMAIL=a@e GIT_COMMITTER_NAME=agent GIT_COMMITTER_EMAIL=a@e
export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=safe.directory GIT_CONFIG_VALUE_0='*'
id
git config core.fsmonitor "touch $C/fsmonitor"; echo "config: $?"
printf '#!/bin/sh\ntouch $C/hook\n' >.git/hooks/pre-commit; echo "hook: $?"
printf '[core]\n\tfsmonitor = touch $C/append\n' >>.git/config; echo "append: $?"
mv .git .git-away; echo "rename .git: $?"
git -C a config core.fsmonitor "touch $C/sub"; echo "submodule config: $?"
printf '#!/bin/sh\ntouch $C/hook-b\n' >.git/modules/a/modules/b/hooks/post-checkout; echo "nested hook: $?"
printf '#!/bin/sh\ntouch $C/hook-case\n' >.GIT/hooks/post-commit; echo "case variant: $?"
git clone -q $R/src/leaf added --separate-git-dir $PWD/.git/modules/added; echo "clone: $?"
git -C added config core.fsmonitor "touch $C/added"; echo "added config: $?"
printf '#!/bin/sh\ntouch $C/added-hook\n' >.git/modules/added/hooks/post-checkout
chmod +x .git/modules/added/hooks/post-checkout; echo "added hook: $?"
git add added; git commit -qm "box adds a submodule"; echo "commit: $?"
`)
	out, _ = box.shell(work, agent, "sh", "-s")
	t.Logf("agent in the box:\n%s", out)
	checkAgentSteps(t, out)
	changes, err := Verify(context.Background(), snap)
	for _, c := range changes {
		t.Logf("host restored: %s %s (restored %v) %s", c.What, c.Path, c.Restored, c.Detail)
	}
	if err != nil {
		t.Errorf("verify: %v", err)
	}
	box.stop()
	e := &nsEnv{root: root, work: work, canary: canary}
	assertHostGitRunsNothing(t, e, filepath.Join(work, "added"))
}

// checkAgentSteps reads the "step: status" lines the agent script prints: the writes the guest
// shadow must stop failed, and the submodule the box added (which only the host can neutralise)
// was really added, so the host's checks had something to find.
func checkAgentSteps(t *testing.T, out string) {
	t.Helper()
	want := map[string]bool{ // true: must fail in the box
		"config": true, "hook": true, "append": true, "rename .git": true, "submodule config": true,
		"nested hook": true, "clone": false, "added config": false, "added hook": false,
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		step, status, ok := strings.Cut(line, ": ")
		mustFail, known := want[step]
		if !ok || !known {
			continue
		}
		seen[step] = true
		if failed := status != "0"; failed != mustFail {
			t.Errorf("agent step %q exited %s in the box", step, status)
		}
	}
	for step := range want {
		if !seen[step] {
			t.Errorf("agent step %q did not report", step)
		}
	}
}

// limaBox drives one Lima instance as an unprivileged user.
type limaBox struct {
	t                  *testing.T
	user, prefix, name string
}

func (b *limaBox) cmd(stdin string, args ...string) *exec.Cmd {
	home := "/home/" + b.user
	full := append([]string{"-u", b.user, "--", "env", "-u", "XDG_RUNTIME_DIR", "HOME=" + home,
		"PATH=" + b.prefix + "/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
		"QEMU_SYSTEM_X86_64=qemu-system-x86_64 -machine q35,vmport=off -accel tcg,thread=multi,tb-size=512",
		"limactl"}, args...)
	c := exec.Command("runuser", full...)
	c.Stdin = strings.NewReader(stdin)
	return c
}

func (b *limaBox) start(image, mount string) {
	tmpl := fmt.Sprintf(`vmType: qemu
os: Linux
arch: x86_64
cpuType:
  x86_64: max
cpus: 2
memory: 2GiB
disk: 10GiB
images:
- location: %q
  arch: x86_64
  kernel:
    location: %q
    cmdline: "root=/dev/vda rw console=ttyS0 net.ifnames=0"
  initrd:
    location: %q
firmware:
  legacyBIOS: true
mountType: 9p
mounts:
- location: %q
  mountPoint: %q
  writable: true
ssh:
  localPort: 0
  loadDotSSHPubKeys: false
containerd:
  system: false
  user: false
video:
  display: none
`, image+"/debian-12-lima.qcow2", image+"/vmlinuz", image+"/initrd.img", mount, mount)
	f := filepath.Join("/home", b.user, b.name+".yaml")
	os.WriteFile(f, []byte(tmpl), 0o644)
	b.t.Cleanup(func() { b.cmd("", "delete", "-f", b.name).Run() })
	t0 := time.Now()
	if out, err := b.cmd("", "--tty=false", "start", "--timeout", "15m", "--name", b.name, f).CombinedOutput(); err != nil {
		b.t.Fatalf("limactl start: %v\n%s", err, gitTail(out))
	}
	b.t.Logf("box booted in %v", time.Since(t0).Round(time.Second))
}

func (b *limaBox) shell(dir, stdin string, argv ...string) (string, error) {
	out, err := b.cmd(stdin, append([]string{"shell", "--workdir", dir, b.name}, argv...)...).CombinedOutput()
	return string(out), err
}

func (b *limaBox) stop() { b.cmd("", "stop", b.name).Run() }

func gitTail(out []byte) string {
	if len(out) > 3000 {
		out = out[len(out)-3000:]
	}
	return string(out)
}
