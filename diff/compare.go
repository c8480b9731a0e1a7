package diff

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/project"
)

// ErrNoBase means there is no session base to compare against and no revision was given.
var ErrNoBase = errors.New("no session base recorded for this box")

// Options tunes Compare. The zero value compares against the latest session base.
type Options struct {
	// Base is a revision to compare against; empty means the latest session base of Box.
	Base string
	// Box names the box whose session bases are used; empty means p.Box.
	Box string
	// Home is the state directory ($CORRAL_HOME); empty resolves it from the environment.
	Home string
	// ExtraPaths are work-tree paths (files or directories, relative to the top level) that the
	// host's git config points at, such as core.hooksPath=.husky; changes there are findings.
	ExtraPaths []string
	// ConfigPaths are the work-tree paths the host's effective git config names (a
	// core.fsmonitor script, a filter driver, a hooksPath dir, an included file...), each with
	// the reason naming the key and where it was set. The caller fills it from gitshadow:
	// for _, d := range plan.DiffPaths() { o.ConfigPaths = append(o.ConfigPaths, diff.ConfigPath(d)) }.
	// A change to one of them, or under one that is a directory, is a finding with that reason.
	ConfigPaths []ConfigPath
	// Workers bounds parallel walking and hashing; 0 means the number of CPUs.
	Workers int
	// All fills Change.Detail for ordinary changes too.
	All bool
	// MaxText is the largest file shown as text; larger ones are summarised. 0 means 1 MiB.
	MaxText int64
}

// ConfigPath is a work-tree path the host's git config names, with why (gitshadow.DiffPath).
type ConfigPath struct {
	// Path is slash-separated and relative to the top level: a file, or a directory whose
	// every entry counts.
	Path string
	// Reason names the key and where it was set, e.g. "named by core.fsmonitor in
	// ~/.gitconfig:3: the host's git runs it".
	Reason string
}

// Report is what Compare found.
type Report struct {
	Base     BaseInfo  `json:"base"`
	Findings []Finding `json:"findings"`
	Changes  []Change  `json:"changes"`
	// Notice, when not empty, says what Compare removed from the repository (the session bases
	// older versions kept under refs/corral/sessions/); the caller prints it (not in the JSON).
	Notice string `json:"-"`
}

// BaseInfo names what the work tree was compared against.
type BaseInfo struct {
	Kind string `json:"kind"` // "session" or "revision"
	// Ref and Commit name a revision base: the revision as given and the commit it resolved to.
	Ref    string `json:"ref,omitempty"`
	Commit string `json:"commit,omitempty"`
	// Path is a session base's trusted manifest under $CORRAL_HOME/sessions/<box>/.
	Path    string     `json:"path,omitempty"`
	Created *time.Time `json:"created,omitempty"`
	// GitMetaCompared is false when no session base exists to compare git metadata against.
	GitMetaCompared bool `json:"gitMetaCompared"`
}

// Change is one path that differs from the base.
type Change struct {
	Path    string `json:"path"`
	Status  string `json:"status"` // added, deleted, modified, modeChanged, typeChanged, unreadable
	OldKind string `json:"oldKind,omitempty"`
	NewKind string `json:"newKind,omitempty"`
	OldMode string `json:"oldMode,omitempty"`
	NewMode string `json:"newMode,omitempty"`
	Size    int64  `json:"size"`
	OldHash string `json:"oldHash,omitempty"`
	NewHash string `json:"newHash,omitempty"`
	// Target is a symlink's target text (never followed).
	Target string `json:"target,omitempty"`
	// Finding is true when at least one finding is about this path.
	Finding bool   `json:"finding"`
	Error   string `json:"error,omitempty"`
	// Detail is the diff of an ordinary change, filled only with Options.All.
	Detail []string `json:"detail,omitempty"`

	old, cur *entry
}

// Finding is a change the host may execute, with why.
type Finding struct {
	Severity Severity `json:"severity"`
	Group    string   `json:"group"`
	Path     string   `json:"path"`
	Status   string   `json:"status"`
	Reason   string   `json:"reason"`
	// Detail is the structured or textual diff, or a summary, one line per element.
	Detail []string `json:"detail"`
}

func (o Options) fill(p *project.Project) (Options, error) {
	if o.Box == "" {
		o.Box = p.Box
	}
	if o.Home == "" {
		h, err := home.Resolve(nil)
		if err != nil {
			return o, err
		}
		o.Home = h.Dir
	}
	if o.Workers <= 0 {
		o.Workers = max(runtime.NumCPU(), 4)
	}
	if o.MaxText <= 0 {
		o.MaxText = 1 << 20
	}
	return o, nil
}

