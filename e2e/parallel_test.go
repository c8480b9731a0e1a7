package e2e

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Scenario groups run side by side: each top-level test calls group first, which marks it
// parallel, and go test's -parallel (make e2e and make test pass $CORRAL_E2E_JOBS, default 2)
// bounds how many run at once. Under software emulation a booting box keeps the host's cores
// busy, but much of a group is waiting (on a guest's sshd, on Lima's readiness polls, on a
// command in one box while the other box idles), and a second group fills it: docs/E2E.md has
// the measured wall times of both ways. CORRAL_E2E_JOBS=1 runs the groups one after another.
//
// Groups share CORRAL_HOME, so boxes of the same recipe resume the same golden base (built once,
// under the product's own golden lock), and nothing in a group may reach past its own boxes:
// stopBrokers ends only its box's broker, and what a group sets for its commands' environment
// is its own (setGroupEnv).

// group marks t, a scenario group, as one that runs beside others.
func group(t *testing.T) {
	t.Helper()
	if jobs() > 1 {
		t.Parallel()
	}
}

// jobs is CORRAL_E2E_JOBS, 2 when unset or not a positive number.
func jobs() int {
	if n, err := strconv.Atoi(os.Getenv("CORRAL_E2E_JOBS")); err == nil && n > 0 {
		return n
	}
	return 2
}

// groupName is the scenario group (top-level test) t belongs to.
func groupName(t *testing.T) string {
	name, _, _ := strings.Cut(t.Name(), "/")
	return name
}

// groupEnvs holds what each group adds to the environment of every command it runs as the test
// user (a token its box's sessions need, an agent's key).
var groupEnvs sync.Map // group name → []string

// setGroupEnv sets env for every later command of t's group, until the group ends.
func setGroupEnv(t *testing.T, env ...string) {
	t.Helper()
	g := groupName(t)
	groupEnvs.Store(g, env)
	t.Cleanup(func() { groupEnvs.Delete(g) })
}

// groupEnv is what setGroupEnv set for t's group.
func groupEnv(t *testing.T) []string {
	if v, ok := groupEnvs.Load(groupName(t)); ok {
		return v.([]string)
	}
	return nil
}

// gate keeps the other groups' commands out of an argv watch's window: the watch judges every
// host process that lived 50 ms and whose command line it could not read, and a second group's
// processes (box boots, git, ssh) would only add to what it must read on a loaded machine. A
// group's commands enter the gate (runCmd); a watch holds it exclusively from its start to its
// stop, after the commands already running have ended; a waiting watch keeps new commands out.
// The watching group's own commands pass.
type gate struct {
	mu      sync.Mutex
	cond    *sync.Cond
	owner   string // the group holding the gate exclusively
	waiting int    // watches waiting for the gate
	inside  int    // commands of other groups running
}

var suiteGate = func() *gate { g := &gate{}; g.cond = sync.NewCond(&g.mu); return g }()

// enter waits until no other group's watch holds or waits for the gate, and returns the
// function that leaves it.
func (g *gate) enter(t *testing.T) (leave func()) {
	name := groupName(t)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.owner == name {
		return func() {}
	}
	for g.owner != "" || g.waiting > 0 {
		g.cond.Wait()
	}
	g.inside++
	return func() {
		g.mu.Lock()
		g.inside--
		g.cond.Broadcast()
		g.mu.Unlock()
	}
}

// exclusive waits until every other group's command has left the gate and holds it for t's
// group; release (safe to call twice) lets the others in again.
func (g *gate) exclusive(t *testing.T) (release func()) {
	name := groupName(t)
	g.mu.Lock()
	g.waiting++
	for g.owner != "" || g.inside > 0 {
		g.cond.Wait()
	}
	g.waiting--
	g.owner = name
	g.mu.Unlock()
	var once sync.Once
	release = func() {
		once.Do(func() {
			g.mu.Lock()
			g.owner = ""
			g.cond.Broadcast()
			g.mu.Unlock()
		})
	}
	t.Cleanup(release)
	return release
}

// projects maps each project directory name under $CORRAL_E2E_BASE/projects to the group that
// claimed it: groups side by side must not share a checkout (a box is named after its
// checkout, so they would share the box and its configuration too).
var projects sync.Map

// claimProject fails t when another group holds name; the claim ends with t, as the directory
// does (cloneCase removes it then).
func claimProject(t *testing.T, name string) {
	t.Helper()
	g := groupName(t)
	prev, loaded := projects.LoadOrStore(name, g)
	if loaded && prev.(string) != g {
		t.Fatalf("project %q is also %s's: each group needs project names of its own", name, prev)
	}
	if !loaded {
		t.Cleanup(func() { projects.CompareAndDelete(name, g) })
	}
}
