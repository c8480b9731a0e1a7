package report

// Commits made and fetched back, read with go-git: no git process runs, so no hook, fsmonitor,
// filter or repository config of the checkout can run or change what is read. Rules:
//   - Fetched refs are refs/corral/<box>/… of the repository git corral fetch writes into (a
//     clone directory's store, or the checkout's common git dir).
//   - Clone mode: the commits made are those the fetched refs reach and the store's other refs
//     (what was delivered) do not.
//   - Mount mode: the commits made are those on the checkout's branches (refs/heads/…) whose
//     committer time is in the window. The box writes that .git: the hashes bind content, but
//     the times and messages are its claims, and the record's notes say so.
//   - Every walk stops at maxWalk commits and says so (Truncated).

import (
	"fmt"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/git-corral/git-corral/internal/visible"
)

// maxWalk caps the commits one walk visits.
const maxWalk = 50000

// commitsSection reads repoDir (a work tree or a bare repository) for box.
func commitsSection(repoDir, box string, clone bool, w Window) Commits {
	c := Commits{GitDir: repoDir, FetchedRefs: []Ref{}, Made: []Commit{}}
	r, err := git.PlainOpenWithOptions(repoDir, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
	if err != nil {
		c.Unavailable = fmt.Sprintf("open repository %q: %v", repoDir, err)
		return c
	}
	prefix := "refs/corral/" + box + "/"
	var fetched, own []*plumbing.Reference
	iter, err := r.References()
	if err != nil {
		c.Unavailable = fmt.Sprintf("list refs of %q: %v", repoDir, err)
		return c
	}
	iter.ForEach(func(ref *plumbing.Reference) error {
		if ref.Type() != plumbing.HashReference {
			return nil
		}
		name := ref.Name().String()
		switch {
		case strings.HasPrefix(name, prefix):
			fetched = append(fetched, ref)
			c.FetchedRefs = append(c.FetchedRefs, Ref{Name: visible.String(name), Hash: ref.Hash().String()})
		case strings.HasPrefix(name, "refs/corral/"):
		case clone || ref.Name().IsBranch():
			own = append(own, ref)
		}
		return nil
	})
	sort.Slice(c.FetchedRefs, func(i, j int) bool { return c.FetchedRefs[i].Name < c.FetchedRefs[j].Name })
	wk := &walker{r: r, made: map[plumbing.Hash]*Commit{}}
	if clone {
		known := map[plumbing.Hash]bool{}
		c.Truncated = wk.walk(own, func(h plumbing.Hash, _ *object.Commit) bool { known[h] = true; return true })
		c.Truncated = wk.walk(fetched, func(h plumbing.Hash, o *object.Commit) bool {
			if known[h] {
				return false
			}
			wk.take(h, o)
			return true
		}) || c.Truncated
	} else {
		c.Truncated = wk.walk(own, func(h plumbing.Hash, o *object.Commit) bool {
			if inWindow(o.Committer.When, w) {
				wk.take(h, o)
			}
			return true
		})
	}
	c.Made = wk.sorted()
	return c
}

// walker walks commits from refs, remembering which refs reach each commit taken.
type walker struct {
	r    *git.Repository
	made map[plumbing.Hash]*Commit
	ref  string
}

// walk visits the commits the refs reach, each once per ref, calling visit, which returns
// whether to go on to the parents. It returns true when it stopped at maxWalk.
func (wk *walker) walk(refs []*plumbing.Reference, visit func(plumbing.Hash, *object.Commit) bool) bool {
	visits := 0
	for _, ref := range refs {
		wk.ref = visible.String(ref.Name().String())
		seen := map[plumbing.Hash]bool{}
		stack := []plumbing.Hash{ref.Hash()}
		for len(stack) > 0 {
			h := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if seen[h] {
				continue
			}
			if visits++; visits > maxWalk {
				return true
			}
			seen[h] = true
			o, err := wk.r.CommitObject(h)
			if err != nil {
				continue // a ref to a tag or a missing object: nothing to walk
			}
			if visit(h, o) {
				stack = append(stack, o.ParentHashes...)
			}
		}
	}
	return false
}

func (wk *walker) take(h plumbing.Hash, o *object.Commit) {
	if m := wk.made[h]; m != nil {
		m.addRef(wk.ref)
		return
	}
	c := &Commit{Hash: h.String(), Parents: []string{}, Refs: []string{wk.ref}, AuthorTime: o.Author.When.UTC(),
		CommitTime: o.Committer.When.UTC(), Summary: summary(o.Message)}
	for _, p := range o.ParentHashes {
		c.Parents = append(c.Parents, p.String())
	}
	wk.made[h] = c
}

func (c *Commit) addRef(ref string) {
	for _, r := range c.Refs {
		if r == ref {
			return
		}
	}
	c.Refs = append(c.Refs, ref)
}

// sorted returns the commits taken, oldest first (then by hash, for a stable record).
func (wk *walker) sorted() []Commit {
	out := make([]Commit, 0, len(wk.made))
	for _, c := range wk.made {
		sort.Strings(c.Refs)
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CommitTime.Equal(out[j].CommitTime) {
			return out[i].CommitTime.Before(out[j].CommitTime)
		}
		return out[i].Hash < out[j].Hash
	})
	return out
}

// summary is a message's first line, escaped and cut to 200 bytes.
func summary(msg string) string {
	line, _, _ := strings.Cut(msg, "\n")
	if len(line) > 200 {
		line = line[:200] + "…"
	}
	return visible.String(line)
}
