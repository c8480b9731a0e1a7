package session

import (
	"context"
	"errors"

	"github.com/git-corral/git-corral/audit"
	"github.com/git-corral/git-corral/internal/hint"
	"github.com/git-corral/git-corral/vm"
)

// guardCheck runs the guest guard check the best way the box allows: the resident guard
// daemon's report (vm.Client.GuardReport: no process starts in the guest, and the box user
// cannot forge it); on a box without the daemon, in-band when inbandOK (it returns true and the
// caller runs the command with the check before it), else in a session of its own. daemon,
// when set, is the daemon's answer already read on c. CORRAL_GUARD_CHECK=daemon, inband or
// separate forces one way, for tests and diagnosis.
func (b *Box) guardCheck(ctx context.Context, c *vm.Client, inbandOK bool, daemon *daemonAnswer) (inband bool, err error) {
	how := b.req.getenv("CORRAL_GUARD_CHECK")
	switch how {
	case "", "daemon":
		var a daemonAnswer
		if daemon != nil { // asked already, on this connection (prefetchGuard)
			a = *daemon
		} else {
			a.out, a.err = c.GuardReport(ctx, b.guardSocketPath())
		}
		if a.err == nil {
			a.err = vm.CheckReportMode(a.out.Report, b.Config.Network)
		}
		if !errors.Is(a.err, vm.ErrNoGuardDaemon) || how == "daemon" {
			return false, a.err
		}
	case "inband", "separate":
	default:
		return false, usageErrorf("CORRAL_GUARD_CHECK=%q: want daemon, inband or separate", how)
	}
	if inbandOK && how != "separate" {
		return true, nil
	}
	return false, b.separateGuardCheck(ctx, c)
}

// daemonAnswer is what the guard daemon answered: its report, or why there is none.
type daemonAnswer struct {
	out vm.GuardOutcome
	err error
}

// separateGuardCheck runs the guest guard check in a session of its own (vm.CheckGuards).
func (b *Box) separateGuardCheck(ctx context.Context, c vm.Outputter) error {
	out, err := vm.CheckGuards(ctx, c, b.Config.Network, b.Bundle)
	if err == nil && out.Absent {
		b.req.notice("no guest guards are rendered for this box (full network, empty provision bundle): the session runs without a guard check")
	}
	return err
}

// guardFailed records a refused session in the audit log and returns the error to show.
func (b *Box) guardFailed(ctx context.Context, lg *audit.Log, rec audit.Record, err error) error {
	r := rec
	r.Event, r.Detail = audit.EventGuardFailure, err.Error()
	lg.Append(ctx, r)
	return hint.With(err, "the session was refused; 'git corral stop' then 'git corral start' re-applies the guards at boot")
}
