package session

// This file is git_identity: the author and committer every commit made in a session carries.
// Rules:
//   - The identity travels as GIT_AUTHOR_NAME, GIT_AUTHOR_EMAIL, GIT_COMMITTER_NAME and
//     GIT_COMMITTER_EMAIL in the session's SSH channel: per session, above anything the box's
//     own (box-writable) git config says, and nothing is written into the box.
//   - host: the host's user.name and user.email as the host's git reads them in the checkout
//     (git config, so includes and the global file count; in clone mode, where the host has
//     no checkout, the global file only). An unset one is not sent, with a notice: there is
//     nothing of the host to copy. These are host values: they are sent only once the box
//     passed its guard check.
//   - corral: CorralName and CorralEmail, the same for every box; nothing of the host.
//   - none: nothing is set; commits carry whatever the box's own configuration says.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/git-corral/git-corral/internal/gitcli"
)

// The fixed identity of git_identity = "corral".
const (
	CorralName  = "git corral"
	CorralEmail = "corral@git-corral.invalid"
)

// identityVars are the variables git reads the author and committer from.
var identityVars = [...]string{"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"}

// GitIdentity returns the session variables of git_identity mode for the checkout at dir;
// host says whether their values come from the host, missing names the host's unset keys.
func GitIdentity(ctx context.Context, mode, dir string) (vars map[string]string, host bool, missing []string, err error) {
	var name, email string
	switch mode {
	case "none", "":
		return nil, false, nil, nil
	case "corral":
		name, email = CorralName, CorralEmail
	case "host":
		if name, err = hostGitConfig(ctx, dir, "user.name"); err != nil {
			return nil, false, nil, err
		}
		if email, err = hostGitConfig(ctx, dir, "user.email"); err != nil {
			return nil, false, nil, err
		}
		host = true
	default:
		return nil, false, nil, fmt.Errorf("git_identity %q is not host, corral or none", mode)
	}
	vars = map[string]string{}
	for i, k := range identityVars {
		v := [...]string{name, email}[i%2]
		if v != "" {
			vars[k] = v
		}
	}
	for key, v := range map[string]string{"user.email": email, "user.name": name} {
		if v == "" {
			missing = append(missing, key)
		}
	}
	sort.Strings(missing)
	return vars, host, missing, nil
}

// hostGitConfig is `git config --get key` in dir on the host ("" when unset): one line, no
// control characters. Without a checkout (clone mode: the host has no working tree of the
// code) only the user's global configuration is read.
func hostGitConfig(ctx context.Context, dir, key string) (string, error) {
	args := []string{"config", "--get", key}
	if dir == "" {
		args = []string{"config", "--global", "--get", key}
	}
	out, err := gitcli.Git{Dir: dir}.Output(ctx, args...)
	var ge *gitcli.Error
	if errors.As(err, &ge) && ge.ExitCode == 1 {
		return "", nil // unset
	}
	if err != nil {
		return "", fmt.Errorf("git_identity = \"host\": read the host's %s: %w", key, err)
	}
	v := strings.TrimRight(string(out), "\n")
	if strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "", fmt.Errorf("git_identity = \"host\": the host's %s %q has control characters", key, v)
	}
	return v, nil
}

// hostDir is where the host's git is asked for git_identity: the checkout, or "" in clone
// mode (the user's global configuration only).
func (b *Box) hostDir() string {
	if b.Project != nil {
		return b.Project.TopLevel
	}
	return ""
}
