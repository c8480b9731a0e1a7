package session

import (
	"fmt"

	"github.com/git-corral/git-corral/cover"
	"github.com/git-corral/git-corral/gitshadow"
	"github.com/git-corral/git-corral/internal/hint"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/provision"
	"github.com/git-corral/git-corral/vm"
)

// coverScript resolves cfg's hide and box_dirs paths on the host checkout at top (package
// cover), refusing any that overlaps the git shadow's mounts (shadow, nil when git metadata is
// not protected), and renders the boot script that mounts over them; "" when both are empty.
func coverScript(top string, cfg *policy.Config, shadow *gitshadow.Plan) (*cover.Plan, string, error) {
	if len(cfg.Hide)+len(cfg.BoxDirs) == 0 {
		return nil, "", nil
	}
	var reserved []string
	if shadow != nil {
		for _, e := range shadow.Expectations() {
			reserved = append(reserved, e.Path)
		}
	}
	plan, err := cover.Resolve(top, cfg.Hide, cfg.BoxDirs, reserved)
	if err != nil {
		return nil, "", hint.With(fmt.Errorf("check hide and box_dirs: %w", err), "fix the path in .corral.toml (or the layer that sets it); 'git corral config' shows where each key comes from")
	}
	script, err := plan.BootScript(vm.GuestUser())
	if err != nil {
		return nil, "", err
	}
	return plan, script, nil
}

// prepareCover makes the host side of b's box_dirs directories that are missing (empty, so
// the guest has a mount point; the host's directory stays empty) and refuses a box whose
// boot scripts hide or keep on its disk other paths than the configuration now lists: its
// guard checks would hold it to the old list. An existing box that recorded no scripts (made
// before they were recorded) cannot show it has the cover script, so it is refused too when
// one is rendered. drift is provision.ScriptsDrift for the box's meta.
func (b *Box) prepareCover(meta vm.Meta, drift []string) error {
	unrecorded := meta.Box != "" && meta.GuestScripts == nil && len(b.Config.Hide)+len(b.Config.BoxDirs) > 0
	if unrecorded {
		drift = append(drift, "+"+provision.CoverScriptName)
	}
	for _, d := range drift {
		if d == "+"+provision.CoverScriptName || d == "~"+provision.CoverScriptName {
			return hint.With(fmt.Errorf("box %s was made with other hide and box_dirs paths than .corral.toml lists now, and would not hide what is listed", b.Name),
				"'git corral delete --yes' (files kept only in the box, box_dirs included, are lost), then start again; or restore the old lists")
		}
	}
	if len(b.Config.BoxDirs) == 0 {
		return nil
	}
	plan, _, err := coverScript(b.Dir, b.Config, b.Plan)
	if err != nil {
		return err
	}
	made, err := plan.EnsureBoxDirs()
	if len(made) > 0 {
		b.req.notice(fmt.Sprintf("made %v in the checkout, empty: box_dirs are kept on the box's disk and mounted there", made))
	}
	return err
}

// checkCloneHide refuses to deliver the checkout at top into a clone-mode box when a `hide`
// path is in its delivered history or index (cover.CheckClone); box_dirs mean nothing there,
// since nothing is mounted.
func checkCloneHide(top string, cfg *policy.Config) error {
	if len(cfg.Hide) == 0 {
		return nil
	}
	plan, err := cover.Resolve(top, cfg.Hide, nil, nil)
	if err != nil {
		return hint.With(fmt.Errorf("check hide: %w", err), "fix the path in .corral.toml (or the layer that sets it)")
	}
	rels := make([]string, len(plan.Hide))
	for i, e := range plan.Hide {
		rels[i] = e.Rel
	}
	return hint.With(cover.CheckClone(top, rels),
		"clone mode delivers every branch's and tag's history: remove the path from git history (or the index) first, or use source = \"mount\", where hide covers it")
}
