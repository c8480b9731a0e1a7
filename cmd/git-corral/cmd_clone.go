package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/git-corral/git-corral/clone"
	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/internal/visible"
	"github.com/git-corral/git-corral/project"
	"github.com/git-corral/git-corral/session"
)

// boxGuest returns a running clone-mode box's Guest (booting it, or creating it when req.Flags
// allow), after the guard check, with the guest path its checkout lives at and its network
// mode. Tests bind it to internal/sandboxguest.
var boxGuest = realBoxGuest

// guestBox is a running clone-mode box after the guard check (session.GuestBox).
type guestBox = session.GuestBox

// guestRequest says which clone-mode box boxGuest brings up and whether it may create it.
type guestRequest struct {
	// Cmd names the command in hints ("clone", "fetch").
	Cmd string
	// Box is the box name, derived from HostDir.
	Box string
	// HostDir is the real host directory the box belongs to (a clone DIR or a checkout).
	HostDir string
	// Flags, when set, allow creating the box under the --yes / --no-create / terminal rules of
	// start; nil never creates one (fetch).
	Flags *boxFlags
}

// realBoxGuest opens the clone-mode box (session.OpenClone) and returns its Guest.
func realBoxGuest(ctx context.Context, a *app, req guestRequest) (guestBox, error) {
	r := session.CloneRequest{Box: req.Box, HostDir: req.HostDir, Create: req.Flags != nil}
	if req.Flags != nil {
		var err error
		if r.Request, err = a.request(req.Cmd, *req.Flags); err != nil {
			return guestBox{}, err
		}
	} else {
		r.Request = session.Request{Cmd: req.Cmd, Getenv: a.getenv, UI: a.ui()}
	}
	r.Dir = req.HostDir
	b, err := session.OpenClone(ctx, r)
	if err != nil {
		return guestBox{}, err
	}
	g, err := b.Guest(ctx, req.HostDir)
	if err != nil {
		return guestBox{}, err
	}
	return *g, nil
}

type cloneDoc struct {
	Box       string          `json:"box"`
	Dir       string          `json:"dir"`
	Store     string          `json:"store"`
	Source    string          `json:"source"`
	Branch    string          `json:"branch"`
	Refs      []clone.Ref     `json:"refs"`
	Warnings  []clone.Finding `json:"warnings"`
	Delivered bool            `json:"delivered"`
	// Submodules are the submodules the box fetched; SubmodulesSkipped the entries it did not
	// (transport not allowed by the network mode, relative URL without an origin).
	Submodules        []clone.Submodule `json:"submodules"`
	SubmodulesSkipped []clone.Finding   `json:"submodulesSkipped"`
}

func defineClone(fs *pflag.FlagSet) runFunc {
	jsonOut := fs.Bool("json", false, "print one JSON document")
	branch := fs.String("branch", "", "branch to check out in the box")
	timeout := fs.Duration("timeout", 0, "cap on the whole fetch")
	f := boxFlags{
		yes:      fs.BoolP("yes", "y", false, "create the box without asking when it does not exist"),
		noCreate: fs.Bool("no-create", false, "fail instead of creating the box when it does not exist"),
		network:  fs.String("network", "", "network mode of a new box: full, broker or offline"),
		noGolden: fs.Bool("no-golden", false, "create a new box from scratch, not from its golden base"),
	}
	return func(ctx context.Context, a *app, args []string) error {
		if len(args) < 1 || len(args) > 2 {
			return usageErrorf("clone", "clone takes URL and an optional DIR")
		}
		cwd, err := a.workDir()
		if err != nil {
			return err
		}
		dir := ""
		if len(args) == 2 {
			dir = args[1]
		}
		if err := (clone.Request{URL: args[0], Dir: dir, Branch: *branch, Cwd: cwd}).Validate(); err != nil {
			return withHint(err, cloneArgHint(err))
		}
		src, err := clone.ParseSource(args[0], cwd)
		if err != nil {
			return withHint(err, "give an https:// or ssh:// URL, or the path of a local repository")
		}
		if dir == "" {
			if dir, err = defaultCloneDir(args[0]); err != nil {
				return usageErrorf("clone", "%v", err)
			}
		}
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(cwd, dir)
		}
		c := &cloneRun{a: a, src: src, raw: args[0], cwd: cwd, branch: *branch, timeout: *timeout, jsonOut: *jsonOut, flags: f}
		return c.run(ctx, dir)
	}
}

// cloneRun is one "git corral clone".
type cloneRun struct {
	a                *app
	src              clone.Source
	raw, cwd, branch string
	timeout          time.Duration
	jsonOut          bool
	flags            boxFlags
}

