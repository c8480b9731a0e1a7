package clone

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/git-corral/git-corral/internal/visible"
)

// GuestCheckoutDir is where a clone-mode checkout lives in the box: $HOME/src/<name of the host
// directory> in the box user's home (Lima's /home/<user>.linux), which the box user can create.
// The host path itself usually does not exist in the guest. It is derived again on every use,
// never read from the clone record. A name that is not plain becomes "checkout".
func GuestCheckoutDir(ctx context.Context, g Guest, hostDir string) (string, error) {
	var out bytes.Buffer
	code, err := g.Exec(ctx, []string{"sh", "-c", `printf '%s' "$HOME"`}, nil, &out)
	if err != nil || code != 0 {
		return "", fmt.Errorf("read the box user's home: exit %d: %v", code, err)
	}
	return CheckoutPath(out.String(), filepath.Base(hostDir))
}

// CheckoutPath joins the guest home and a host directory name into the guest checkout path.
func CheckoutPath(guestHome, name string) (string, error) {
	if !path.IsAbs(guestHome) || path.Clean(guestHome) != guestHome || guestHome == "/" || visible.Has(guestHome) ||
		strings.ContainsAny(guestHome, "\x00\r\n") {
		return "", fmt.Errorf("the box user's home %q is not a clean absolute path", guestHome)
	}
	if name == "" || name == "." || name == ".." || strings.HasPrefix(name, "-") || strings.HasPrefix(name, ".") ||
		strings.ContainsAny(name, "/\\\x00") || visible.Has(name) {
		name = "checkout"
	}
	return path.Join(guestHome, "src", name), nil
}

// DeliverCheckout gives the box the host checkout at top (source = "clone"): it fetches the
// checkout into a fresh store (its previous content is replaced: the store is git corral's
// own), adds the tracked-file snapshot when withChanges is set (never an untracked file), plans
// the submodules the box may fetch over transports (a hostile .gitmodules entry refuses before
// anything is delivered) and delivers both into the guest at dir on the checkout's current
// branch.
func DeliverCheckout(ctx context.Context, g Guest, top, store, dir string, withChanges bool, transports []string) (SubmodulePlan, error) {
	if err := os.RemoveAll(store); err != nil {
		return SubmodulePlan{}, err
	}
	if err := os.MkdirAll(filepath.Dir(store), 0o700); err != nil {
		return SubmodulePlan{}, err
	}
	res, err := Fetch(ctx, top, store, Options{Cwd: top})
	if err != nil {
		return SubmodulePlan{}, err
	}
	if withChanges {
		if _, err := SnapshotTracked(ctx, top, store); err != nil {
			return SubmodulePlan{}, err
		}
	}
	branch := strings.TrimPrefix(res.Head, "refs/heads/")
	plan, err := PlanSubmodules(store, SubmoduleOptions{Branch: branch, Transports: transports})
	if err != nil {
		return plan, err
	}
	return plan, Deliver(ctx, g, store, DeliverOptions{Dir: dir, Branch: branch})
}
