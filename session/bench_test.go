package session

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/git-corral/git-corral/gitshadow"
	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/project"
)

// benchHermetic points git at a config inside dir and fixes author, committer and dates.
func benchHermetic(b *testing.B, dir string) {
	b.Helper()
	global := filepath.Join(dir, "gitconfig")
	if err := os.WriteFile(global, []byte("[init]\n\tdefaultBranch = main\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	for k, v := range map[string]string{
		"HOME": dir, "CORRAL_HOME": filepath.Join(dir, ".corral"),
		"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": global,
		"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t.invalid",
		"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t.invalid",
		"GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
	} {
		b.Setenv(k, v)
	}
}

// benchRepo builds the benchmark's repository: one empty commit (modules 0) or the repository of
// gitshadow/testdata/many.sh with that many absorbed submodules.
func benchRepo(b *testing.B, modules int) *project.Project {
	b.Helper()
	dir := b.TempDir()
	benchHermetic(b, dir)
	top := filepath.Join(dir, "top")
	var cmds [][]string
	if modules == 0 {
		cmds = [][]string{{"git", "init", "-q", top}, {"git", "-C", top, "commit", "-q", "--allow-empty", "-m", "init"}}
	} else {
		script, _ := filepath.Abs("../gitshadow/testdata/many.sh")
		cmds = [][]string{{"sh", "-eu", script, strconv.Itoa(modules), dir}}
	}
	for _, c := range cmds {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			b.Fatalf("%v: %v\n%s", c, err, out)
		}
	}
	p, err := project.Find(context.Background(), top)
	if err != nil {
		b.Fatal(err)
	}
	// On a warm box the snapshot was taken at boot, after git last wrote the metadata: let the
	// files' ctimes age past the stat cache's racy window (2 s), as they would have.
	time.Sleep(2100 * time.Millisecond)
	return p
}

// BenchmarkBeginEnd times the host-side guard of one session on a warm box: Begin (verify
// against the snapshot taken before boot, start the watcher, record the session base) and End
// (stop the watcher, verify again), with nothing changed by the box. This is on the critical path
// of every git corral run. CORRAL_BENCH_SUBMODULES=N adds a repository with N submodules.
// Reproduce: see docs/benchmarks-history.md ## vm.
func BenchmarkBeginEnd(b *testing.B) {
	sizes := []int{0, 100}
	if n, err := strconv.Atoi(os.Getenv("CORRAL_BENCH_SUBMODULES")); err == nil && n > 0 {
		sizes = append(sizes, n)
	}
	for _, modules := range sizes {
		name := "tiny"
		if modules > 0 {
			name = "submodules-" + strconv.Itoa(modules)
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			p := benchRepo(b, modules)
			h := home.Home{Dir: os.Getenv("CORRAL_HOME")}
			plan, err := gitshadow.Discover(ctx, p)
			if err != nil {
				b.Fatal(err)
			}
			if err := SnapshotBeforeBoot(ctx, h, p.Box, plan); err != nil {
				b.Fatal(err)
			}
			var seen changes // the watcher reports from its own goroutine
			var begin, end time.Duration
			for b.Loop() {
				t0 := time.Now()
				g, err := Begin(ctx, Options{Project: p, Home: h, Box: p.Box, Protect: true, OnChange: seen.add})
				if err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if err := g.End(ctx, seen.add); err != nil {
					b.Fatal(err)
				}
				begin, end = begin+t1.Sub(t0), end+time.Since(t1)
			}
			b.ReportMetric(float64(begin.Nanoseconds())/float64(b.N), "begin-ns/op")
			b.ReportMetric(float64(end.Nanoseconds())/float64(b.N), "end-ns/op")
			if n := seen.n(); n > 0 {
				b.Fatalf("nothing changed, yet %d changes were reported, first %+v", n, seen.all[0])
			}
		})
	}
}
