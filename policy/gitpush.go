package policy

// This file holds git_push, the refs a box in broker mode may push to through the broker's git
// routes (git_tokens hosts). Rules:
//   - a pattern is a full ref name under refs/ ("refs/heads/main") or one ending in "*", which
//     matches any rest of the name ("refs/heads/corral/*"); no other glob;
//   - the trusted layers (global, project file, flags) add patterns, as for any array;
//   - the repository's git_push only narrows them: it is kept apart, and a ref must match one of
//     its patterns as well as a trusted one (the intersection, whatever the layer order). A
//     repository pattern outside every trusted one therefore allows nothing, and is not an
//     error: a repository that says "only refs/heads/corral/*" must still load for a user who
//     allows no push at all. An empty repository list allows no push;
//   - git_push_delete and git_push_force, trusted-only, let the patterns' refs be deleted and
//     updated without a proven fast-forward.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/git-corral/git-corral/internal/lazyre"
)

// RefPatterns is git_push: the trusted layers' patterns and the repository's narrowing.
type RefPatterns struct {
	// Trusted are the patterns the trusted layers set.
	Trusted []string
	// Narrowed is set when the repository's file sets git_push; a ref must then also match one
	// of Narrow.
	Narrowed bool
	Narrow   []string
}

// refPatternRE is a ref name under refs/, optionally ending in "*", of ordinary characters.
var refPatternRE = lazyre.New(`^refs/([A-Za-z0-9._+@-]+/)*[A-Za-z0-9._+@-]*\*?$`)

// checkRefPattern returns what is wrong with one git_push pattern, or "".
func checkRefPattern(p string) string {
	name := strings.TrimSuffix(p, "*")
	bad := !refPatternRE.MatchString(p) || strings.Contains(name, "..") || strings.Contains(name, "@{") || len(p) > 256 ||
		(!strings.HasSuffix(p, "*") && (strings.HasSuffix(p, "/") || strings.HasSuffix(p, ".")))
	for _, comp := range strings.Split(name, "/") {
		bad = bad || strings.HasPrefix(comp, ".") || strings.HasSuffix(comp, ".lock")
	}
	if bad {
		return fmt.Sprintf("has an invalid ref pattern %q; want a ref name under refs/, optionally ending in \"*\" (such as \"refs/heads/corral/*\")", p)
	}
	return ""
}

// applyGitPush sets git_push from one layer: trusted layers add patterns, the repository's
// list is kept apart as the narrowing.
func (l *loader) applyGitPush(s setting, o Origin) {
	g := &l.eff.Config.GitPush
	if o.Layer == LayerRepository {
		g.Narrowed = true
		for _, p := range s.value.([]string) {
			if !slices.Contains(g.Narrow, p) {
				l.eff.Origins[fmt.Sprintf("git_push.repository[%d]", len(g.Narrow))] = o
				g.Narrow = append(g.Narrow, p)
			}
		}
		return
	}
	for _, p := range s.value.([]string) {
		if !slices.Contains(g.Trusted, p) {
			l.eff.Origins[fmt.Sprintf("git_push[%d]", len(g.Trusted))] = o
			g.Trusted = append(g.Trusted, p)
		}
	}
}

// gitPushSettings lists git_push for display: the trusted patterns, then the repository's.
func (e *Effective) gitPushSettings(k KeySpec) []Setting {
	g := e.Config.GitPush
	s := Setting{Key: k.Name, Class: k.Class.String(), Value: append([]string{}, g.Trusted...), Origins: []string{}}
	for i := range g.Trusted {
		s.Origins = append(s.Origins, e.Origins[fmt.Sprintf("git_push[%d]", i)].String())
	}
	out := []Setting{s}
	if g.Narrowed {
		n := Setting{Key: k.Name + ".repository", Class: k.Class.String(), Value: append([]string{}, g.Narrow...), Origins: []string{}}
		for i := range g.Narrow {
			n.Origins = append(n.Origins, e.Origins[fmt.Sprintf("git_push.repository[%d]", i)].String())
		}
		out = append(out, n)
	}
	return out
}
