package policy

import (
	"fmt"
	"strings"
	"testing"
)

// TestGitPushNarrows: trusted layers add git_push patterns; the repository's list narrows them
// (kept apart, so the broker requires both, whatever the layer order); a malformed pattern, and the
// trusted-only git_push_delete and git_push_force in the repository are refused, each naming
// the file and line.
func TestGitPushNarrows(t *testing.T) {
	f := newFixture(t)
	f.global("git_push = [\"refs/heads/corral/*\"]\ngit_push_delete = true\ngit_push_force = true\n")
	f.repo("git_push = [\"refs/heads/corral/agent-*\"]\n")
	f.project("git_push = [\"refs/tags/v1\"]\n")
	eff := f.mustLoad()
	g := eff.Config.GitPush
	if fmt.Sprint(g.Trusted) != "[refs/heads/corral/* refs/tags/v1]" || !g.Narrowed || fmt.Sprint(g.Narrow) != "[refs/heads/corral/agent-*]" ||
		!eff.Config.GitPushDelete || !eff.Config.GitPushForce {
		t.Errorf("git_push %+v delete %v force %v", g, eff.Config.GitPushDelete, eff.Config.GitPushForce)
	}
	if o := eff.Origins["git_push.repository[0]"]; o.Layer != LayerRepository || o.Line != 1 {
		t.Errorf("origin of the repository's pattern: %+v", o)
	}
	var keys []string
	for _, s := range eff.Settings() {
		if strings.HasPrefix(s.Key, "git_push") {
			keys = append(keys, s.Key)
		}
	}
	if fmt.Sprint(keys) != "[git_push git_push.repository git_push_delete git_push_force]" {
		t.Errorf("settings show %v", keys)
	}

	// A repository pattern outside every trusted one loads (the broker requires both, so it
	// allows nothing more): a repository's narrowing must not break a user who allows no push.
	f = newFixture(t)
	f.repo("git_push = [\"refs/heads/main\"]\n")
	if g := f.mustLoad().Config.GitPush; !g.Narrowed || len(g.Trusted) != 0 {
		t.Errorf("repository-only git_push: %+v", g)
	}
	// An empty repository list narrows to nothing.
	f = newFixture(t)
	f.global("git_push = [\"refs/heads/corral/*\"]\n")
	f.repo("git_push = []\n")
	if g := f.mustLoad().Config.GitPush; !g.Narrowed || len(g.Narrow) != 0 {
		t.Errorf("git_push = [] in the repository: %+v", g)
	}

	for _, c := range []struct{ global, repo, problem string }{
		{``, `git_push = ["heads/x"]`, "invalid ref pattern"},
		{``, `git_push = ["refs/heads/*/x"]`, "invalid ref pattern"},
		{``, `git_push_delete = true`, "may not be set by the repository"},
		{``, `git_push_force = true`, "may not be set by the repository"},
	} {
		f := newFixture(t)
		if c.global != "" {
			f.global(c.global + "\n")
		}
		path := f.repo(c.repo + "\n")
		vs := f.violations()
		if len(vs) != 1 || !strings.Contains(vs[0].Problem, c.problem) || vs[0].File != path || vs[0].Line != 1 {
			t.Errorf("%s | %s: %+v, want one violation at %s:1 saying %q", c.global, c.repo, vs, path, c.problem)
		}
	}
}
