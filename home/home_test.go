package home

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestResolve: $CORRAL_HOME wins, then ~/.corral; a relative value is made absolute so that a
// later chdir does not move the state.
func TestResolve(t *testing.T) {
	env := map[string]string{"HOME": "/home/u"}
	get := func(k string) string { return env[k] }
	if h, err := Resolve(get); err != nil || h.Dir != "/home/u/.corral" {
		t.Errorf("Resolve without CORRAL_HOME = %q, %v", h.Dir, err)
	}
	env[Env] = "/srv/state"
	if h, _ := Resolve(get); h.Dir != "/srv/state" {
		t.Errorf("Resolve = %q, want $CORRAL_HOME", h.Dir)
	}
	env[Env] = "rel"
	wd, _ := os.Getwd()
	if h, _ := Resolve(get); h.Dir != filepath.Join(wd, "rel") {
		t.Errorf("Resolve(relative) = %q, want it made absolute", h.Dir)
	}
}

// TestEveryPathUnderHome: every path home names lies under $CORRAL_HOME and names the box it is
// asked for, so no state file is built elsewhere (one owner for the layout).
func TestEveryPathUnderHome(t *testing.T) {
	h := Home{Dir: "/state"}
	box := "proj-abc123"
	for name, p := range map[string]string{
		"GlobalConfig": h.GlobalConfig(), "LimaHome": h.LimaHome(), "Images": h.Images(), "Logs": h.Logs(),
		"SessionsLog": h.SessionsLog(), "SandboxLog": h.SandboxLog(), "SSHConfig": h.SSHConfig(), "Boxes": h.Boxes(), "Golden": h.Golden(), "Libexec": h.Libexec(),
		"KVMProbe": h.KVMProbe(),
	} {
		if !strings.HasPrefix(p, "/state/") {
			t.Errorf("%s = %q is not under $CORRAL_HOME", name, p)
		}
	}
	for name, p := range map[string]string{
		"ProjectConfig": h.ProjectConfig(box), "BoxMeta": h.BoxMeta(box), "Approvals": h.Approvals(box),
		"EgressLog": h.EgressLog(box), "BrokerLog": h.BrokerLog(box), "CloneStore": h.CloneStore(box),
		"BoxTemplate": h.BoxTemplate(box), "BoxSessionMark": h.BoxSessionMark(box), "BrokerSecret": h.BrokerSecret(box),
		"Run": h.Run(box), "ShadowState": h.ShadowState(box), "SSHKnownHosts": h.SSHKnownHosts(box),
	} {
		if !strings.HasPrefix(p, "/state/") || !strings.Contains(p, box) {
			t.Errorf("%s = %q is not under $CORRAL_HOME or does not name the box", name, p)
		}
	}
}

// TestMkdirAllRefusesSymlink: a symlink (or a file) in place of a state directory is refused,
// so another local user cannot redirect state files; the control, a fresh path, is created 0700.
func TestMkdirAllRefusesSymlink(t *testing.T) {
	root := t.TempDir()
	h := Home{Dir: root}
	fresh := filepath.Join(root, "logs")
	if err := h.MkdirAll(fresh); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(fresh); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("created %v, %v: want 0700", fi.Mode(), err)
	}
	os.Symlink(t.TempDir(), filepath.Join(root, "boxes"))
	if err := h.MkdirAll(filepath.Join(root, "boxes")); err == nil {
		t.Error("a symlink in place of the boxes directory was accepted")
	}
	os.WriteFile(filepath.Join(root, "run"), nil, 0o600)
	if err := h.MkdirAll(filepath.Join(root, "run")); err == nil {
		t.Error("a file in place of a directory was accepted")
	}
}
