package gitshadow

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The tests in this file apply the rendered guest script inside a private mount namespace
// (unshare -m) over the real fixture repositories, then attack them as an unprivileged user —
// what a box user is — and check from the host that nothing changed, or that the host-side
// verifier restored and reported it. They need root, as CI has.

// attackUID is the unprivileged user the attacks run as (nobody).
const attackUID = "65534"

// outcome is what must happen to an attack.
type outcome int

const (
	// blocked: the guest shadow makes the write fail; the host finds nothing to restore.
	blocked outcome = iota
	// restored: the guest cannot stop it (the path did not exist, or it is a new git dir); the
	// host-side verifier must find it, undo it and report it.
	restored
)

// attack is one write an agent in the box tries; sh runs as the box user in the work tree with
// $R (fixture root) and $C (canary dir) set. Every command it plants touches a file in $C.
type attack struct {
	name string
	sh   string
	want outcome
}

// executingKeys are THREATS.md §2's config keys that make the host run something.
var executingKeys = []string{"core.fsmonitor", "core.hooksPath", "core.pager", "core.sshCommand",
	"core.editor", "filter.x.clean", "filter.x.smudge", "filter.x.process", "diff.x.command",
	"diff.x.textconv", "merge.x.driver", "credential.helper", "alias.st", "include.path",
	"includeIf.gitdir:/.path", "core.askPass", "sequence.editor", "gpg.program"}

// attacks is the table of write attack classes of THREATS.md §2.
func attacks() []attack {
	var as []attack
	for _, k := range executingKeys {
		as = append(as,
			attack{"config " + k, fmt.Sprintf(`git config %s "!touch $C/%s"`, k, k), blocked},
			attack{"submodule config " + k, fmt.Sprintf(`git -C a/b config %s "!touch $C/%s"`, k, k), blocked},
		)
	}
	hook := `printf '#!/bin/sh\ntouch %s/hook\n' "$C" >`
	return append(as, []attack{
		{"config appended", `printf '[core]\n\tfsmonitor = touch %s/append\n' "$C" >>.git/config`, blocked},
		{"config renamed over", `cp .git/config .git/c.new && echo "[core]fsmonitor=x" >>.git/c.new && mv .git/c.new .git/config`, blocked},
		{"config removed", `rm -f .git/config`, blocked},
		{"config symlinked", `ln -sf /tmp/evil .git/config`, blocked},
		{"config.worktree", `git config --worktree core.fsmonitor "touch $C/wtcfg"`, blocked},
		{"linked worktree config.worktree", `echo "[core]fsmonitor=x" >>.git/worktrees/wt/config.worktree`, blocked},
		{"hook written", hook + `.git/hooks/pre-commit && chmod +x .git/hooks/pre-commit`, blocked},
		{"hooks dir renamed", `mv .git/hooks .git/hooks.old`, blocked},
		{"hook at depth 2", hook + `.git/modules/a/modules/b/hooks/post-checkout`, blocked},
		{"hook in plain submodule", hook + `plain/.git/hooks/pre-commit`, blocked},
		{"plain submodule config", `git -C plain config core.fsmonitor "touch $C/plain"`, blocked},
		{"core.hooksPath target", hook + `a/.husky/pre-commit`, blocked},
		{"include.path target", `printf '[core]\n\tfsmonitor = touch %s/inc\n' "$C" >>project.gitconfig`, blocked},
		{"worktree commondir", `echo /tmp >.git/worktrees/wt/commondir`, blocked},
		{"worktree gitdir", `echo /tmp/x >.git/worktrees/wt/gitdir`, blocked},
		{"info/attributes", `echo '* filter=x' >.git/info/attributes`, blocked},
		{".git renamed", `mv .git .git-away && mkdir .git`, blocked},
		{"module renamed", `mv .git/modules/a .git/modules/a-away`, blocked},
		{"modules dir renamed", `mv .git/modules .git/modules-away`, blocked},
		{".git file rewritten", `printf 'gitdir: /tmp\n' >a/.git`, blocked},
		{".git file removed", `rm -f a/.git`, blocked},
		{"unmount in a user namespace", `unshare -Urm sh -ec 'umount .git/config 2>/dev/null || umount -l .git/config 2>/dev/null || true; echo "[core]fsmonitor=x" >>.git/config'`, blocked},
		{"bind to uncover in a user namespace", `unshare -Urm sh -ec 'mkdir -p "$HOME/peek"; mount --bind .git "$HOME/peek"; echo "[core]fsmonitor=x" >>"$HOME/peek/config"'`, blocked},
		{"remount writable in a user namespace", `unshare -Urm sh -ec 'mount -o remount,bind,rw .git/config 2>/dev/null || true; echo "[core]fsmonitor=x" >>.git/config'`, blocked},
		{"commondir created", `echo "$R/src/leaf/.git" >.git/commondir`, restored},
		{"config.worktree created in module", `printf '[core]\n\tfsmonitor = touch %s/m\n' "$C" >.git/modules/a/config.worktree`, restored},
		{"submodule added mid-session", `git clone -q "$R/src/leaf" newsub --separate-git-dir "$PWD/.git/modules/newsub" &&
			git -C newsub config core.fsmonitor "touch $C/newsub" && ` + hook + `.git/modules/newsub/hooks/post-checkout &&
			chmod +x .git/modules/newsub/hooks/post-checkout && git add newsub`, restored},
		{"worktree added mid-session", `git worktree add -q inner-wt &&
			printf '[core]\n\tfsmonitor = touch %s/iwt\n' "$C" >.git/worktrees/inner-wt/config.worktree`, restored},
		{"repository planted in work tree", `git init -q planted && git -C planted config core.fsmonitor "touch $C/planted" &&
			` + hook + `planted/.git/hooks/pre-commit && chmod +x planted/.git/hooks/pre-commit`, restored},
		{"symlinked module git dir", `git init -q --bare evil-gd && ` + hook + `evil-gd/hooks/post-checkout &&
			chmod +x evil-gd/hooks/post-checkout && ln -s ../../evil-gd .git/modules/evil`, restored},
		{"symlinked worktree admin dir", `mkdir -p evil-wt && ln -s ../../evil-wt .git/worktrees/evil`, restored},
		{".git file planted", `mkdir -p evil && printf 'gitdir: %s/src/leaf/.git\n' "$R" >evil/.git`, restored},
	}...)
}

