package diff

// Classification rules, one finding per reason (a path can have several):
//   - catalogue match, or a path the host's git config names (ConfigPaths, with the key and
//     where it was set; ExtraPaths): the rule's severity, high for config-named paths (a
//     deletion is medium: it can still unshadow or disable something);
//   - git metadata of any git dir, nested .git dirs and files, bare repositories, case variants
//     of ".git": high;
//   - a new executable bit, a symlink (with its target text), a special file: high, except a
//     symlink whose target stays inside the work tree (medium);
//   - a GNUmakefile or makefile shadowing a Makefile: high;
//   - case and Unicode normalisation collisions among current paths involving a changed path: high;
//   - control, bidi or zero-width characters in a changed path's name (high) or content (high in
//     a host-executed file, medium elsewhere).

import (
	"fmt"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5"
	"golang.org/x/text/unicode/norm"

	"github.com/git-corral/git-corral/internal/visible"
	"github.com/git-corral/git-corral/project"
)

type classifier struct {
	p     *project.Project
	o     Options
	repo  *git.Repository
	store store // the session bases of o.Box
	base  *baseSet
	cur   []*entry
	absOf func(*entry) string
	// folded maps the lower-cased path of each changed path to the current paths that fold to
	// it (built for changed paths only: one pass over the tree, no map of all of it).
	folded map[string][]string
}

func (c *classifier) classify(r *Report) {
	c.folded = map[string][]string{}
	for _, ch := range r.Changes {
		if ch.cur != nil {
			c.folded[foldKey(ch.Path)] = nil
		}
	}
	if len(c.folded) > 0 {
		for _, e := range c.cur {
			k := foldKey(e.Path)
			if v, ok := c.folded[k]; ok {
				c.folded[k] = append(v, e.Path)
			}
		}
	}
	for i := range r.Changes {
		ch := &r.Changes[i]
		fs := c.findings(ch)
		ch.Finding = len(fs) > 0
		if !ch.Finding && c.o.All {
			ch.Detail = c.detail(ch)
		}
		r.Findings = append(r.Findings, fs...)
	}
}

func (c *classifier) findings(ch *Change) []Finding {
	var out []Finding
	add := func(sev Severity, group, reason string, detail []string) {
		out = append(out, Finding{Severity: sev, Group: group, Path: ch.Path, Status: ch.Status, Reason: reason, Detail: detail})
	}
	cur, old := ch.cur, ch.old
	if visible.Has(ch.Path) {
		add(High, "filesystem", "the name holds control, bidi or invisible characters (shown escaped)", nil)
	}
	c.gitFindings(ch, add)
	if cur != nil {
		c.fsFindings(ch, add)
	}
	if ch.Status == "unreadable" {
		add(Medium, "filesystem", "could not be read to compare: "+ch.Error, nil)
	}
	hostExec := false
	if rule := Match(ch.Path); rule != nil {
		hostExec = true
		sev, why := rule.Severity, rule.Why
		if ch.Status == "deleted" {
			sev, why = Medium, "deleted; "+why
		}
		add(sev, rule.Group, why, c.detail(ch))
	}
	if x, ok := matchExtra(c.o.ExtraPaths, ch.Path); ok {
		hostExec = true
		add(High, "git", fmt.Sprintf("the host's git config points at %q: git runs or reads it", x), c.detail(ch))
	}
	if cp, ok := matchConfig(c.o.ConfigPaths, ch.Path); ok {
		hostExec = true
		sev, why := High, cp.Reason
		if ch.Status == "deleted" {
			sev, why = Medium, "deleted; "+why
		}
		add(sev, "git", why, c.detail(ch))
	}
	if cur != nil && cur.Flags&flagGitMeta != 0 || old != nil && old.Flags&flagGitMeta != 0 {
		hostExec = true
		add(High, "git", "git metadata: the host's git reads it and runs what it names (config, hooks, attributes)", c.detail(ch))
	}
	if ch.Status == "added" || ch.Status == "modified" {
		if lines := c.hiddenLines(ch); len(lines) > 0 {
			sev := Medium
			if hostExec {
				sev = High
			}
			add(sev, "text", fmt.Sprintf("%d line(s) hold control, bidi or zero-width characters", len(lines)), lines)
		}
	}
	return out
}

