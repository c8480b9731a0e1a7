package sandbox

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/broker"
	"github.com/git-corral/git-corral/sandbox/netbroker"
)

// TestAllowed is the other half of the hostile table: what the manifest grants works, so that
// a sandbox that refuses everything cannot pass.
func TestAllowed(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name  string
		m     *Manifest
		probe []string
		want  string
	}{
		{"read a granted file", &Manifest{Read: []string{f.readDir}}, []string{"read", f.readDir + "/file"}, "ok"},
		{"write a granted directory", &Manifest{Write: []string{f.writeDir}}, []string{"write", f.writeDir + "/new"}, "ok"},
		{"write the scratch /tmp", nil, []string{"write", "/tmp/scratch"}, "ok"},
		{"exec a granted program", &Manifest{Exec: []string{"/usr/bin/id"}}, []string{"exec", "/usr/bin/id"}, "ok"},
		{"a passed variable", &Manifest{Env: []string{"CANARY_TOKEN"}}, []string{"env", "CANARY_TOKEN"}, "CANARY_TOKEN=s3cret-value"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, out := f.sandboxed(t, c.m, c.probe...)
			if res.Status != 0 || !strings.Contains(out, c.want) {
				t.Errorf("status %d, output %q; want 0 and %q", res.Status, out, c.want)
			}
		})
	}
	// A variable not passed is not there (its control is the case above).
	if res, out := f.sandboxed(t, nil, "env", "CANARY_TOKEN"); res.Status != 3 {
		t.Errorf("an unpassed variable: status %d, want 3:\n%s", res.Status, out)
	}
	b, err := os.ReadFile(LogPath(f.corral))
	must(t, err)
	if strings.Contains(string(b), "s3cret-value") {
		t.Error("the sandbox log holds a passed variable's value")
	}
}

// TestBroker reaches an allowed destination through the broker, and is refused another, with
// both decisions in the sandbox log.
func TestBroker(t *testing.T) {
	f := newFixture(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("canary")) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	m := &Manifest{Network: []string{"canary.test:" + port, "127.0.0.1:" + port}}
	var out strings.Builder
	run := func(url string) int {
		t.Helper()
		out.Reset()
		o := f.options(m, nil, "http", url)
		o.Stdout, o.Stderr = &out, &out
		o.Broker = netbroker.Broker{Resolver: fakeResolver{netip.MustParseAddr("127.0.0.1")}}
		res, err := Run(t.Context(), o)
		if err != nil {
			t.Fatalf("sandbox: %v\n%s", err, out.String())
		}
		return res.Status
	}
	if st := run("http://canary.test:" + port + "/"); st != 0 {
		t.Errorf("allowed destination: status %d, want 0:\n%s", st, out.String())
	}
	if st := run("http://other.test:" + port + "/"); st != 3 || !strings.Contains(out.String(), "status 403") {
		t.Errorf("refused destination: status %d, want 3 with the broker's 403:\n%s", st, out.String())
	}
	var allow, deny bool
	for _, l := range f.logLines(t) {
		allow = allow || (l["decision"] == "allow" && l["host"] == "canary.test" && l["port"] == float64(mustAtoi(port)))
		deny = deny || (l["decision"] == "deny" && l["host"] == "other.test")
	}
	if !allow || !deny {
		t.Errorf("the sandbox log has allow=%v for canary.test and deny=%v for other.test, want both", allow, deny)
	}
	c, err := ReadLog[broker.Entry](LogPath(f.corral))
	if err != nil || len(c.Runs) != 2 || len(c.Decisions) < 2 || c.Bad != 0 {
		t.Errorf("ReadLog: %d runs, %d decisions, %d bad lines, %v; want 2 runs, both decisions, none bad", len(c.Runs), len(c.Decisions), c.Bad, err)
	}
}

func mustAtoi(s string) int { n, _ := strconv.Atoi(s); return n }

// TestRunNeedsBroker: a run whose manifest grants network access, with no broker to serve it,
// fails before the command runs (ErrNeedsBroker, no output); the control runs the same probe
// with the broker.
func TestRunNeedsBroker(t *testing.T) {
	f := newFixture(t)
	var out strings.Builder
	o := f.options(&Manifest{Network: []string{"127.0.0.1:9"}}, nil, "print", "1")
	o.Stdout, o.Stderr = &out, &out
	if _, err := Run(t.Context(), o); !errors.Is(err, ErrNeedsBroker) || !errors.Is(err, ErrSetup) || out.Len() != 0 {
		t.Errorf("without a broker: %v, output %q; want ErrNeedsBroker before anything ran", err, out.String())
	}
	o.Broker = netbroker.Broker{}
	if res, err := Run(t.Context(), o); err != nil || res.Status != 0 || !strings.Contains(out.String(), "probe print: ok") {
		t.Errorf("control, with the broker: %v, output %q", err, out.String())
	}
}