// nsEnv prepares a fixture for namespace attacks: owned by the attack user except the global
// git config, with a canary dir, a home for the attacker and the rendered guest script.
type nsEnv struct {
	root, work, canary, script string
	snap                       *Snapshot
	// noShadow skips the guest script: the box as if its shadow had been sidestepped.
	noShadow bool
	// planDir is the checkout the plan is made for; "" is work.
	planDir string
}

// setupNamespace builds the fixture, runs each prep on it (as root, before the plan is made),
// and applies the rest of the setup.
func setupNamespace(t *testing.T, prep ...func(e *nsEnv)) *nsEnv {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: applies the guest shadow in a mount namespace (unshare -m) and attacks as an unprivileged user")
	}
	for _, tool := range []string{"unshare", "setpriv", "findmnt"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (util-linux)", tool)
		}
	}
	root := fixture(t)
	e := &nsEnv{root: root, work: filepath.Join(root, "work"), canary: filepath.Join(root, "canary")}
	os.Mkdir(e.canary, 0o777)
	os.Mkdir(filepath.Join(root, "home"), 0o755)
	for _, p := range prep {
		p(e)
	}
	planDir := e.work
	if e.planDir != "" {
		planDir = e.planDir
	}
	plan := discover(t, planDir)
	script, err := plan.GuestScript()
	if err != nil {
		t.Fatal(err)
	}
	e.script = filepath.Join(root, "guest-shadow.sh")
	os.WriteFile(e.script, []byte(script), 0o644)
	for _, d := range []string{"work", "wt", "src", "canary", "home"} {
		run(t, root, "chown", "-R", attackUID+":"+attackUID, d)
	}
	if e.snap, err = TakeSnapshot(context.Background(), plan, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	return e
}

// inBox applies the guest script as root in a new mount namespace, then runs sh as the attack
// user there, in dir. /var/lib is a tmpfs inside the namespace so the script's guest-local
// copies do not land on this machine's disk.
// sharedRoot makes the fixture a shared mount inside the namespace, as a Lima mount is in a
// systemd guest: a guest script that forgets to make its mounts private then leaves writable
// propagated copies behind, which the guard check must catch (a real box found this).
const sharedRoot = `mount --bind "$R" "$R"; mount --make-shared "$R";`

