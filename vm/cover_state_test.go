package vm

import (
	"testing"

	"github.com/lima-vm/lima/pkg/limayaml"

	"github.com/git-corral/git-corral/provision"
)

// TestStateCapableCover: a box with the cover script (hide, box_dirs) boots instead of resuming
// a golden state; the same box without it (control) resumes.
func TestStateCapableCover(t *testing.T) {
	if !stateCapable(Rendered{MountType: limayaml.NINEP}, false) {
		t.Fatal("control: a 9p box without a cover script cannot resume")
	}
	if stateCapable(Rendered{MountType: limayaml.NINEP, Cover: true}, false) {
		t.Error("a box with a cover script resumes the golden saved state")
	}
	with := provision.Bundle{Scripts: []provision.Script{{Name: "10-base.sh"}, {Name: provision.CoverScriptName}}}
	without := provision.Bundle{Scripts: []provision.Script{{Name: "10-base.sh"}}}
	if !hasScript(with, provision.CoverScriptName) || hasScript(without, provision.CoverScriptName) {
		t.Error("hasScript does not tell a bundle with the cover script from one without")
	}
}
