// Package loginname is what a host-held login may be called: the rule the login store names
// its files by (package login) and policy's agent_login key is checked against.
//
// It is apart from package login so that policy, which the front on PATH links for
// `git corral sandbox`, does not link login's OAuth refresh and with it net/http and TLS
// (cmd/git-corral-front TestFrontLinksNoNetwork).
package loginname

import (
	"errors"
	"fmt"

	"github.com/git-corral/git-corral/internal/lazyre"
)

// ErrBad is the error of a name that is not a login name.
var ErrBad = errors.New("a login name is lower-case letters, digits and '-' (at most 63)")

var nameRE = lazyre.New(`^[a-z0-9][a-z0-9-]{0,62}$`)

// Check checks a login name (it becomes a file name; "none" is agent_login's word for no
// login).
func Check(name string) error {
	if !nameRE.MatchString(name) || name == "none" {
		return fmt.Errorf("login %q: %w", name, ErrBad)
	}
	return nil
}
