package main

// "git corral diff REF" in a clone directory: there is no host work tree to compare, so the
// review is the change REF (usually refs/corral/<box>/<branch>, brought back by fetch) makes to
// the branch as it was delivered, read with go-git from the store. Paths the host would execute
// if the branch were merged and checked out are listed first, from the same catalogue as diff;
// then the patch. Paths and the patch are escaped (internal/visible) in text and JSON alike.

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/git-corral/git-corral/clone"
	"github.com/git-corral/git-corral/diff"
	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/project"
)

// cloneDiff runs diff in a clone directory; ok is false outside one.
func (a *app) cloneDiff(ctx context.Context, args []string, record, jsonOut, exitCode bool) (ok bool, err error) {
	dir, err := a.workDir()
	if err != nil {
		return false, err
	}
	cdir, rec, err := clone.FindRecord(dir)
	if errors.Is(err, clone.ErrNoRecord) {
		return false, nil
	} else if err != nil {
		return true, err
	}
	if record || len(args) != 1 {
		return true, usageErrorf("diff", "in a clone directory diff takes exactly one REF (e.g. refs/corral/BOX/BRANCH) and no --record")
	}
	real, err := filepath.EvalSymlinks(cdir)
	if err != nil {
		return true, err
	}
	h, err := home.Resolve(a.getenv)
	if err != nil {
		return true, err
	}
	doc, err := diff.CompareStore(ctx, h.CloneStore(project.BoxName(real)), args[0], rec.Branch)
	if err != nil {
		return true, withHint(err, "'git corral fetch' brings the box's branches back as refs/corral/BOX/BRANCH")
	}
	if jsonOut {
		err = a.printJSON(doc)
	} else {
		err = diff.WriteStoreText(a.stdout, doc)
	}
	if err == nil && exitCode && len(doc.Findings) > 0 {
		return true, quietExit(exitFailure)
	}
	return true, err
}
