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
		if name, email, err = hostIdentity(ctx, dir); err != nil {
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

// identityRead is one GitIdentity call run in the background: Open starts it as soon as the
// configuration is loaded (its git process overlaps the rest of Open) and waits for it before
// any boot; the session's environment takes its result instead of asking git again.
type identityRead struct {
	mode, dir string
	done      chan struct{}
	vars      map[string]string
	host      bool
	missing   []string
	err       error
}

// readIdentity starts GitIdentity(ctx, mode, dir).
func readIdentity(ctx context.Context, mode, dir string) *identityRead {
	r := &identityRead{mode: mode, dir: dir, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.vars, r.host, r.missing, r.err = GitIdentity(ctx, mode, dir)
	}()
	return r
}

// result waits for the read and returns what GitIdentity returned.
func (r *identityRead) result() (map[string]string, bool, []string, error) {
	<-r.done
	return r.vars, r.host, r.missing, r.err
}

// gitIdentity is GitIdentity for b's session: what Open read, when it read it for the same
// mode and directory, else a new read.
func (b *Box) gitIdentity(ctx context.Context) (map[string]string, bool, []string, error) {
	if r := b.identity; r != nil && r.mode == b.Config.GitIdentity && r.dir == b.hostDir() {
		return r.result()
	}
	return GitIdentity(ctx, b.Config.GitIdentity, b.hostDir())
}

// hostIdentity is the host's user.name and user.email as `git config --get` gives each in dir
// ("" when unset: the last value of each, includes and the global file counted), read with
// one git process (one is tens of milliseconds on the path of every command): each value one
// line, no control characters. Without a checkout (clone mode: the host has no working tree
// of the code) only the user's global configuration is read.
func hostIdentity(ctx context.Context, dir string) (name, email string, err error) {
	args := []string{"config", "-z", "--get-regexp", `^user\.(name|email)$`}
	if dir == "" {
		args = []string{"config", "--global", "-z", "--get-regexp", `^user\.(name|email)$`}
	}
	out, err := gitcli.Git{Dir: dir}.Output(ctx, args...)
	var ge *gitcli.Error
	if errors.As(err, &ge) && ge.ExitCode == 1 {
		return "", "", nil // neither is set
	}
	if err != nil {
		return "", "", fmt.Errorf("git_identity = \"host\": read the host's user.name and user.email: %w", err)
	}
	for _, e := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		key, v, _ := strings.Cut(e, "\n") // -z: KEY, a newline, the value
		if strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return "", "", fmt.Errorf("git_identity = \"host\": the host's %s %q has control characters", key, v)
		}
		switch key {
		case "user.name":
			name = v
		case "user.email":
			email = v
		}
	}
	return name, email, nil
}

// hostDir is where the host's git is asked for git_identity: the checkout, or "" in clone
// mode (the user's global configuration only).
func (b *Box) hostDir() string {
	if b.Project != nil {
		return b.Project.TopLevel
	}
	return ""
}
