package vm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/git-corral/git-corral/internal/visible"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/provision"
)

// ErrGuard is returned when the guest's guard check refuses a session.
var ErrGuard = errors.New("guard check failed")

// GuardOutcome is what CheckGuards decided.
type GuardOutcome struct {
	// Report is the guard check's answer; zero when the check is absent.
	Report provision.GuardReport
	// Absent is true when the box has no guard check and none was expected (full mode, empty
	// bundle): the session runs unguarded and the caller says so.
	Absent bool
}

// Outputter is the part of the session client CheckGuards needs.
type Outputter interface {
	Output(ctx context.Context, argv []string) ([]byte, int, error)
}

// CheckGuards runs the guest's guard check (provision.GuardCheckArgv) in one round trip and
// refuses the session, naming each failing guard, unless every guard holds. A missing or
// unreadable guard check refuses in broker and offline modes, and whenever the box's bundle
// rendered guest scripts (their guards were supposed to be there). Only a full-mode box with an
// empty bundle — nothing was rendered, so nothing can be checked — runs without one, and the
// outcome says so.
func CheckGuards(ctx context.Context, c Outputter, network policy.Network, bundle provision.Bundle) (GuardOutcome, error) {
	argv := provision.GuardCheckArgv()
	out, code, err := c.Output(ctx, argv)
	if err != nil {
		return GuardOutcome{}, fmt.Errorf("run guard check %s: %w", strings.Join(argv, " "), err)
	}
	rep, perr := provision.ParseGuardReport(out)
	if perr != nil {
		if network == policy.NetworkFull && len(bundle.Scripts) == 0 {
			return GuardOutcome{Absent: true}, nil
		}
		return GuardOutcome{}, fmt.Errorf("%w: the guard check %s is missing or unreadable in the box (exit %d), so the %s-mode guards cannot be verified",
			ErrGuard, argv[len(argv)-1], code, network)
	}
	if !rep.OK || code != 0 {
		f := rep.Failures
		if len(f) == 0 {
			f = []string{fmt.Sprintf("guard check exited %d without naming a guard", code)}
		}
		return GuardOutcome{Report: rep}, fmt.Errorf("%w: %s", ErrGuard, strings.Join(f, "; "))
	}
	return GuardOutcome{Report: rep}, CheckReportMode(rep, network)
}

// CheckReportMode refuses a passing guard report whose network mode is not the one the host
// runs the session for (the box's own, from its metadata): the guards that held are another
// mode's, and the boundary is not the one the host shows and logs.
func CheckReportMode(rep provision.GuardReport, network policy.Network) error {
	if rep.Mode != string(network) {
		return fmt.Errorf("%w: the box's guards are those of network %q, and this session is for network %q: "+
			"the box was not made for this mode ('git corral delete --yes', then start again)", ErrGuard, visible.String(rep.Mode), network)
	}
	return nil
}

// ErrNoGuardDaemon is wrapped by GuardReport when the box has no resident guard daemon to ask
// (a box rendered before it existed, or one without guest guards): the caller checks another
// way.
var ErrNoGuardDaemon = errors.New("no guard daemon in the box")

// guardReportTimeout bounds the wait for the daemon's answer.
const guardReportTimeout = 20 * time.Second

// GuardReport asks the guest's resident guard daemon at socketPath (provision.GuardSocketPath),
// through the SSH connection's stream-local forwarding, for its report on this connection's
// credentials, and returns the outcome like CheckGuards. No process starts in the guest.
func (c *Client) GuardReport(ctx context.Context, socketPath string) (GuardOutcome, error) {
	conn, err := c.ssh.Dial("unix", socketPath)
	if err != nil {
		var oe *ssh.OpenChannelError
		if errors.As(err, &oe) {
			return GuardOutcome{}, fmt.Errorf("%w: %s", ErrNoGuardDaemon, visible.String(oe.Message))
		}
		return GuardOutcome{}, c.connErr("ask the guard daemon", err)
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	t := time.AfterFunc(guardReportTimeout, func() { conn.Close() })
	defer t.Stop()
	out, err := io.ReadAll(io.LimitReader(conn, 1<<20))
	conn.Close()
	if err != nil && !errors.Is(err, io.EOF) {
		return GuardOutcome{}, c.connErr("read the guard daemon's report", err)
	}
	rep, err := provision.ParseGuardReport(out)
	if err != nil {
		return GuardOutcome{}, fmt.Errorf("%w: the guard daemon's report is unreadable: %v", ErrGuard, err)
	}
	if !rep.OK {
		f := rep.Failures
		if len(f) == 0 {
			f = []string{"the guard daemon refused without naming a guard"}
		}
		return GuardOutcome{Report: rep}, fmt.Errorf("%w: %s", ErrGuard, strings.Join(f, "; "))
	}
	return GuardOutcome{Report: rep}, nil
}
