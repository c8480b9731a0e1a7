package session

import (
	"errors"
	"fmt"
	"io"

	"github.com/git-corral/git-corral/gitshadow"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/project"
	"github.com/git-corral/git-corral/provision"
	"github.com/git-corral/git-corral/vm"
)

// ErrUsage marks a command-line mistake found in the flow (main exits 129 for it):
// errors.Is(err, ErrUsage).
var ErrUsage = errors.New("usage")

// usageError is a command-line mistake; its text is the mistake alone.
type usageError struct{ err error }

func (e *usageError) Error() string        { return e.err.Error() }
func (e *usageError) Unwrap() error        { return e.err }
func (e *usageError) Is(target error) bool { return target == ErrUsage }

func usageErrorf(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// UI is how a session talks to the person at the terminal. cmd/git-corral hands it in; the
// session writes only through it.
type UI struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// IsTerminal reports whether a stream is a terminal.
	IsTerminal func(any) bool
	// Notice prints a one-line notice; Warn a one-line warning.
	Notice, Warn func(string)
	// Confirm, when set, is asked before a box is created; false refuses.
	Confirm func(box, dir string) (bool, error)
	// Progress shows the phases of creation and boot.
	Progress *vm.Progress
}

// Request is one command's way into a box.
type Request struct {
	// Cmd names the command in hints and in the audit start record ("start", "run", "clone").
	Cmd string
	// Dir is the directory the command acts on (-C applied).
	Dir string
	// Getenv reads the host environment (tests hand in their own).
	Getenv func(string) string
	// Network is --network: the flag layer of the configuration, "" for none.
	Network string
	// Env are the host variables named with --env.
	Env []string
	// Yes creates the box without asking; NoCreate fails when it does not exist; NoGolden
	// creates it from scratch rather than from its golden base.
	Yes, NoCreate, NoGolden bool
	UI                      UI
}

// Box is a running box a session can run in.
type Box struct {
	Manager *vm.Manager
	Name    string
	// Dir is where commands run in the guest: the project path (mounted) or the guest checkout.
	Dir    string
	Config *policy.Config
	Bundle provision.Bundle
	Status vm.Status
	// Project is the mounted checkout, nil for a box that mounts nothing of the host.
	Project *project.Project
	// Plan is the git shadow plan, nil when git metadata is not protected.
	Plan         *gitshadow.Plan
	BrokerPort   int
	BrokerSecret []byte
	// Agents are the box's agent mounts (agentbox.go); zero in clone mode.
	Agents vm.AgentMounts

	req      Request
	prefetch *guardPrefetch
	// early is the connection dialled while Lima waited for a starting box's last boot step
	// (dialEarly); nil when the box was running already.
	early *earlyConn
	// identity is git_identity as Open read it (identity.go); nil: read when needed.
	identity *identityRead
	// guardSocket is the guard daemon's socket in the guest; "" is provision.GuardSocketPath
	// (tests point it at a stand-in daemon).
	guardSocket string
	// guestSSHD is where Relay tunnels an editor's connection; "" is vm.GuestSSHDAddr (editor.go).
	guestSSHD string
}

// guardSocketPath is where b's guard daemon answers.
func (b *Box) guardSocketPath() string {
	if b.guardSocket != "" {
		return b.guardSocket
	}
	return provision.GuardSocketPath
}

func (r *Request) notice(msg string) {
	if r.UI.Notice != nil {
		r.UI.Notice(msg)
	}
}

func (r *Request) warn(msg string) {
	if r.UI.Warn != nil {
		r.UI.Warn(msg)
	}
}

func (r *Request) terminal(s any) bool {
	return r.UI.IsTerminal != nil && r.UI.IsTerminal(s)
}

// getenv reads the request's environment ("" without one).
func (r *Request) getenv(k string) string {
	if r.Getenv == nil {
		return ""
	}
	return r.Getenv(k)
}
