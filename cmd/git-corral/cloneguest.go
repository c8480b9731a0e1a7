package main

// The guest side of clone-mode boxes: the guest scripts they are provisioned with (the same
// network lockdown, privilege drop and guard check as a checkout's box, for the box's network
// mode) and the submodules their own git fetches after delivery.

import (
	"context"
	"fmt"

	"github.com/git-corral/git-corral/broker"
	"github.com/git-corral/git-corral/clone"
	"github.com/git-corral/git-corral/internal/visible"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/provision"
	"github.com/git-corral/git-corral/vm"
)

// guestBox is a running clone-mode box after the guard check: its Guest, the guest path of
// its checkout and the network mode it was created with.
type guestBox struct {
	clone.Guest
	Dir     string
	Network policy.Network
}

// networkRank orders the modes from loosest to strictest.
var networkRank = map[policy.Network]int{policy.NetworkFull: 0, policy.NetworkBroker: 1, policy.NetworkOffline: 2}

// cloneSession settles a clone-mode box's network mode and broker port and renders its guest
// scripts. An existing box keeps the mode it was created with (the guards are rendered into it
// at creation): a configuration asking for a looser or equal mode adopts it (fetch passes the
// defaults), one asking for a stricter mode is refused, as for a checkout's box.
func cloneSession(m *vm.Manager, box string, cfg *policy.Config) (*boxSession, error) {
	meta, _ := m.ReadMeta(box)
	if have := policy.Network(meta.Network); meta.Network != "" && have != cfg.Network {
		if networkRank[have] < networkRank[cfg.Network] {
			return nil, withHint(fmt.Errorf("box %s was created with network %q, the configuration now says %q", box, have, cfg.Network),
				"delete it ('git corral delete --yes'; the clone's work in the box is lost unless fetched first) and run the command again")
		}
		c := *cfg
		c.Network = have
		cfg = &c
	}
	s := &boxSession{m: m, box: box, cfg: cfg}
	if cfg.Network == policy.NetworkBroker {
		if s.brokerPort = meta.BrokerPort; s.brokerPort == 0 {
			var err error
			if s.brokerPort, err = broker.FreePort(); err != nil {
				return nil, err
			}
		}
	}
	var err error
	if s.bundle, err = cloneBundle(cfg, s.brokerPort); err != nil {
		return nil, err
	}
	return s, nil
}

// cloneBundle renders a clone-mode box's guest scripts: base, network lockdown, packages and
// privilege drop for cfg's network mode, with no project directory (nothing is mounted), no
// git shadow (no host git metadata is in reach of the box) and no repository provision
// scripts (they run from a mounted checkout, which a clone-mode box does not have).
func cloneBundle(cfg *policy.Config, brokerPort int) (provision.Bundle, error) {
	b, err := provision.Render(provision.Options{Network: cfg.Network, User: vm.GuestUser(), BrokerPort: brokerPort, Packages: cfg.Packages, GitCredentialHelper: len(cfg.GitTokens) > 0})
	if err != nil {
		return provision.Bundle{}, withHint(err, "the values above come from the configuration and the host user name")
	}
	return b, nil
}

// transportsFor is what a box's git may fetch submodules over in network mode n.
func transportsFor(n policy.Network) []string {
	switch n {
	case policy.NetworkFull:
		return clone.TransportsFull
	case policy.NetworkBroker:
		return clone.TransportsBroker
	}
	return nil
}

// planSubmodules plans the submodules the box fetches after delivering store; a hostile
// .gitmodules entry refuses the delivery before anything runs, naming the entry.
func planSubmodules(store string, o clone.SubmoduleOptions) (clone.SubmodulePlan, error) {
	plan, err := clone.PlanSubmodules(store, o)
	if err != nil {
		return plan, withHint(fmt.Errorf("plan submodules of %s: %w", store, err),
			"nothing was delivered into the box and nothing ran; the entry named above must be fixed in the repository")
	}
	return plan, nil
}

// fetchSubmodules has the box's git fetch plan's submodules into the checkout at dir and
// reports the ones left out.
func (a *app) fetchSubmodules(ctx context.Context, g clone.Guest, dir string, plan clone.SubmodulePlan) error {
	for _, f := range plan.Skipped {
		fmt.Fprintf(a.stderr, "corral: warning: submodule not fetched: %s\n", f)
	}
	if err := clone.UpdateSubmodules(ctx, g, dir, plan); err != nil {
		return withHint(err, "the checkout is in the box, its submodules are not complete; 'git corral shell' there to see why")
	}
	if n := len(plan.Fetch); n > 0 {
		a.notice(fmt.Sprintf("the box fetched %d submodule(s) into %s", n, visible.String(dir)))
	}
	return nil
}
