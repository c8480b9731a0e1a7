package report

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/git-corral/git-corral/audit"
	"github.com/git-corral/git-corral/policy"
)

// TestPolicyAtSessionStart: a session whose start record names a stored policy snapshot is
// reported with that policy, not the configuration in force when the report is made (timeout was
// 3m at the start, 5m now); the control, a session without one, shows the configuration loaded
// now and says so; a snapshot edited after it was stored is refused, naming the digests.
func TestPolicyAtSessionStart(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	o := f.options()
	must(t, os.WriteFile(f.home.GlobalConfig(), []byte("timeout = \"3m\"\n"), 0o600))
	eff, err := policy.Load(ctx, o.Policy)
	must(t, err)
	snap, err := eff.Snapshot()
	must(t, err)
	raw, err := json.Marshal(snap)
	must(t, err)
	must(t, os.MkdirAll(f.home.PolicySnapshots(), 0o700))
	must(t, os.WriteFile(f.home.PolicySnapshot(snap.Digest), raw, 0o600))
	must(t, os.WriteFile(f.home.GlobalConfig(), []byte("timeout = \"5m\"\n"), 0o600))

	// Control: the last session (no digest, as before sessions stored one) is reported with
	// the configuration of now.
	rec, _ := encoded(t, o)
	if p := rec.Sections.Policy; p.At != "report" || p.Session != "" || !hasSetting(p, "timeout", "5m0s") {
		t.Fatalf("a session without a stored policy: at %q session %q settings %+v, want the configuration of now (timeout 5m)", p.At, p.Session, p.Settings)
	}

	start := t1.Add(time.Minute)
	lg := &audit.Log{Path: f.home.SessionsLog()}
	must(t, lg.Append(ctx, audit.Record{Time: start, Event: audit.EventStart, Box: f.box, PID: 102, Detail: "git corral run", PolicyDigest: snap.Digest}))
	must(t, lg.Append(ctx, audit.Record{Time: start.Add(time.Second), Event: audit.EventExit, Box: f.box, PID: 102, ExitCode: code(0)}))
	rec, _ = encoded(t, o)
	p := rec.Sections.Policy
	id := SessionID(audit.Record{Time: start, PID: 102})
	if p.At != "session start" || p.Session != id || p.Digest != snap.Digest || !hasSetting(p, "timeout", "3m0s") || hasSetting(p, "timeout", "5m0s") {
		t.Fatalf("at %q session %q digest %s settings %+v, want session %s's start policy %s (timeout 3m)", p.At, p.Session, p.Digest, p.Settings, id, snap.Digest)
	}
	if got := rec.Sections.Sessions[0].PolicyDigest; got != snap.Digest {
		t.Fatalf("the session names policy %q, want %q", got, snap.Digest)
	}

	edited := strings.Replace(string(raw), `"value":"3m0s"`, `"value":"9m0s"`, 1)
	if edited == string(raw) {
		t.Fatalf("the snapshot has no timeout value 3m0s to edit: %s", raw)
	}
	must(t, os.WriteFile(f.home.PolicySnapshot(snap.Digest), []byte(edited), 0o600))
	rec, _ = encoded(t, o)
	if p := rec.Sections.Policy; len(p.Settings) != 0 || !strings.Contains(p.Unavailable, "does not hold") {
		t.Fatalf("an edited snapshot was reported: unavailable %q, settings %+v", p.Unavailable, p.Settings)
	}
}
