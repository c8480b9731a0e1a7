package policy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-corral/git-corral/home"
)

// testBox is the box name tests load for.
const testBox = "proj-abc123"

// testHost is the host the repository's resource requests are capped against.
var testHost = &HostLimits{CPUs: 4, Memory: 8 << 30, Disk: 100 << 30}

// fixture is a home and a repository top level in a temporary directory.
type fixture struct {
	t    *testing.T
	home home.Home
	top  string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	root := t.TempDir()
	f := &fixture{t: t, home: home.Home{Dir: filepath.Join(root, "corral")}, top: filepath.Join(root, "repo")}
	for _, d := range []string{f.top, filepath.Join(f.home.Dir, "projects")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// write writes a file relative to the fixture root ("repo/…" or "corral/…").
func (f *fixture) write(rel, content string) string {
	f.t.Helper()
	p := filepath.Join(filepath.Dir(f.top), rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
	return p
}

func (f *fixture) repo(content string) string   { return f.write("repo/.corral.toml", content) }
func (f *fixture) global(content string) string { return f.write("corral/config.toml", content) }
func (f *fixture) project(content string) string {
	return f.write("corral/projects/"+testBox+".toml", content)
}

// load runs Load with a deadline and fails the test when it hangs or panics.
func (f *fixture) load(flags ...Flag) (*Effective, error) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	type result struct {
		eff *Effective
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- result{err: errors.New("PANIC: " + strings.TrimSpace(fmtAny(r)))}
			}
		}()
		eff, err := Load(ctx, LoadOptions{Home: f.home, TopLevel: f.top, Box: testBox, Flags: flags, Host: testHost})
		done <- result{eff, err}
	}()
	select {
	case r := <-done:
		if r.err != nil && strings.HasPrefix(r.err.Error(), "PANIC") {
			f.t.Fatal(r.err)
		}
		return r.eff, r.err
	case <-time.After(15 * time.Second):
		f.t.Fatal("Load hung")
		return nil, nil
	}
}

// mustLoad loads and fails the test on any error.
func (f *fixture) mustLoad(flags ...Flag) *Effective {
	f.t.Helper()
	eff, err := f.load(flags...)
	if err != nil {
		f.t.Fatalf("load: %v", err)
	}
	return eff
}

// violations loads and returns the violations, failing the test when the load succeeds or
// fails otherwise.
func (f *fixture) violations() []Violation {
	f.t.Helper()
	_, err := f.load()
	var vs *Violations
	if !errors.As(err, &vs) {
		f.t.Fatalf("load: want *Violations, got %v", err)
	}
	return vs.List
}

func fmtAny(v any) string { return fmt.Sprint(v) }
