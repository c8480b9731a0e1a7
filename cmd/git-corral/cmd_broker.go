package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/git-corral/git-corral/broker"
	"github.com/git-corral/git-corral/clone"
	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/project"
)

// brokerSecretEnv is the environment variable a parent can pass the box's proxy secret in,
// instead of a file; it is read once and removed from the broker's environment.
const brokerSecretEnv = "CORRAL_BROKER_SECRET"

func defineBroker(fs *pflag.FlagSet) runFunc {
	listen := fs.String("listen", "127.0.0.1:0", "loopback address to listen on")
	allow := fs.StringArray("allow", nil, "allow-list entries, comma-separated; repeatable")
	secretFile := fs.String("secret-file", "", "file holding the proxy secret (- for stdin)")
	logFile := fs.String("log", "", "egress log file")
	maxTunnels := fs.Int("max-tunnels", 0, "concurrent tunnel cap")
	rate := fs.Float64("rate", 0, "requests per second")
	apiFile := fs.String("api-routes", "", "JSON file of API broker routes (mode 600), or the pipe start hands it")
	fs.String("api-routes-digest", "", "identifies the routes of --api-routes, so start can tell when they changed (an HMAC; not secret)")
	return func(ctx context.Context, a *app, args []string) error {
		if len(args) != 1 || args[0] != "serve" {
			return usageErrorf("broker", "broker takes one verb: serve")
		}
		box, err := a.boxName(ctx)
		if err != nil {
			return err
		}
		secret, err := a.brokerSecret(*secretFile)
		if err != nil {
			return err
		}
		routes, err := readAPIRoutes(*apiFile)
		if err != nil {
			return err
		}
		lg, err := a.openEgressLog(ctx, box, *logFile)
		if err != nil {
			return err
		}
		defer lg.Close()
		diag := log.New(a.stderr, "broker: ", log.LstdFlags|log.LUTC)
		testHosts, err := brokerTestHosts(a.getenv, diag)
		if err != nil {
			return err
		}
		b, err := broker.New(broker.Config{
			Box: box, Allow: splitAllow(*allow), Secret: secret, Log: lg,
			Limits: broker.Limits{MaxTunnels: *maxTunnels, Rate: *rate, Burst: int(2 * *rate)}, Logf: diag.Printf,
			APIRoutes: routes, TestHosts: testHosts,
		})
		if err != nil {
			return withHint(err, "fix the egress entries in the trusted configuration")
		}
		ln, err := broker.Listen(ctx, *listen)
		if err != nil {
			return usageErrorf("broker", "%v", err)
		}
		fmt.Fprintln(a.stdout, ln.Addr())
		if f, ok := a.stdout.(*os.File); ok {
			f.Sync()
		}
		ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
		return b.Serve(ctx, ln)
	}
}

// brokerTestHosts reads the test seam $CORRAL_TEST_BROKER_HOSTS (broker/testhosts.go) from this
// process's environment, the host's, which no configuration file sets; its use is logged.
func brokerTestHosts(getenv func(string) string, diag *log.Logger) (map[string][]netip.Addr, error) {
	spec := getenv(broker.TestHostsEnv)
	if spec == "" {
		return nil, nil
	}
	hosts, err := broker.ParseTestHosts(spec)
	if err != nil {
		return nil, withHint(err, "unset it: it is a test seam for end-to-end tests (docs/E2E.md)")
	}
	diag.Printf("test seam $%s: fixed loopback answers for %d names (end-to-end tests only)", broker.TestHostsEnv, len(hosts))
	return hosts, nil
}

// splitAllow flattens repeated, comma-separated --allow values.
func splitAllow(vals []string) []string {
	var out []string
	for _, v := range vals {
		for _, e := range strings.Split(v, ",") {
			if e = strings.TrimSpace(e); e != "" {
				out = append(out, e)
			}
		}
	}
	return out
}

