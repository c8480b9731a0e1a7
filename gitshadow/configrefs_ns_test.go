package gitshadow

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// configNamed gives the fixture a host global config that names work-tree files, the issue's
// scenario: core.fsmonitor = ci/fsmon.sh, a hooksPath with a non-standard name, a textconv
// reached through a symlinked directory, an include chain and a credential helper that does not
// exist yet. Siblings of every named file are left for the controls.
func configNamed(e *nsEnv) {
	w := e.work
	for name, body := range map[string]string{
		"ci/fsmon.sh":          "#!/bin/sh\nexit 1\n",
		"ci/notes.txt":         "not named by any config\n",
		"ci/git-hooks/pre-x":   "#!/bin/sh\nexit 0\n",
		"tools/real/tc.sh":     "#!/bin/sh\ncat \"$1\"\n",
		"tools/real/other.sh":  "#!/bin/sh\n",
		"conf/a.cfg":           "[include]\n\tpath = b.cfg\n",
		"conf/b.cfg":           "[alias]\n\tz = !./conf/z.sh\n",
		"conf/z.sh":            "#!/bin/sh\n",
		"conf/not-included.md": "control\n",
	} {
		os.MkdirAll(filepath.Join(w, filepath.Dir(name)), 0o755)
		os.WriteFile(filepath.Join(w, name), []byte(body), 0o755)
	}
	os.Symlink("tools/real", filepath.Join(w, "tl"))
	global := os.Getenv("GIT_CONFIG_GLOBAL")
	f, _ := os.OpenFile(global, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("[core]\n\tfsmonitor = ci/fsmon.sh\n\thooksPath = ci/git-hooks\n[diff \"x\"]\n\ttextconv = tl/tc.sh\n" +
		"[include]\n\tpath = " + w + "/conf/a.cfg\n[credential]\n\thelper = !tools/cred\n")
	f.Close()
}

// TestNamespaceConfigNamedFiles applies the guest shadow for a host config that names work-tree
// files and attacks them as the box user: every write to a named file (or through a renamed
// parent) fails, while the sibling files no config names stay writable (the controls); what the
// guest cannot stop (a symlink re-pointed, a named file that did not exist) the host restores.
// Without the shadow the blocked writes succeed and the host restores each one.
func TestNamespaceConfigNamedFiles(t *testing.T) {
	e := setupNamespace(t, configNamed)
	ctx := context.Background()
	type row struct {
		name, sh string
		want     outcome
		control  bool // must succeed in the box with the shadow and change nothing the host restores
	}
	evil := `printf '#!/bin/sh\ntouch %s/evil\n' "$C"`
	rows := []row{
		{"fsmonitor script rewritten", evil + ` >ci/fsmon.sh`, blocked, false},
		{"fsmonitor script appended", `echo "touch $C/evil" >>ci/fsmon.sh`, blocked, false},
		{"fsmonitor script replaced by rename", evil + ` >ci/new.sh && mv ci/new.sh ci/fsmon.sh`, blocked, false},
		{"fsmonitor dir renamed away", `mv ci ci.away && mkdir ci && ` + evil + ` >ci/fsmon.sh`, blocked, false},
		{"hooksPath hook added", evil + ` >ci/git-hooks/pre-commit`, blocked, false},
		{"textconv through the symlinked dir", evil + ` >tl/tc.sh`, blocked, false},
		{"textconv at its real path", evil + ` >tools/real/tc.sh`, blocked, false},
		{"chained include rewritten", `printf '[core]\n\tpager = touch %s/evil\n' "$C" >>conf/b.cfg`, blocked, false},
		{"script named by a chained include", evil + ` >conf/z.sh`, blocked, false},
		{"sibling of the fsmonitor script", `echo changed >>ci/notes.txt && echo new >ci/new.txt && rm ci/new.txt`, blocked, true},
		{"sibling of the textconv", `echo changed >>tools/real/other.sh`, blocked, true},
		{"file no include names", `echo changed >>conf/not-included.md`, blocked, true},
		{"symlink on the way re-pointed", `ln -sfn ci tl`, restored, false},
		{"named helper that did not exist", evil + ` >tools/cred`, restored, false},
	}
	for _, r := range rows {
		out, err := e.inBox(e.work, r.sh)
		changes, verr := Verify(ctx, e.snap)
		if verr != nil {
			t.Errorf("%s: verify: %v", r.name, verr)
		}
		switch {
		case r.control:
			if err != nil || len(changes) > 0 {
				t.Errorf("control %s: failed in the box (%v) or the host restored %+v:\n%s", r.name, err, changes, out)
			}
		case r.want == blocked:
			if err == nil {
				t.Errorf("%s: the write succeeded in the box:\n%s", r.name, out)
			}
			if len(changes) > 0 {
				t.Errorf("%s: the guest did not block it, the host restored %+v", r.name, changes)
			}
		default:
			if err != nil || len(changes) == 0 {
				t.Errorf("%s: attack failed (%v) or the host reported nothing:\n%s", r.name, err, out)
			}
		}
	}
	e.noShadow = true
	for _, r := range rows {
		if r.control || r.want != blocked {
			continue
		}
		if out, err := e.inBox(e.work, r.sh); err != nil {
			t.Errorf("without the shadow %s failed (%v), so it proves nothing:\n%s", r.name, err, out)
		}
		if changes, _ := Verify(ctx, e.snap); len(changes) == 0 {
			t.Errorf("without the shadow %s: the host-side verifier reported nothing", r.name)
		}
	}
	assertConfigNamedIntact(t, e)
}

// assertConfigNamedIntact checks the named files hold the host's content and that the host's
// git, run with the config in force, ran nothing the box planted.
func assertConfigNamedIntact(t *testing.T, e *nsEnv) {
	t.Helper()
	if data, _ := os.ReadFile(filepath.Join(e.work, "ci/fsmon.sh")); string(data) != "#!/bin/sh\nexit 1\n" {
		t.Errorf("ci/fsmon.sh after the session: %q", data)
	}
	if link, _ := os.Readlink(filepath.Join(e.work, "tl")); link != "tools/real" {
		t.Errorf("tl points to %q after the session", link)
	}
	os.RemoveAll(e.canary)
	os.Mkdir(e.canary, 0o777)
	for _, argv := range [][]string{{"status"}, {"diff"}, {"z"}} {
		run := append([]string{"-C", e.work}, argv...)
		out, _ := execGit(run...)
		if strings.Contains(out, "evil") {
			t.Errorf("host git %v printed the box's content: %s", argv, out)
		}
	}
	ents, _ := os.ReadDir(e.canary)
	for _, c := range ents {
		t.Errorf("the host's git ran a planted command: canary %s", c.Name())
	}
}

// execGit runs the host's git with the environment in force and returns its combined output.
func execGit(args ...string) (string, error) {
	out, err := exec.Command("git", args...).CombinedOutput()
	return string(out), err
}
