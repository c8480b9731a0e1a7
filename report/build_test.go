package report

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/git-corral/git-corral/audit"
	"github.com/git-corral/git-corral/policy"
)

// TestBuildLastSession records the box's last session from the real logs and repository: its
// commands by name only, the egress decisions of its window with each refusal, the push
// decisions (entries with a ref), the diff verdict, the snapshots and commits of its window.
func TestBuildLastSession(t *testing.T) {
	f := newFixture(t)
	rec, b := encoded(t, f.options())
	s := rec.Sections
	s2 := SessionID(audit.Record{Time: t1, PID: 101})
	if s.Record.Kind != KindSession || s.Record.Session != s2 || s2 != "20260301T110000Z-101" {
		t.Fatalf("record = %+v, want the last session %s", s.Record, s2)
	}
	if len(s.Sessions) != 1 || s.Sessions[0].Ended != "exit" || !s.Sessions[0].End.Equal(t1.Add(30*time.Second)) {
		t.Fatalf("sessions = %+v", s.Sessions)
	}
	cmds := s.Sessions[0].Commands
	if len(cmds) != 1 || cmds[0].Name != "sh" || cmds[0].Args != 2 || cmds[0].ExitCode == nil || *cmds[0].ExitCode != 3 || cmds[0].ArgvSHA256 != argvHash([]string{"sh", "-c", "echo hi"}) {
		t.Fatalf("commands = %+v", cmds)
	}
	if ev := s.Sessions[0].Events; len(ev) != 1 || ev[0].Event != "shadow-restore" {
		t.Fatalf("events = %+v", ev)
	}
	if s.Egress.Counts["allow"] != 2 || s.Egress.Counts["deny"] != 2 || len(s.Egress.Refusals) != 2 {
		t.Fatalf("egress = %+v, want 2 allowed (proxy.golang.org, one push) and 2 refused (link-local, push to main)", s.Egress)
	}
	if r := s.Egress.Refusals[0]; r.Host != "metadata.example" || r.Addr != "169.254.169.254:80" || r.Reason != "address is link-local" {
		t.Fatalf("first refusal = %+v", r)
	}
	if len(s.Pushes.Entries) != 2 || s.Pushes.Counts["deny"] != 1 || s.Pushes.Counts["allow"] != 1 ||
		string(s.Pushes.Entries[0].Extra["ref"]) != `"refs/heads/main"` || s.Pushes.Entries[0].Decision != "deny" {
		t.Fatalf("pushes = %+v", s.Pushes)
	}
	if s.Diff.Verdict != "findings" || s.Policy.RepositoryFileChanged == nil || !*s.Policy.RepositoryFileChanged {
		t.Fatalf("diff = %+v, repositoryFileChanged = %v", s.Diff, s.Policy.RepositoryFileChanged)
	}
	if !hasFinding(s.Diff, "package.json") {
		t.Fatalf("diff findings = %+v, want package.json's postinstall", s.Diff.Findings)
	}
	if len(s.Snapshots.Taken) != 1 || s.Snapshots.Taken[0].Name != "auto-s2" {
		t.Fatalf("snapshots = %+v", s.Snapshots)
	}
	if len(s.Commits.Made) != 1 || s.Commits.Made[0].Summary != "box work" || len(s.Commits.FetchedRefs) != 1 ||
		s.Commits.FetchedRefs[0].Name != "refs/corral/"+f.box+"/feature" || s.Commits.FetchedRefs[0].Hash != s.Commits.Made[0].Hash {
		t.Fatalf("commits = %+v", s.Commits)
	}
	if s.Box.Image != "debian-12-abc" || s.Box.Mode != "mount" || s.Box.Golden == nil || s.Box.Golden.SHA256 != "aa11" || s.Box.Golden.Unavailable != "" {
		t.Fatalf("box = %+v golden %+v", s.Box, s.Box.Golden)
	}
	if s.Policy.Digest == "" || s.Policy.Unavailable != "" || !hasSetting(s.Policy, "env.API_HINT", policy.Redact(envSecret)) {
		t.Fatalf("policy = %+v", s.Policy)
	}
	for _, secret := range []string{argvSecret, envSecret} {
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("the record repeats the secret %q", secret)
		}
	}
	if fired := f.canaryFired(); len(fired) > 0 {
		t.Fatalf("building the record ran the repository's %v", fired)
	}
}

