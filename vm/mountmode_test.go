package vm

import (
	"errors"
	"testing"

	"github.com/git-corral/git-corral/home"
)

// TestCheckMountMode: clone mode takes only a box recorded as mounting nothing; a mount-mode
// box, or one whose metadata is missing, is refused; mount mode refuses only a clone-mode box.
func TestCheckMountMode(t *testing.T) {
	m := &Manager{Home: home.Home{Dir: t.TempDir()}}
	if err := m.WriteMeta(Meta{Box: "mounted", Project: "/src/p"}); err != nil {
		t.Fatal(err)
	}
	if err := m.WriteMeta(Meta{Box: "clonebox", Project: "/src/c", NoProjectMount: true}); err != nil {
		t.Fatal(err)
	}
	stopped := func(box string) Status { return Status{Name: box, Status: "Stopped"} }
	for _, tc := range []struct {
		name    string
		spec    BoxSpec
		st      Status
		refused bool
	}{
		{"clone mode, clone box", BoxSpec{Box: "clonebox", NoProjectMount: true}, stopped("clonebox"), false},
		{"clone mode, mount box", BoxSpec{Box: "mounted", NoProjectMount: true}, stopped("mounted"), true},
		{"clone mode, no metadata", BoxSpec{Box: "unknown", NoProjectMount: true}, stopped("unknown"), true},
		{"clone mode, new box", BoxSpec{Box: "new", NoProjectMount: true}, Status{Name: "new"}, false},
		{"mount mode, mount box", BoxSpec{Box: "mounted"}, stopped("mounted"), false},
		{"mount mode, clone box", BoxSpec{Box: "clonebox"}, stopped("clonebox"), true},
		{"mount mode, no metadata", BoxSpec{Box: "unknown"}, stopped("unknown"), false},
	} {
		err := m.checkMountMode(tc.spec, tc.st)
		if refused := errors.Is(err, ErrMountMode); refused != tc.refused || (err != nil && !refused) {
			t.Errorf("%s: err = %v, want refused %v", tc.name, err, tc.refused)
		}
	}
}
