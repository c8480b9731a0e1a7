package session

// This file applies `hide` to a clone directory made by `git corral clone URL`. Rules:
//   - the box of a clone directory gets the history of the host's clone store
//     (home.CloneStore of its box): every branch and tag, as a checkout with source = "clone"
//     delivers its own, so the same check (cover.CheckClone) refuses a hidden path in any
//     commit reachable from them, before anything is recorded, booted or delivered;
//   - the hide paths are checked against the clone directory (it holds only the clone record,
//     so they are checked lexically) and looked for in the store, byte for byte;
//   - a store that cannot be read while hide is set is refused too: nothing can show that the
//     hidden paths are absent (fail closed).

import (
	"fmt"

	"github.com/git-corral/git-corral/cover"
	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/internal/hint"
	"github.com/git-corral/git-corral/policy"
)

// checkCloneDirHide refuses the clone-mode box of the clone directory hostDir (box box) when a
// `hide` path of cfg is in the history its box gets from the clone store.
func checkCloneDirHide(h home.Home, hostDir, box string, cfg *policy.Config) error {
	if len(cfg.Hide) == 0 {
		return nil
	}
	plan, err := cover.Resolve(hostDir, cfg.Hide, nil, nil)
	if err != nil {
		return hint.With(fmt.Errorf("check hide for clone %s: %w", hostDir, err),
			"fix the path in the trusted configuration that sets it; 'git corral config' shows where each key comes from")
	}
	rels := make([]string, len(plan.Hide))
	for i, e := range plan.Hide {
		rels[i] = e.Rel
	}
	if err := cover.CheckClone(h.CloneStore(box), rels); err != nil {
		return hint.With(fmt.Errorf("check hide for clone %s (box %s): %w", hostDir, box, err),
			"the box of a clone gets every branch's and tag's history from its store: clone a repository whose history holds no hidden path, or remove the path from hide")
	}
	return nil
}