// gitFindings flags nested repositories and case variants of .git.
func (c *classifier) gitFindings(ch *Change, add func(Severity, string, string, []string)) {
	for _, comp := range strings.Split(ch.Path, "/") {
		if strings.EqualFold(comp, ".git") && comp != ".git" {
			add(High, "git", "a case variant of .git: a case-insensitive host resolves it to the real git dir", nil)
			break
		}
	}
	cur := ch.cur
	if cur == nil || cur.Flags&flagNestedGit == 0 || ch.Status == "deleted" {
		return
	}
	switch {
	case cur.Kind == KindDir && path.Base(cur.Path) == ".git":
		add(High, "git", "a nested git dir: git run inside it on the host obeys its config and hooks", nil)
	case cur.Kind == KindDir:
		add(High, "git", "a bare repository: git run inside it on the host obeys its config and hooks", nil)
	default:
		text, _ := readVerified(c.absOf(cur), cur, 4096)
		add(High, "git", "a .git file: git run here on the host uses the git dir it names", []string{strings.TrimSpace(string(text))})
	}
}

// fsFindings flags exec bits, symlinks, special files, GNUmakefile shadowing and case collisions.
func (c *classifier) fsFindings(ch *Change, add func(Severity, string, string, []string)) {
	cur, old := ch.cur, ch.old
	if ch.Status == "added" && cur.exec() {
		add(High, "filesystem", "a new executable file", nil)
	} else if old != nil && cur.exec() && !old.exec() {
		add(High, "filesystem", "the execute bit was set", nil)
	}
	if cur.Kind == KindSymlink && ch.Status != "unreadable" {
		target, err := os.Readlink(c.absOf(cur))
		if err == nil {
			ch.Target = target
			sev, where := symlinkSeverity(cur.Path, target)
			add(sev, "filesystem", "a symlink to "+where+" (never followed)", []string{"-> " + target})
		}
	}
	if cur.Kind == KindSpecial {
		add(High, "filesystem", "a special file (FIFO, socket or device): reading it can hang or reach a device", nil)
	}
	if ch.Status == "added" {
		dir, base := path.Split(cur.Path)
		for _, shadowed := range shadows[base] {
			if c.exists(dir + shadowed) {
				add(High, "make", fmt.Sprintf("shadows %s: make reads %s first and ignores %s", dir+shadowed, base, shadowed), nil)
			}
		}
	}
	if others := c.folded[foldKey(cur.Path)]; len(others) > 1 {
		add(High, "filesystem", "case collision with "+visible.String(strings.Join(without(others, cur.Path), ", "))+": a case- or normalisation-insensitive host keeps only one", nil)
	}
}

// foldKey is how a case-insensitive, normalisation-insensitive host (macOS APFS, Windows NTFS)
// compares names: Unicode NFD, then lower case.
func foldKey(p string) string { return strings.ToLower(norm.NFD.String(p)) }

// exists reports whether p is a current path (c.cur is sorted).
func (c *classifier) exists(p string) bool {
	i := sort.Search(len(c.cur), func(i int) bool { return c.cur[i].Path >= p })
	return i < len(c.cur) && c.cur[i].Path == p
}

// shadows lists, for each makefile name, the names GNU make would no longer read.
var shadows = map[string][]string{
	"GNUmakefile": {"makefile", "Makefile"},
	"makefile":    {"Makefile"},
}

func without(list []string, s string) []string {
	var out []string
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

// symlinkSeverity rates a symlink by where its target text points.
func symlinkSeverity(p, target string) (Severity, string) {
	if path.IsAbs(target) || strings.HasPrefix(target, "~") {
		return High, "an absolute path outside the work tree"
	}
	j := path.Join(path.Dir(p), target)
	if j == ".." || strings.HasPrefix(j, "../") {
		return High, "a path outside the work tree"
	}
	first, _, _ := strings.Cut(j, "/")
	if strings.EqualFold(first, ".git") {
		return High, "the git dir"
	}
	return Medium, "a path inside the work tree"
}

// sortFindings orders findings by severity, then group, then path.
func sortFindings(fs []Finding) {
	rank := map[Severity]int{High: 0, Medium: 1, Low: 2}
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if rank[a.Severity] != rank[b.Severity] {
			return rank[a.Severity] < rank[b.Severity]
		}
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		return a.Path < b.Path
	})
}