// boxName is --box (which must look like a box name, since it becomes part of file names), or
// the box of the current repository.
func (a *app) boxName(ctx context.Context) (string, error) {
	if a.box != "" {
		if !validBoxName(a.box) {
			return "", usageErrorf("", "--box %q is not a box name (lower-case letters, digits and '-')", a.box)
		}
		return a.box, nil
	}
	if box, ok, err := a.cloneDirBox(); ok || err != nil {
		return box, err
	}
	p, err := a.project(ctx)
	if err != nil {
		return "", err
	}
	return p.Box, nil
}

// cloneDirBox is the box of the clone directory the command runs in (one holding a clone
// record, at or above the working directory), as run and start find it (session.Open): status,
// stop, delete and every other command taking the current box work there as in a checkout.
// ok is false outside a clone directory.
func (a *app) cloneDirBox() (box string, ok bool, err error) {
	dir, err := a.workDir()
	if err != nil {
		return "", false, err
	}
	cdir, _, err := clone.FindRecord(dir)
	if errors.Is(err, clone.ErrNoRecord) {
		return "", false, nil
	}
	if err != nil {
		return "", true, err
	}
	real, err := filepath.EvalSymlinks(cdir)
	if err != nil {
		return "", true, err
	}
	return project.BoxName(real), true, nil
}

// brokerSecret reads the proxy secret from --secret-file (a file that only its owner can read,
// or - for stdin, or an inherited /dev/fd/N) or from $CORRAL_BROKER_SECRET. It is never taken
// from the command line, where other local users could read it.
func (a *app) brokerSecret(file string) ([]byte, error) {
	var data []byte
	switch {
	case file == "-":
		b, err := io.ReadAll(io.LimitReader(a.stdin, 4096))
		if err != nil {
			return nil, fmt.Errorf("read broker secret from stdin: %w", err)
		}
		data = b
	case file != "":
		b, err := readPrivate("broker secret", file)
		if err != nil {
			return nil, err
		}
		data = b
	default:
		data = []byte(a.getenv(brokerSecretEnv))
		os.Unsetenv(brokerSecretEnv)
	}
	secret := []byte(strings.TrimRight(string(data), "\r\n"))
	if len(secret) < 16 {
		return nil, withHint(errors.New("broker secret missing or shorter than 16 bytes"),
			"give it with --secret-file FILE (mode 600), --secret-file - (stdin) or $"+brokerSecretEnv+"; never on the command line")
	}
	return secret, nil
}

// readPrivate reads a file that holds secrets, refusing one that others can read.
func readPrivate(what, file string) ([]byte, error) {
	fi, err := os.Stat(file)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	if fi.Mode().IsRegular() && fi.Mode().Perm()&0o077 != 0 {
		return nil, withHint(fmt.Errorf("%s file %q is readable by other users (mode %v)", what, file, fi.Mode().Perm()), fmt.Sprintf("run 'chmod 600 %s'", file))
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	return data, nil
}

// readAPIRoutes reads --api-routes: a JSON array of broker.APIRoute, unknown keys refused.
func readAPIRoutes(file string) ([]broker.APIRoute, error) {
	if file == "" {
		return nil, nil
	}
	data, err := readPrivate("api routes", file)
	if err != nil {
		return nil, err
	}
	var routes []broker.APIRoute
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&routes); err != nil {
		return nil, withHint(fmt.Errorf("read api routes %s: %w", file, err), `the file is a JSON array of {"name", "upstream", "header", "value", "allow"}`)
	}
	return routes, nil
}

// openEgressLog opens --log, or the box's log under $CORRAL_HOME.
func (a *app) openEgressLog(ctx context.Context, box, file string) (*broker.Log, error) {
	if file == "" {
		h, err := home.Resolve(a.getenv)
		if err != nil {
			return nil, err
		}
		if err := h.MkdirAll(h.Logs()); err != nil {
			return nil, err
		}
		file = h.EgressLog(box)
	}
	return broker.OpenLog(ctx, file, 0)
}

// validBoxName accepts what project.BoxName produces: [a-z0-9] and inner hyphens, at most 64.
func validBoxName(s string) bool {
	if s == "" || len(s) > 64 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
