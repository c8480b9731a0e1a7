package report

// Sessions from the audit log ($CORRAL_HOME/logs/sessions.jsonl, package audit). Rules:
//   - A session is one session command's process: its "start" record (written before any box
//     boots) opens it, and the records of the same box and PID after it are its own: "launch"
//     (a guest command), "exit" (its status; the first exit ends the session),
//     "guard-failure" (ends it, nothing ran) and "shadow-restore".
//   - Its ID is the start record's UTC time to the second and its PID, "20261205T101112Z-4242",
//     which the log alone determines.
//   - A session with no end record ends, for its window, at the next start of the box, or is
//     open until the report's time.
//   - Records of the box from other processes inside a session's window (a watcher's stop) are
//     its events too; sessions whose windows overlap name each other, because the egress log
//     is per box, not per session.
//   - Commands keep their name, argument count and the sha256 of the argv; never the argv.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/git-corral/git-corral/audit"
	"github.com/git-corral/git-corral/internal/visible"
)

// SessionID is the ID of the session a start record opens.
func SessionID(start audit.Record) string {
	return fmt.Sprintf("%s-%d", start.Time.UTC().Format("20060102T150405Z"), start.PID)
}

// sessionsOf groups the box's records (oldest first) into sessions; now ends open ones.
func sessionsOf(recs []audit.Record, now time.Time) []Session {
	var out []Session
	for i, r := range recs {
		if r.Event != audit.EventStart {
			continue
		}
		s := Session{ID: SessionID(r), Command: r.Detail, Start: r.Time, PID: r.PID, Network: r.Network,
			Profile: r.Profile, EnvNames: names(r.EnvNames), SSHAgent: r.SSHAgent, PolicyDigest: r.PolicyDigest,
			Commands: []Command{}, Events: []Event{}}
		var next time.Time // the box's next session start by another process
		for _, o := range recs[i+1:] {
			if o.PID != r.PID {
				if o.Event == audit.EventStart && next.IsZero() {
					next = o.Time
				}
				continue
			}
			if o.Event == audit.EventStart || s.Ended != "" {
				break // the same PID again opens a new session
			}
			s.add(o)
		}
		switch {
		case s.Ended != "":
		case !next.IsZero():
			s.End = next
		default:
			s.End = now
		}
		out = append(out, s)
	}
	otherEvents(out, recs)
	markOverlaps(out)
	return out
}

// add takes one of the session's own records.
func (s *Session) add(r audit.Record) {
	switch r.Event {
	case audit.EventLaunch:
		s.Commands = append(s.Commands, commandOf(r))
	case audit.EventExit:
		if n := len(s.Commands); n > 0 && s.Commands[n-1].ExitCode == nil {
			s.Commands[n-1].ExitCode, s.Commands[n-1].DurationMs = r.ExitCode, r.DurationMs
		}
		s.End, s.Ended = r.Time, "exit"
	case audit.EventGuardFailure:
		s.Events = append(s.Events, eventOf(r))
		s.End, s.Ended = r.Time, "guard-failure"
	default:
		s.Events = append(s.Events, eventOf(r))
	}
}

// otherEvents adds the box's records from other processes inside each session's window.
func otherEvents(ss []Session, recs []audit.Record) {
	for i := range ss {
		s := &ss[i]
		for _, r := range recs {
			if r.PID == s.PID || r.Event == audit.EventStart || r.Event == audit.EventLaunch || r.Event == audit.EventExit {
				continue
			}
			if !r.Time.Before(s.Start) && !r.Time.After(s.End) {
				s.Events = append(s.Events, eventOf(r))
			}
		}
	}
}

func markOverlaps(ss []Session) {
	for i := range ss {
		for j := range ss {
			if i != j && ss[i].Start.Before(ss[j].End) && ss[j].Start.Before(ss[i].End) {
				ss[i].Overlaps = append(ss[i].Overlaps, ss[j].ID)
			}
		}
	}
}

func commandOf(r audit.Record) Command {
	c := Command{Time: r.Time, EnvNames: names(r.EnvNames), SSHAgent: r.SSHAgent, ArgvSHA256: argvHash(r.Argv)}
	if len(r.Argv) > 0 {
		c.Name, c.Args = visible.String(path.Base(r.Argv[0])), len(r.Argv)-1
	}
	return c
}

func eventOf(r audit.Record) Event {
	return Event{Time: r.Time, Event: string(r.Event), PID: r.PID, Detail: visible.String(r.Detail)}
}

// argvHash is the sha256 of argv joined by NUL bytes (no argument holds one).
func argvHash(argv []string) string {
	s := sha256.Sum256([]byte(strings.Join(argv, "\x00")))
	return "sha256:" + hex.EncodeToString(s[:])
}

func names(n []string) []string {
	if n == nil {
		return []string{}
	}
	return n
}
