package session

import (
	"context"
	"errors"
	"fmt"
	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/project"

	"github.com/git-corral/git-corral/gitshadow"
	"github.com/git-corral/git-corral/internal/hint"
	"github.com/git-corral/git-corral/internal/trace"
	"github.com/git-corral/git-corral/provision"
	"github.com/git-corral/git-corral/vm"
)

// renderGuest renders b's guest (RenderGuest) into b.
func (b *Box) renderGuest(ctx context.Context) error {
	done := trace.Step("render guest")
	defer done()
	var err error
	b.Plan, b.Bundle, err = RenderGuest(ctx, b.Project, b.Manager.Home, b.Name, b.Config, b.BrokerPort)
	return err
}

// RenderGuest refuses unapproved provision scripts, plans the git shadow (always: no key turns
// it off), resolves hide and box_dirs on the host (hide.go) and renders
// every guest script of the mounted project p's box, in order: what start gives the box, and
// what provision render and list's drift check show.
func RenderGuest(ctx context.Context, p *project.Project, h home.Home, box string, cfg *policy.Config, brokerPort int) (*gitshadow.Plan, provision.Bundle, error) {
	repo, err := provision.CheckApproved(ctx, h, box, provision.RequestFromConfig(p.TopLevel, cfg))
	if err != nil {
		hn := "run 'git corral review', read what the scripts do, then 'git corral review --approve'"
		if !errors.Is(err, provision.ErrNotApproved) {
			hn = "fix .corral.toml or the script named above"
		}
		return nil, provision.Bundle{}, hint.With(err, hn)
	}
	// Every mount-mode box shadows its git metadata: no key turns it off (policy.retiredKeys).
	plan, script, coverSh, err := shadowAndCover(ctx, p, cfg)
	if err != nil {
		return nil, provision.Bundle{}, err
	}
	fwd, err := editorPorts(cfg) // editor.go
	if err != nil {
		return nil, provision.Bundle{}, err
	}
	bundle, err := provision.Render(provision.Options{
		Network: cfg.Network, User: vm.GuestUser(), ProjectDir: p.TopLevel, BrokerPort: brokerPort,
		GitShadowScript: script, CoverScript: coverSh, Packages: cfg.Packages, Repo: repo, GitCredentialHelper: gitCredentialHelper(cfg),
		ForwardPorts: fwd, SSHAgent: cfg.SSHAgent,
	})
	return plan, bundle, hint.With(err, "the values above come from the repository, its config and the host user name")
}

// shadowAndCover plans the git shadow of the mounted project p and resolves cfg's hide and
// box_dirs paths on the host against it (hide.go), returning both boot scripts. RenderGuest and
// Preview share it.
func shadowAndCover(ctx context.Context, p *project.Project, cfg *policy.Config) (plan *gitshadow.Plan, shadowSh, coverSh string, err error) {
	if plan, err = gitshadow.Discover(ctx, p); err != nil {
		return nil, "", "", fmt.Errorf("plan the git shadow: %w", err)
	}
	if shadowSh, err = plan.BootScript(); err != nil {
		return nil, "", "", fmt.Errorf("render the git shadow: %w", err)
	}
	_, coverSh, err = coverScript(p.TopLevel, cfg, plan)
	return plan, shadowSh, coverSh, err
}
