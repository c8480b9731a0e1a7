package session

// This file is the part of Open that needs no box: the guards that follow from the checkout,
// its configuration and the host's files alone. Open runs them, and so do the previews (git
// corral info, provision render, config check), through these same functions, so that a
// preview says what a session would refuse, in the session's own words (issue #29). Rules:
//
//   - CheckMounts is what the box may mount of the host. For a mounted checkout: the project
//     directory (home.CheckProjectMount: not $HOME, an ancestor of it, a repository holding
//     $CORRAL_HOME, ~/.ssh…), a linked worktree's common dir (CheckGitMounts) and each `mounts`
//     entry (ExtraMounts); for source = "clone", no `mounts` entry at all (refuseCloneMounts).
//     Open runs it before the audit start record; provision render before it writes a file.
//   - Preview is CheckMounts, then, for a mounted checkout, the git shadow plan and the hide and
//     box_dirs paths resolved on the host against it (shadowAndCover), which Open runs while it
//     renders the guest (RenderGuest). The first refusal is returned, as Open returns it.
//   - Not previewed: what depends on the session's environment (env_from_host, git_tokens, an
//     API route's key, SSH_AUTH_SOCK, --env), on an existing box (its network mode, mounts,
//     ports and hide lists), on the host at that moment (a port in use, the audit log taking a
//     record, a built image of the name `image` gives) or on review (provision approvals,
//     which provision render and git corral review report).

import (
	"context"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/project"
	"github.com/git-corral/git-corral/vm"
)

// CheckMounts refuses what a box for the checkout p with configuration cfg may not mount (see
// the rules above) and returns the `mounts` entries as the template takes them. p is nil when
// there is no checkout (config check of a file outside a repository): only the entries are
// checked then. getenv supplies HOME and the variables the mount guard reads (nil: os.Getenv).
func CheckMounts(h home.Home, p *project.Project, cfg *policy.Config, getenv func(string) string) ([]vm.ExtraMount, error) {
	if cfg.Source == SourceClone {
		return nil, refuseCloneMounts(cfg) // extra.go: a clone-mode box mounts nothing
	}
	top := ""
	if p != nil {
		// A project that is, contains or lies inside what the host trusts ($HOME itself,
		// $CORRAL_HOME, ~/.ssh, ~/.config, the Lima home…) would hand the box the host
		// (SECURITY.md "What a box may mount").
		if err := h.CheckProjectMount(p.TopLevel, getenv); err != nil {
			return nil, mountHint(err)
		}
		if err := CheckGitMounts(p, h, getenv); err != nil { // gitmounts.go
			return nil, err
		}
		top = p.TopLevel
	}
	return ExtraMounts(h, cfg, top, getenv) // extra.go
}

// Preview runs every guard Open applies to the checkout p with configuration cfg that needs
// no box (see the rules above) and returns the first refusal, the error Open would return;
// nil when a session would get past them all. p may be nil, as for CheckMounts.
func Preview(ctx context.Context, h home.Home, p *project.Project, cfg *policy.Config, getenv func(string) string) error {
	if _, err := CheckMounts(h, p, cfg, getenv); err != nil || p == nil || cfg.Source == SourceClone {
		return err
	}
	_, _, _, err := shadowAndCover(ctx, p, cfg) // render.go
	return err
}
