package diff

// A review of a ref brought back from a clone-mode box ("git corral diff REF" in a clone
// directory): there is no host work tree to compare, so the review is the change REF (usually
// refs/corral/<box>/<branch>, brought back by fetch) makes to the branch as it was delivered.

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/git-corral/git-corral/clone"
	"github.com/git-corral/git-corral/internal/visible"
)

// StoreReport is the review of a ref in a clone store: what merging it would change, host-executed
// paths first (the same catalogue as Compare), then every file and the patch, all escaped.
type StoreReport struct {
	Base     string         `json:"base"`
	Ref      string         `json:"ref"`
	Commit   string         `json:"commit"`
	Files    []StoreFile    `json:"files"`
	Findings []StoreFinding `json:"findings"`
	Patch    string         `json:"patch"`
}

type StoreFile struct {
	Path   string `json:"path"`
	Status string `json:"status"`
}

type StoreFinding struct {
	Path     string `json:"path"`
	Severity string `json:"severity"`
	Group    string `json:"group"`
	Why      string `json:"why"`
}

// CompareStore diffs ref against its merge base with the delivered branch in the clone store,
// read with go-git (no git process ever runs on an untrusted store).
func CompareStore(ctx context.Context, store, ref, branch string) (*StoreReport, error) {
	r, err := git.PlainOpen(store)
	if err != nil {
		return nil, fmt.Errorf("open clone store %s: %w", store, err)
	}
	head, err := resolveCommit(r, ref)
	if err != nil {
		return nil, err
	}
	baseName := "HEAD"
	if clone.BranchNameProblem(branch) == "" {
		if _, err := r.Reference(plumbing.NewBranchReferenceName(branch), false); err == nil {
			baseName = "refs/heads/" + branch
		}
	}
	base, err := resolveCommit(r, baseName)
	if err != nil {
		return nil, err
	}
	if mb, err := base.MergeBase(head); err == nil && len(mb) > 0 {
		base = mb[0]
	}
	bt, err := base.Tree()
	if err != nil {
		return nil, err
	}
	ht, err := head.Tree()
	if err != nil {
		return nil, err
	}
	changes, err := object.DiffTreeWithOptions(ctx, bt, ht, object.DefaultDiffTreeOptions)
	if err != nil {
		return nil, fmt.Errorf("diff %s against %s: %w", ref, baseName, err)
	}
	patch, err := changes.PatchContext(ctx)
	if err != nil {
		return nil, err
	}
	doc := &StoreReport{Base: base.Hash.String(), Ref: ref, Commit: head.Hash.String(), Patch: visible.Lines(patch.String())}
	for _, c := range changes {
		p, status := c.To.Name, "modified"
		switch {
		case c.From.Name == "":
			status = "added"
		case c.To.Name == "":
			p, status = c.From.Name, "deleted"
		}
		doc.Files = append(doc.Files, StoreFile{Path: visible.String(p), Status: status})
		if rule := Match(p); rule != nil {
			doc.Findings = append(doc.Findings, StoreFinding{Path: visible.String(p), Severity: string(rule.Severity), Group: rule.Group, Why: rule.Why})
		}
	}
	return doc, nil
}

// resolveCommit resolves a revision in the store to a commit.
func resolveCommit(r *git.Repository, rev string) (*object.Commit, error) {
	if strings.HasPrefix(rev, "-") || visible.Has(rev) {
		return nil, fmt.Errorf("revision %q starts with '-' or has a control character", rev)
	}
	h, err := r.ResolveRevision(plumbing.Revision(rev))
	if err != nil {
		return nil, fmt.Errorf("resolve %q in the clone store: %w", rev, err)
	}
	return r.CommitObject(*h)
}

// WriteStoreText prints the review: host-executed paths first, then files and the patch.
func WriteStoreText(w io.Writer, d *StoreReport) error {
	fmt.Fprintf(w, "compared %s (commit %.12s) with the delivered branch (commit %.12s)\n", visible.String(d.Ref), d.Commit, d.Base)
	if len(d.Findings) == 0 {
		fmt.Fprintf(w, "\nno changes to host-executed files\n")
	} else {
		fmt.Fprintf(w, "\nHOST-EXECUTED CHANGES: %d finding(s)\n", len(d.Findings))
		for _, f := range d.Findings {
			fmt.Fprintf(w, "  %s [%s] %s: %s\n", strings.ToUpper(f.Severity), f.Group, f.Path, f.Why)
		}
	}
	fmt.Fprintf(w, "\n%d file(s) changed\n", len(d.Files))
	for _, f := range d.Files {
		fmt.Fprintf(w, "  %-8s %s\n", f.Status, f.Path)
	}
	_, err := fmt.Fprintf(w, "\n%s", d.Patch)
	return err
}