// Compare walks the work tree of p and reports every change since the base, host-executed
// findings first. It reads raw bytes and lstat results only; it runs nothing from the repository.
// It then removes the session bases older versions kept in the repository (Report.Notice).
func Compare(ctx context.Context, p *project.Project, o Options) (*Report, error) {
	o, err := o.fill(p)
	if err != nil {
		return nil, err
	}
	st := openStore(o.Home, o.Box)
	latest, latestPath, err := latestManifest(st)
	if err != nil {
		return nil, err
	}
	if latest != nil && latest.TopLevel != p.TopLevel {
		return nil, fmt.Errorf("the session bases of box %q were recorded for %q, not for this work tree %q", o.Box, latest.TopLevel, p.TopLevel)
	}
	repo, err := git.PlainOpenWithOptions(p.TopLevel, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
	if err != nil {
		return nil, fmt.Errorf("open repository %q: %w", p.TopLevel, err)
	}
	b, err := loadBase(repo, o.Base, latest, latestPath)
	if err != nil {
		return nil, err
	}
	cur, err := walk(ctx, p.TopLevel, p.CommonDir, o.Workers)
	if err != nil {
		return nil, err
	}
	if latest != nil {
		applyStatCache(cur, latest.Entries, latest.Created)
	}
	absOf := func(e *entry) string { return entryAbs(p, e) }
	need := func(e *entry) bool { return !e.Have && (e.Kind == KindFile || e.Kind == KindSymlink) }
	if err := hashAll(ctx, absOf, cur, o.Workers, need); err != nil {
		return nil, err
	}
	if !b.info.GitMetaCompared {
		cur = dropGitMeta(cur)
	}
	r := &Report{Base: b.info, Changes: changes(b.entries, cur)}
	c := &classifier{p: p, o: o, repo: repo, store: st, base: b, cur: cur, absOf: absOf}
	c.classify(r)
	sortFindings(r.Findings)
	r.Notice = removeLegacyRefs(ctx, p)
	return r, nil
}

// matches reports whether the cached entry c describes e's current content: every lstat field
// equal, and c's ctime far enough before the manifest was written that a later write in the
// same clock tick cannot hide (git's "racy" rule).
func (c *entry) matches(e *entry, created time.Time) bool {
	return c.Have && c.Kind == e.Kind && c.Size == e.Size && c.Mtime == e.Mtime && c.Ctime == e.Ctime &&
		c.Ino == e.Ino && c.Dev == e.Dev && c.Mode == e.Mode && c.Ctime < created.Add(-2*time.Second).UnixNano()
}

// applyStatCache takes the hash of every current entry the trusted manifest vouches for (see
// matches). Both lists are sorted by path, so one merge pass does it.
func applyStatCache(cur, cache []*entry, created time.Time) {
	i := 0
	for _, e := range cur {
		for i < len(cache) && cache[i].Path < e.Path {
			i++
		}
		if i < len(cache) && cache[i].Path == e.Path && cache[i].matches(e, created) {
			e.Hash, e.Have = cache[i].Hash, true
		}
	}
}

func dropGitMeta(es []*entry) []*entry {
	out := es[:0:0]
	for _, e := range es {
		if e.Flags&flagGitMeta == 0 || !strings.HasPrefix(e.Path, ".git/") {
			out = append(out, e)
		}
	}
	return out
}

// changes merges the sorted base and current lists into the changed paths.
func changes(base, cur []*entry) []Change {
	var out []Change
	i, j := 0, 0
	for i < len(base) || j < len(cur) {
		switch {
		case j == len(cur) || (i < len(base) && base[i].Path < cur[j].Path):
			out = append(out, newChange("deleted", base[i], nil))
			i++
		case i == len(base) || cur[j].Path < base[i].Path:
			out = append(out, newChange("added", nil, cur[j]))
			j++
		default:
			if st := compareEntries(base[i], cur[j]); st != "" {
				out = append(out, newChange(st, base[i], cur[j]))
			}
			i, j = i+1, j+1
		}
	}
	return out
}

// compareEntries names how cur differs from old, or "" when it does not.
func compareEntries(old, cur *entry) string {
	switch {
	case cur.ReadErr != "":
		return "unreadable"
	case old.Kind != cur.Kind:
		return "typeChanged"
	case cur.Kind == KindDir || cur.Kind == KindSpecial:
		if old.Mode != cur.Mode && cur.Kind == KindSpecial {
			return "modified"
		}
		return ""
	case !old.Have || old.Hash != cur.Hash:
		return "modified"
	case old.gitMode() != cur.gitMode():
		return "modeChanged"
	}
	return ""
}

func newChange(status string, old, cur *entry) Change {
	c := Change{Status: status, old: old, cur: cur}
	if old != nil {
		c.Path, c.OldKind, c.OldMode = old.Path, old.Kind.String(), modeString(old)
		if old.Have {
			c.OldHash = plumbing.Hash(old.Hash).String()
		}
	}
	if cur != nil {
		c.Path, c.NewKind, c.NewMode, c.Size = cur.Path, cur.Kind.String(), modeString(cur), cur.Size
		if cur.Have {
			c.NewHash = plumbing.Hash(cur.Hash).String()
		}
		c.Error = cur.ReadErr
	}
	return c
}

// modeString is the git mode in octal, or the file-type bits for entries git cannot store.
func modeString(e *entry) string {
	if m := e.gitMode(); m != 0 {
		return fmt.Sprintf("%06o", m)
	}
	return fmt.Sprintf("%06o", e.Mode)
}
