package session

// This file holds the configuration keys that shape a box's identity and lifetime rather than
// its guards: name (which box), image (what it boots), timeout (how long `run` waits). Rules:
//   - name selects a box other than the one derived from the checkout's path. Both are
//     trusted-only, and a box belongs to one project: a box whose recorded project is another
//     checkout is refused, never shared (it holds that project's state and guards).
//   - image names a built base image as `git corral image list` prints it; an unknown name is
//     an error naming the key, where it was set and the names there are, before anything boots.
//   - timeout is `run`'s default --timeout; the flag, when given, wins (0 included).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/internal/hint"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/project"
	"github.com/git-corral/git-corral/vm"
)

// ErrBoxOfAnotherProject is wrapped when `name` selects a box made for another checkout.
var ErrBoxOfAnotherProject = errors.New("box belongs to another project")

// BoxNameFor returns the box of the checkout at top: cfg's name when set, else derived. A box
// recorded for another checkout is refused.
func BoxNameFor(h home.Home, derived, top string, cfg *policy.Config) (string, error) {
	if cfg.Name == "" || cfg.Name == derived {
		return derived, nil
	}
	meta, err := (&vm.Manager{Home: h}).ReadMeta(cfg.Name)
	if err == nil && meta.Project != "" && meta.Project != top {
		return "", hint.With(fmt.Errorf("name %q: %w %s, not %s", cfg.Name, ErrBoxOfAnotherProject, meta.Project, top),
			"choose another name in the trusted configuration, or remove name to use this checkout's own box "+derived)
	}
	return cfg.Name, nil
}

// renameBox applies `name` to p (BoxNameFor), dropping pf: it was prefetched from the derived
// box's holder.
func renameBox(h home.Home, p *project.Project, cfg *policy.Config, pf **guardPrefetch) error {
	box, err := BoxNameFor(h, p.Box, p.TopLevel, cfg)
	if err != nil || box == p.Box {
		return err
	}
	(*pf).drop()
	*pf, p.Box = nil, box
	return nil
}

// RunTimeout is the time limit of `run`: the --timeout flag when it was given (set), else the
// timeout key.
func RunTimeout(flag time.Duration, set bool, cfg *policy.Config) time.Duration {
	if set {
		return flag
	}
	return cfg.Timeout
}

// checkImage refuses an `image` that names no built image, naming the key, where it was set
// (opts loads the configuration again for its origins, on this error path only) and the
// images there are.
func checkImage(ctx context.Context, h home.Home, req Request, opts policy.LoadOptions, cfg *policy.Config) error {
	if cfg.Image == "" {
		return nil
	}
	_, err := vm.FindImageFor(vm.ImageDirs(h.Images(), os.Getenv), cfg.Image, vm.HostArch())
	if !errors.Is(err, vm.ErrUnknownImage) && !errors.Is(err, vm.ErrArch) {
		return nil // another problem (no image at all) is Ensure's to report
	}
	origin := "the configuration"
	if AddNetworkFlag(&opts, req.Network) == nil {
		if eff, lerr := policy.Load(ctx, opts); lerr == nil {
			origin = eff.Origins["image"].String()
		}
	}
	return hint.With(fmt.Errorf("image (%s): %w", origin, err), "'git corral image list' shows the names; set image to one of them, or remove it for the default image")
}

// ProjectBox returns the box a command acts on for the checkout p: the trusted `name` when one
// is set (BoxNameFor, the rule Open applies), else p.Box, the name derived from its path. It
// reads only the layers that may set name — $CORRAL_HOME/config.toml and
// projects/<derived>.toml — never the repository's .corral.toml (name is trusted-only there)
// and without measuring the host, so every command can afford it.
func ProjectBox(ctx context.Context, h home.Home, p *project.Project) (string, error) {
	eff, err := policy.Load(ctx, policy.LoadOptions{Home: h, Box: p.Box, Host: &policy.HostLimits{}})
	if err != nil {
		return "", hint.With(fmt.Errorf("find the box of %s: %w", p.TopLevel, err),
			"fix the trusted configuration named above (it may set name), or name the box with 'git corral --box BOX'")
	}
	return BoxNameFor(h, p.Box, p.TopLevel, eff.Config)
}
