package gitshadow

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/git-corral/git-corral/project"
)

// benchModules is the number of submodules of the benchmark repository (DESIGN budget: the
// plan for 1,000 submodules in at most 0.5 s).
const benchModules = 1000

var (
	manyOnce sync.Once
	manyTop  string
	manyErr  error
)

// TestMain removes the benchmark repository, which outlives any one benchmark.
func TestMain(m *testing.M) {
	code := m.Run()
	if manyTop != "" {
		os.RemoveAll(filepath.Dir(manyTop))
	}
	os.Exit(code)
}

// manyRepo builds the benchmark repository once per test binary run, its submodules initialised
// (many.sh -i) so that git submodule status does its per-submodule work, or uses the one
// CORRAL_BENCH_MANY names (the top of a tree many.sh -i built), since building it takes minutes
// on a loaded machine.
func manyRepo(b *testing.B) string {
	if top := os.Getenv("CORRAL_BENCH_MANY"); top != "" {
		hermetic(b, b.TempDir())
		return top
	}
	manyOnce.Do(func() {
		dir, err := os.MkdirTemp("", "gitshadow-bench-*")
		if err != nil {
			manyErr = err
			return
		}
		hermetic(b, dir)
		script, _ := filepath.Abs("testdata/many.sh")
		out, err := exec.Command("sh", "-eu", script, "-i", strconv.Itoa(benchModules), dir).CombinedOutput()
		if err != nil {
			manyErr = err
			b.Logf("%s", out)
		}
		manyTop = filepath.Join(dir, "top")
	})
	if manyErr != nil {
		b.Fatal(manyErr)
	}
	return manyTop
}

// manyDiscover returns a function that runs Discover on the 1,000-submodule repository and
// checks that the plan has every git dir.
func manyDiscover(b *testing.B) func() *Plan {
	top := manyRepo(b)
	ctx := context.Background()
	p, err := project.Find(ctx, top)
	if err != nil {
		b.Fatal(err)
	}
	return func() *Plan {
		plan, err := Discover(ctx, p)
		if err != nil {
			b.Fatal(err)
		}
		if len(plan.GitDirs) != benchModules+1 {
			b.Fatalf("%d git dirs, want %d", len(plan.GitDirs), benchModules+1)
		}
		return plan
	}
}

// BenchmarkDiscover1000Submodules times Discover (and the plan it returns) for a repository
// with 1,000 absorbed submodules. Reproduce: see docs/benchmarks-history.md ## gitshadow.
func BenchmarkDiscover1000Submodules(b *testing.B) {
	discover := manyDiscover(b)
	for b.Loop() {
		discover()
	}
}

// BenchmarkSessionPlan1000Submodules times what a session start pays for the shadow of the same
// repository: Discover and the boot script rendered from its plan (session/render.go).
func BenchmarkSessionPlan1000Submodules(b *testing.B) {
	discover := manyDiscover(b)
	for b.Loop() {
		if _, err := discover().BootScript(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGuestScript1000Submodules times rendering the guest script for the same plan.
func BenchmarkGuestScript1000Submodules(b *testing.B) {
	top := manyRepo(b)
	p, _ := project.Find(context.Background(), top)
	plan, err := Discover(context.Background(), p)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := plan.GuestScript(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSnapshot1000Submodules times the host-side snapshot of the same plan.
func BenchmarkSnapshot1000Submodules(b *testing.B) {
	top := manyRepo(b)
	p, _ := project.Find(context.Background(), top)
	plan, _ := Discover(context.Background(), p)
	for b.Loop() {
		if _, err := TakeSnapshot(context.Background(), plan, b.TempDir()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGitSubmoduleStatus1000 times git submodule status on the same repository, for scale:
// with the submodules initialised it describes each one (tens of seconds for 1,000).
func BenchmarkGitSubmoduleStatus1000(b *testing.B) {
	top := manyRepo(b)
	for b.Loop() {
		if out, err := exec.Command("git", "-C", top, "submodule", "status").CombinedOutput(); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
	}
}
