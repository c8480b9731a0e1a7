package session

import (
	"os"
	"testing"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/project"
	"github.com/git-corral/git-corral/vm"
)

// TestGitIdentityNoticeOnce: on a host whose git has no identity, git_identity = "host" says so
// at the box's first session and not at the next ones (issue #30: a notice on every command); a
// second box hears it once too, and a box deleted and made again hears it again (the record
// goes with the box). Control: the environment is the same every time, so only the notice
// differs.
func TestGitIdentityNoticeOnce(t *testing.T) {
	repo := hermeticIdentity(t, "")
	h := home.Home{Dir: t.TempDir()}
	m := &vm.Manager{Home: h}
	cfg := policy.Default()
	cfg.GitIdentity = "host"
	cfg.Env = nil
	said := func(box string) []string {
		var notices []string
		b := &Box{Manager: m, Name: box, Config: cfg, Dir: repo, Project: &project.Project{TopLevel: repo}}
		b.req = Request{UI: UI{Notice: func(s string) { notices = append(notices, s) }}}
		if _, _, _, err := b.env(); err != nil {
			t.Fatal(err)
		}
		return notices
	}
	if n := said("box-a"); len(n) != 1 {
		t.Fatalf("first session: notices %q, want the git_identity notice once", n)
	}
	for i := 0; i < 3; i++ {
		if n := said("box-a"); len(n) != 0 {
			t.Fatalf("session %d: notices %q, want none (said at the first)", i+2, n)
		}
	}
	if n := said("box-b"); len(n) != 1 {
		t.Errorf("another box's first session: notices %q, want the notice once", n)
	}
	// The record goes when the box does (vm.Manager.Delete removes BoxNotices with the
	// metadata; here the file itself, since no limactl runs).
	if err := os.Remove(h.BoxNotices("box-a")); err != nil {
		t.Fatal(err)
	}
	if n := said("box-a"); len(n) != 1 {
		t.Errorf("after the record is gone: notices %q, want the notice again", n)
	}
}