func (e *nsEnv) inBox(dir, sh string) (string, error) {
	script := e.script
	if e.noShadow {
		script = "/dev/null"
	}
	inner := `set -e; mount -t tmpfs tmpfs /var/lib; ` + sharedRoot + ` sh "$1" >/dev/null; cd "$2";
exec setpriv --reuid=` + attackUID + ` --regid=` + attackUID + ` --clear-groups -- sh -c "$3"`
	cmd := exec.Command("unshare", "-m", "--propagation", "private", "--", "sh", "-c", inner, "_", script, dir, "set -e; "+sh)
	cmd.Env = append(os.Environ(), "R="+e.root, "C="+e.canary, "HOME="+filepath.Join(e.root, "home"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestNamespaceAttacks(t *testing.T) {
	e := setupNamespace(t)
	ctx := context.Background()
	for _, a := range attacks() {
		out, err := e.inBox(e.work, a.sh)
		changes, verr := Verify(ctx, e.snap)
		if verr != nil {
			t.Errorf("%s: verify: %v", a.name, verr)
		}
		switch a.want {
		case blocked:
			if err == nil {
				t.Errorf("%s: the write succeeded in the box:\n%s", a.name, out)
			}
			if len(changes) > 0 {
				t.Errorf("%s: the guest did not block it, the host restored %+v", a.name, changes)
			}
		case restored:
			if err != nil {
				t.Errorf("%s: attack setup failed (%v):\n%s", a.name, err, out)
			}
			if len(changes) == 0 {
				t.Errorf("%s: the host-side verifier reported nothing", a.name)
			}
			for _, c := range changes {
				if !c.Restored {
					t.Errorf("%s: %s not restored: %s", a.name, c.Path, c.Detail)
				}
			}
		}
	}
	if changes, err := Verify(ctx, e.snap); err != nil || len(changes) > 0 {
		t.Fatalf("metadata not at rest after restoring: %v %+v", err, changes)
	}
	assertHostGitRunsNothing(t, e)
}

// TestNamespaceAttacksWithoutShadow is the host side on its own: the same attacks with no guest
// shadow at all (as if the box had sidestepped it, e.g. through a case variant on macOS) all
// succeed in the box, and the host-side verifier must restore and report every one.
func TestNamespaceAttacksWithoutShadow(t *testing.T) {
	e := setupNamespace(t)
	e.noShadow = true
	ctx := context.Background()
	for _, a := range attacks() {
		out, err := e.inBox(e.work, a.sh)
		if err != nil {
			t.Errorf("%s: failed without a shadow (%v), so this test proves nothing for it:\n%s", a.name, err, out)
		}
		changes, verr := Verify(ctx, e.snap)
		if verr != nil {
			t.Errorf("%s: verify: %v", a.name, verr)
		}
		if len(changes) == 0 {
			t.Errorf("%s: the host-side verifier reported nothing", a.name)
		}
	}
	if changes, err := Verify(ctx, e.snap); err != nil || len(changes) > 0 {
		t.Fatalf("metadata not at rest after restoring: %v %+v", err, changes)
	}
	assertHostGitRunsNothing(t, e)
}

// assertHostGitRunsNothing runs the host's everyday git commands in every checkout of the
// fixture (including the ones the box added) and checks that none of them ran a planted command.
func assertHostGitRunsNothing(t *testing.T, e *nsEnv, more ...string) {
	t.Helper()
	os.RemoveAll(e.canary)
	os.Mkdir(e.canary, 0o777)
	w := e.work
	var extra [][]string
	for _, d := range more {
		extra = append(extra, []string{"-C", d, "status"}, []string{"-C", d, "checkout", "-q", "-b", "host-x"})
	}
	for _, argv := range append(extra, [][]string{
		{"-C", w, "status"}, {"-C", w, "submodule", "status", "--recursive"},
		{"-C", w, "commit", "-q", "--allow-empty", "-m", "host"}, {"-C", w, "checkout", "-q", "-b", "host-branch"},
		{"-C", w, "checkout", "-q", "-"}, {"-C", w, "diff", "HEAD~1"}, {"-C", w, "log", "-p", "-1"},
		{"-C", w + "/a", "status"}, {"-C", w + "/a", "commit", "-q", "--allow-empty", "-m", "host"},
		{"-C", w + "/a/b", "status"}, {"-C", w + "/plain", "status"}, {"-C", w + "/newsub", "status"},
		{"-C", w + "/newsub", "checkout", "-q", "-b", "x"}, {"-C", w + "/inner-wt", "status"},
		{"-C", w + "/planted", "status"}, {"-C", w + "/planted", "commit", "-q", "--allow-empty", "-m", "x"},
		{"-C", filepath.Join(e.root, "wt"), "status"},
	}...) {
		out, err := exec.Command("git", argv...).CombinedOutput()
		if err != nil && !strings.Contains(argv[1], "newsub") {
			t.Logf("host git %v: %v\n%s", argv, err, out)
		}
	}
	ents, _ := os.ReadDir(e.canary)
	for _, c := range ents {
		t.Errorf("the host's git ran a planted command: canary %s", c.Name())
	}
}

// TestNamespaceGitStillWorks checks that git in the box commits, branches and reads its config
// with the shadow applied, and that git config --local fails (what SECURITY.md documents).
func TestNamespaceGitStillWorks(t *testing.T) {
	e := setupNamespace(t)
	for _, sh := range []string{
		`echo change >>file && git commit -qam "box commit" && git checkout -q -b box-branch && git log --oneline -1`,
		`git -C a commit -q --allow-empty -m "box submodule commit"`,
		`git -C ../wt commit -q --allow-empty -m "box worktree commit"`,
		`test "$(git config user.name)" = "Corral Test"`,
		`git -c core.pager=cat log -1 >/dev/null`,
		`git fetch -q bare && git push -q bare HEAD:refs/heads/from-box && git ls-remote bare from-box | grep -q from-box`,
		`git tag box-tag && git branch -q box-b2 && git stash list >/dev/null`,
	} {
		if out, err := e.inBox(e.work, sh); err != nil {
			t.Errorf("git in the box: %s: %v\n%s", sh, err, out)
		}
	}
	for _, sh := range []string{ // what SECURITY.md says fails in the box
		`git config --local user.name x`,
		`git remote add other ../src/remote.git`,
		`git worktree remove --force ../wt`,
		`git rm -q a`,
	} {
		if out, err := e.inBox(e.work, sh); err == nil {
			t.Errorf("%s succeeded in the box:\n%s", sh, out)
		}
	}
	if changes, err := Verify(context.Background(), e.snap); err != nil || len(changes) > 0 {
		t.Errorf("ordinary git work changed protected metadata: %v %+v", err, changes)
	}
}

// TestNamespaceGuardChecks runs the guard check in the box after the shadow (it must pass) and
// without it (it must fail, naming a path).
func TestNamespaceGuardChecks(t *testing.T) {
	e := setupNamespace(t)
	guard, err := discover(t, e.work).GuardChecks()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := e.inBox(e.work, guard); err != nil || !strings.Contains(out, "gitshadow: ok") {
		t.Errorf("guard check with the shadow applied: %v\n%s", err, out)
	}
	cmd := exec.Command("sh", "-c", guard)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "FAIL copy "+filepath.Join(e.work, ".git/config")) {
		t.Errorf("guard check without the shadow passed or did not name .git/config: %v\n%s", err, out)
	}
}

// TestNamespaceGuestScriptIdempotent runs the guest script twice in one namespace (a provision
// re-run within one boot): the second run succeeds and adds no mount.
func TestNamespaceGuestScriptIdempotent(t *testing.T) {
	e := setupNamespace(t)
	inner := `set -e; mount -t tmpfs tmpfs /var/lib; ` + sharedRoot + `
sh "$1" >/dev/null; wc -l </proc/self/mountinfo
sh "$1" >/dev/null; wc -l </proc/self/mountinfo`
	cmd := exec.Command("unshare", "-m", "--propagation", "private", "--", "sh", "-c", inner, "_", e.script)
	cmd.Env = append(os.Environ(), "R="+e.root)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("guest script twice: %v\n%s", err, out)
	}
	counts := strings.Fields(string(out))
	if len(counts) != 2 || counts[0] != counts[1] {
		t.Errorf("mount counts after the first and second run: %q", counts)
	}
}
