package session

import (
	"context"
	"fmt"
	"io"

	"github.com/git-corral/git-corral/audit"
	"github.com/git-corral/git-corral/gitshadow"
	"github.com/git-corral/git-corral/internal/visible"
)

// Report returns the OnChange callback of a session: it prints each git metadata change as a
// warning on w (escaped, since paths come from the box) and appends it to lg as a
// shadow-restore record built from rec.
func Report(w io.Writer, lg *audit.Log, rec audit.Record) func(gitshadow.Change) {
	return func(c gitshadow.Change) {
		state := "restored"
		if !c.Restored {
			state = "NOT RESTORED"
		}
		msg := fmt.Sprintf("git metadata %s by the box, %s: %s", c.What, state, c.Path)
		if c.Quarantine != "" {
			msg += " (the box's version is kept in " + c.Quarantine + ")"
		}
		fmt.Fprintf(w, "corral: warning: %s\n", visible.String(msg))
		r := rec
		r.Event, r.Detail = audit.EventShadowRestore, msg
		lg.Append(context.Background(), r)
	}
}
