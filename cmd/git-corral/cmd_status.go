package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/internal/visible"
	"github.com/git-corral/git-corral/session"
)

func defineStatus(fs *pflag.FlagSet) runFunc {
	jsonOut := fs.Bool("json", false, "print one JSON document")
	return func(ctx context.Context, a *app, args []string) error {
		if len(args) > 0 {
			return usageErrorf("status", "status takes no arguments")
		}
		box, err := a.boxName(ctx)
		if err != nil {
			return err
		}
		dir, err := a.workDir()
		if err != nil {
			return err
		}
		h, err := home.Resolve(a.getenv)
		if err != nil {
			return err
		}
		m, merr := a.manager() // nil without limactl (or as root): the files still tell a lot
		if merr != nil {
			m = nil
		}
		r, err := session.Status(ctx, h, m, box, dir)
		if err != nil {
			return err
		}
		if merr != nil {
			r.Problems = append(r.Problems, "state read from Lima's files only: "+merr.Error())
		}
		if *jsonOut {
			return a.printJSON(r)
		}
		printStatus(a.stdout, r)
		return nil
	}
}

// printStatus writes the report one fact per line, like git status: the box and its state
// first, then what runs beside it, then what it recorded.
func printStatus(w io.Writer, r session.StatusReport) {
	line := func(label, format string, v ...any) {
		fmt.Fprintf(w, "%-11s %s\n", label+":", fmt.Sprintf(format, v...))
	}
	line("box", "%s", r.Box)
	switch {
	case !r.Exists:
		line("state", "not created")
	case r.State != "":
		line("state", "%s", lowerFirst(r.State))
	case r.Running:
		line("state", "running")
	default:
		line("state", "not running")
	}
	if r.Network != "" {
		line("network", "%s", r.Network)
	}
	if r.Broker.Port != 0 {
		line("broker", "%s on 127.0.0.1:%d%s", map[bool]string{true: "running", false: "not running"}[r.Broker.Running], r.Broker.Port, pidNote(r.Broker.PID))
	}
	if g := r.LastGuard; g != nil {
		verdict := "passed"
		if !g.Passed {
			verdict = "FAILED"
		}
		line("guards", "%s %s%s", verdict, stamp(g.Time), note(visible.String(g.Detail)))
	} else {
		line("guards", "no check recorded")
	}
	line("sessions", "%s", sessionsText(r.Sessions))
	if len(r.ForwardedPorts) == 0 {
		line("ports", "none forwarded")
	} else {
		line("ports", "%s (127.0.0.1 only; 'git corral ports')", portList(r.ForwardedPorts))
	}
	if r.Exists {
		line("disk", "%s (box disk %s)", bytesText(r.Disk.InstanceBytes), bytesText(r.Disk.DiffDiskBytes))
	}
	if r.Golden != "" {
		line("golden", "%s", visible.String(r.Golden))
	}
	if len(r.Denials) == 0 {
		line("denials", "none logged")
	} else {
		line("denials", "%d newest, newest first ('git corral egress --denials N' shows more)", len(r.Denials))
		for _, d := range r.Denials {
			fmt.Fprintf(w, "  %s  %s  %s\n", stamp(d.Time), visible.String(hostPort(d.Host, d.Port)), visible.String(d.Reason))
		}
	}
	for _, p := range r.Problems {
		line("problem", "%s", visible.String(p))
	}
	if r.Hint != "" {
		line("hint", "%s", r.Hint)
	}
}

func sessionsText(s session.SessionState) string {
	out := "none open"
	if s.Open {
		out = "open"
	}
	if s.LastActive != nil && !s.Open {
		out += ", last active " + stamp(*s.LastActive)
	}
	if s.ConnectionHolder {
		out += "; connection holder running"
	}
	return out
}

func stamp(t time.Time) string { return t.Local().Format(time.DateTime) }

func note(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

func pidNote(pid int) string {
	if pid == 0 {
		return ""
	}
	return fmt.Sprintf(" (pid %d)", pid)
}

func lowerFirst(s string) string {
	if s == "" || s[0] < 'A' || s[0] > 'Z' {
		return s
	}
	return string(s[0]+'a'-'A') + s[1:]
}

// bytesText writes n in binary units with one decimal, as du -h does.
func bytesText(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for v := n / unit; v >= unit; v /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