// TestBuildOlderSession picks a session by ID: only its window's decisions, snapshots and
// commits, the watcher's stop inside it, and no diff verdict (the work tree is the last
// session's).
func TestBuildOlderSession(t *testing.T) {
	f := newFixture(t)
	o := f.options()
	o.Session = "20260301T100000Z-100"
	rec, _ := encoded(t, o)
	s := rec.Sections
	if len(s.Sessions) != 1 || s.Sessions[0].ID != o.Session || s.Sessions[0].Command != "git corral start" {
		t.Fatalf("sessions = %+v", s.Sessions)
	}
	if c := s.Sessions[0].Commands; len(c) != 1 || c[0].Name != "claude" || c[0].Args != 1 || *c[0].ExitCode != 0 {
		t.Fatalf("commands = %+v", c)
	}
	if ev := s.Sessions[0].Events; len(ev) != 1 || ev[0].Event != "stop" || ev[0].PID != 200 {
		t.Fatalf("events = %+v, want the watcher's stop", ev)
	}
	if s.Egress.Counts["allow"] != 2 || s.Egress.Counts["deny"] != 1 || s.Egress.Refusals[0].Host != "evil.example" || len(s.Pushes.Entries) != 0 {
		t.Fatalf("egress = %+v pushes = %+v", s.Egress, s.Pushes)
	}
	if s.Diff.Verdict != "unavailable" || s.Policy.RepositoryFileChanged != nil || len(s.Snapshots.Taken) != 0 || len(s.Commits.Made) != 0 {
		t.Fatalf("diff %+v, snapshots %+v, commits %+v", s.Diff, s.Snapshots, s.Commits.Made)
	}
}

// TestBuildAll is the per-box record: every session, every decision of their window.
func TestBuildAll(t *testing.T) {
	f := newFixture(t)
	o := f.options()
	o.All = true
	rec, _ := encoded(t, o)
	s := rec.Sections
	if s.Record.Kind != KindBox || s.Record.Session != "" || len(s.Sessions) != 2 {
		t.Fatalf("record %+v with %d sessions", s.Record, len(s.Sessions))
	}
	if s.Egress.Counts["allow"] != 4 || s.Egress.Counts["deny"] != 3 {
		t.Fatalf("counts = %v: the decision before the first session must be left out", s.Egress.Counts)
	}
	if s.Diff.Verdict != "findings" || len(s.Commits.Made) != 1 || len(s.Snapshots.Taken) != 1 {
		t.Fatalf("diff %s, commits %d, snapshots %d", s.Diff.Verdict, len(s.Commits.Made), len(s.Snapshots.Taken))
	}
}

// TestBuildNoSession refuses a box with no session and an unknown ID, naming the last.
func TestBuildNoSession(t *testing.T) {
	f := newFixture(t)
	o := f.options()
	o.Session = "20990101T000000Z-1"
	_, err := Build(context.Background(), o)
	if !errors.Is(err, ErrNoSession) || !strings.Contains(err.Error(), "20260301T110000Z-101") {
		t.Fatalf("unknown ID: err = %v", err)
	}
	o = f.options()
	o.Box = "never-used"
	if _, err := Build(context.Background(), o); !errors.Is(err, ErrNoSession) {
		t.Fatalf("box without sessions: err = %v", err)
	}
}

// TestEncodeStable: the same records give the same bytes, in the documented member order.
func TestEncodeStable(t *testing.T) {
	f := newFixture(t)
	_, a := encoded(t, f.options())
	_, b := encoded(t, f.options())
	if !bytes.Equal(a, b) {
		t.Fatalf("two encodings of the same records differ")
	}
	doc := string(a)
	prev := -1
	for _, m := range []string{"{\n  \"format\": ", "\n  \"sections\": {", "\n  \"hashes\": {", "\n  \"digest\": "} {
		i := strings.Index(doc, m)
		if i <= prev {
			t.Fatalf("document member %q at %d, after %d: want format, sections, hashes, digest", m, i, prev)
		}
		prev = i
	}
	sections := strings.Index(string(a), `"sections"`)
	last := 0
	for _, n := range SectionNames {
		i := strings.Index(string(a[sections:]), "\n    \""+n+"\": ")
		if i < last {
			t.Fatalf("section %q is out of order (at %d, previous at %d)", n, i, last)
		}
		last = i
	}
}

func hasFinding(d Diff, path string) bool {
	for _, f := range d.Findings {
		if f.Path == path {
			return true
		}
	}
	return false
}

func hasSetting(p Policy, key string, val any) bool {
	for _, s := range p.Settings {
		if s.Key == key {
			return s.Value == val
		}
	}
	return false
}