func (c *cloneRun) run(ctx context.Context, dir string) error {
	resume, created, err := prepareCloneDir(dir, c.src.URL)
	if err != nil {
		return err
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	h, err := home.Resolve(c.a.getenv)
	if err != nil {
		return err
	}
	doc := cloneDoc{Box: project.BoxName(real), Dir: real, Source: c.src.URL, Branch: c.branch}
	doc.Store = h.CloneStore(doc.Box)
	if _, err := os.Stat(doc.Store); err != nil {
		resume = false
	}
	if !resume {
		res, err := clone.Fetch(ctx, c.raw, doc.Store, clone.Options{Cwd: c.cwd, Limits: clone.Limits{Timeout: c.timeout}})
		if err != nil {
			if created {
				os.Remove(dir)
			}
			if errors.Is(err, clone.ErrStoreExists) {
				return withHint(err, fmt.Sprintf("an earlier clone into %s left its store (box %s may still hold its work: 'git corral fetch' there first); remove the store and 'git corral --box %s delete' the box, or clone into another DIR", doc.Dir, doc.Box, doc.Box))
			}
			return withHint(err, "nothing was kept; the repository was not checked out anywhere")
		}
		doc.Refs, doc.Warnings = res.Refs, res.Warnings
		if doc.Branch == "" {
			doc.Branch = strings.TrimPrefix(res.Head, "refs/heads/")
		}
	} else if doc.Branch == "" {
		_, rec, _ := clone.FindRecord(real)
		doc.Branch = rec.Branch
	}
	rec := clone.Record{Box: doc.Box, Source: doc.Source, GuestDir: "", Branch: doc.Branch}
	if err := clone.WriteRecord(real, rec); err != nil {
		return err
	}
	c.report(doc)
	derr := c.deliver(ctx, &doc, &rec)
	if c.jsonOut {
		if err := c.a.printJSON(doc); err != nil {
			return err
		}
	}
	return derr
}

// deliver hands the store to the box, records that it did, and has the box fetch the
// submodules the network mode allows.
func (c *cloneRun) deliver(ctx context.Context, doc *cloneDoc, rec *clone.Record) error {
	gb, err := boxGuest(ctx, c.a, guestRequest{Cmd: "clone", Box: doc.Box, HostDir: doc.Dir, Flags: &c.flags})
	if err != nil {
		return withHint(fmt.Errorf("deliver into box %s: %w", doc.Box, err),
			fmt.Sprintf("the fetched and validated store is kept at %s; run 'git corral clone %s %s' again to deliver it", doc.Store, c.raw, doc.Dir))
	}
	origin := ""
	if c.src.Kind != clone.KindLocal {
		origin = c.src.URL
	}
	plan, err := clone.PlanSubmodules(doc.Store, clone.SubmoduleOptions{Branch: doc.Branch, Origin: origin, Transports: session.TransportsFor(gb.Network)})
	if err != nil {
		return withHint(fmt.Errorf("plan submodules of %s: %w", doc.Store, err),
			"nothing was delivered into the box and nothing ran; the entry named above must be fixed in the repository")
	}
	if err := clone.Deliver(ctx, gb, doc.Store, clone.DeliverOptions{Dir: gb.Dir, Origin: origin, Branch: doc.Branch}); err != nil {
		return err
	}
	rec.GuestDir, rec.Delivered, doc.Delivered = gb.Dir, true, true
	if err := clone.WriteRecord(doc.Dir, *rec); err != nil {
		return err
	}
	if !c.jsonOut {
		fmt.Fprintf(c.a.stdout, "checked out %s in box %s at %s\n", visible.String(doc.Branch), doc.Box, visible.String(gb.Dir))
	}
	doc.Submodules, doc.SubmodulesSkipped = plan.Fetch, plan.Skipped
	return session.FetchSubmodules(ctx, c.a.ui(), gb, gb.Dir, plan)
}

func (c *cloneRun) report(doc cloneDoc) {
	if c.jsonOut {
		return
	}
	if len(doc.Refs) > 0 {
		fmt.Fprintf(c.a.stdout, "fetched %d refs into %s (box %s)\n", len(doc.Refs), doc.Store, doc.Box)
	}
	for _, w := range doc.Warnings {
		fmt.Fprintf(c.a.stderr, "corral: warning: %s\n", w)
	}
}

// prepareCloneDir creates dir or accepts an empty one; a dir holding only the record of an
// undelivered clone of the same source is a resume.
func prepareCloneDir(dir, source string) (resume, created bool, err error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return false, false, err
		}
		return false, true, nil
	}
	if err != nil {
		return false, false, err
	}
	if len(entries) == 0 {
		return false, false, nil
	}
	if len(entries) == 1 && entries[0].Name() == clone.RecordName {
		if _, rec, err := clone.FindRecord(dir); err == nil && rec.Source == source && !rec.Delivered {
			return true, false, nil
		}
	}
	return false, false, withHint(fmt.Errorf("clone into %s: the directory exists and is not empty", dir), "name a new or empty directory")
}

// defaultCloneDir is git clone's choice: the last path element without ".git".
func defaultCloneDir(raw string) (string, error) {
	s := strings.TrimRight(raw, "/")
	if i := strings.LastIndexAny(s, "/:"); i >= 0 {
		s = s[i+1:]
	}
	s = strings.TrimSuffix(s, ".git")
	if s == "" || s == "." || s == ".." || strings.HasPrefix(s, "-") || path.Base(s) != s || visible.Has(s) {
		return "", fmt.Errorf("cannot derive a directory name from %q; give DIR", raw)
	}
	return s, nil
}

// cloneArgHint says what to do about a refused clone argument: nothing was fetched or created.
func cloneArgHint(err error) string {
	if errors.Is(err, clone.ErrSource) {
		return "give an https:// or ssh:// URL, or the path of a local repository; nothing was fetched or created"
	}
	return "give a plain branch name and directory (write ./-name for a directory whose name starts with '-'); nothing was fetched or created"
}
