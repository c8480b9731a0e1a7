package provision

// This file is the pre-review of a repository's provision scripts and packages, and their
// approval. Rules:
//   - What was reviewed is what runs: approval stores the script's bytes (and those of every
//     file it sources) under $CORRAL_HOME/approvals/BOX.json; CheckApproved hands the stored
//     bytes to Render, and refuses while any script or package is new, changed or refused.
//   - A script runs as root only when it carries the system marker, the network mode is full
//     and the approval was given for root; otherwise as the box user. Who it runs as is part
//     of the hash, so turning a box to full mode re-prompts for a marked script.
//   - Refused scripts (outside the repository, symlinks, binaries, huge files) cannot be
//     approved at all.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/internal/atomicfile"
	"github.com/git-corral/git-corral/policy"
)

// State is a script's or package's approval state.
type State string

const (
	// StateNew was never approved for this box.
	StateNew State = "new"
	// StateApproved matches its approval byte for byte.
	StateApproved State = "approved"
	// StateChanged differs from what was approved.
	StateChanged State = "changed"
	// StateRefused cannot be approved (see Problems).
	StateRefused State = "refused"
)

// Request is what review looks at: the effective config's provision scripts and packages.
type Request struct {
	// Top is the repository's top level, where script paths start.
	Top string
	// Scripts is policy's `provision`, repository-relative, in order.
	Scripts []string
	// Packages is policy's `packages`.
	Packages []string
	// Network is the box's network mode (decides whether a marked script may run as root).
	Network policy.Network
}

// RequestFromConfig builds a Request from an effective config.
func RequestFromConfig(top string, cfg *policy.Config) Request {
	return Request{Top: top, Scripts: cfg.Provision, Packages: cfg.Packages, Network: cfg.Network}
}

// Source is one file a script sources.
type Source struct {
	Path string `json:"path"`
	// SHA256 is the file's hash, or "missing".
	SHA256 string `json:"sha256"`
}

// ScriptReview is one provision script as review shows it.
type ScriptReview struct {
	Path         string   `json:"path"`
	RunsAs       string   `json:"runsAs"`
	SystemMarker bool     `json:"systemMarker"`
	SHA256       string   `json:"sha256"`
	Sources      []Source `json:"sources"`
	// Directories are approved whole: every file under each is part of the approval, because
	// the script's dependencies there cannot be determined (see Flags for why).
	Directories []string `json:"directories"`
	State       State    `json:"state"`
	// Changed names each file whose bytes differ from the approval (the script, a file it
	// pulls in, or one added to or gone from an approved directory).
	Changed  []string `json:"changed"`
	Flags    []string `json:"flags"`
	Problems []string `json:"problems"`
	// Diff is the change since approval, for a changed script: "-", "+" or " " then the line.
	Diff string `json:"diff,omitempty"`
	// Content is the script's text (raw; escape it before printing).
	Content string `json:"content"`

	contents map[string][]byte
}

// PackageReview is one package the repository asks for.
type PackageReview struct {
	Name  string `json:"name"`
	State State  `json:"state"`
}

// ReviewReport is everything review shows for a box.
type ReviewReport struct {
	Box      string          `json:"box"`
	Network  string          `json:"network"`
	Scripts  []ScriptReview  `json:"scripts"`
	Packages []PackageReview `json:"packages"`
}

// Pending lists what is not approved yet, one entry per script or package, for messages.
func (r *ReviewReport) Pending() []string {
	var out []string
	for _, s := range r.Scripts {
		switch {
		case s.State == StateChanged && len(s.Changed) > 0:
			out = append(out, fmt.Sprintf("provision script %q is %s (changed since approval: %s)", s.Path, s.State, quoteAll(s.Changed)))
		case s.State != StateApproved:
			out = append(out, fmt.Sprintf("provision script %q is %s", s.Path, s.State))
		}
	}
	for _, p := range r.Packages {
		if p.State != StateApproved {
			out = append(out, fmt.Sprintf("package %q is %s", p.Name, p.State))
		}
	}
	return out
}

// approvals is the on-disk approval state of one box.
type approvals struct {
	Version  int                       `json:"version"`
	Scripts  map[string]approvedScript `json:"scripts"`
	Packages []string                  `json:"packages"`
}

type approvedScript struct {
	SHA256     string            `json:"sha256"`
	RunsAs     string            `json:"runsAs"`
	Body       []byte            `json:"body"`
	Sources    map[string][]byte `json:"sources"`
	ApprovedAt string            `json:"approvedAt"`
}

func loadApprovals(ctx context.Context, path string) (*approvals, error) {
	a := &approvals{Version: 1, Scripts: map[string]approvedScript{}}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return a, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read approvals %s: %w", path, err)
	}
	if err := json.Unmarshal(b, a); err != nil {
		return nil, fmt.Errorf("read approvals %s: %w (delete it to review every script again)", path, err)
	}
	if a.Version != 1 {
		return nil, fmt.Errorf("read approvals %s: version %d, want 1", path, a.Version)
	}
	if a.Scripts == nil {
		a.Scripts = map[string]approvedScript{}
	}
	return a, nil
}

// Review reads every provision script and package of req and compares them with the box's
// approvals.
func Review(ctx context.Context, h home.Home, box string, req Request) (*ReviewReport, error) {
	a, err := loadApprovals(ctx, h.Approvals(box))
	if err != nil {
		return nil, err
	}
	r := &ReviewReport{Box: box, Network: string(req.Network)}
	for _, rel := range req.Scripts {
		r.Scripts = append(r.Scripts, reviewScript(ctx, req, rel, a))
	}
	approved := map[string]bool{}
	for _, p := range a.Packages {
		approved[p] = true
	}
	for _, p := range req.Packages {
		st := StateNew
		if approved[p] {
			st = StateApproved
		}
		if checkPackage(p) != nil {
			st = StateRefused
		}
		r.Packages = append(r.Packages, PackageReview{Name: p, State: st})
	}
	r.Scripts, r.Packages = nonNil(r.Scripts), nonNil(r.Packages)
	return r, ctx.Err()
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

func reviewScript(ctx context.Context, req Request, rel string, a *approvals) ScriptReview {
	sc := scanScript(ctx, req.Top, rel)
	s := ScriptReview{Path: rel, RunsAs: "user", Sources: nonNil(sc.sources), Directories: nonNil(sc.dirs), Changed: []string{},
		Problems: nonNil(sc.problems), contents: sc.contents, Content: string(sc.body)}
	s.Flags = nonNil(append(scriptFlags(sc.body), sc.flags...))
	for _, src := range sc.sources {
		for _, f := range scriptFlags(sc.contents[src.Path]) {
			s.Flags = append(s.Flags, src.Path+" "+f)
		}
	}
	s.SystemMarker = hasSystemMarker(sc.body)
	if s.SystemMarker && req.Network == policy.NetworkFull {
		s.RunsAs = "root"
	}
	if len(s.Problems) > 0 {
		s.State = StateRefused
		return s
	}
	s.SHA256 = contentHash(rel, s.RunsAs, sc.body, sc.sources, sc.contents, sc.dirs)
	prev, ok := a.Scripts[rel]
	switch {
	case !ok:
		s.State = StateNew
	case prev.SHA256 == s.SHA256:
		s.State = StateApproved
	default:
		s.State = StateChanged
		s.Diff = approvalDiff(prev, s, sc)
		s.Changed = changedFiles(prev, s.Path, sc)
	}
	return s
}

// nonNil keeps review --json's arrays arrays.
func nonNil[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}

// changedFiles names every file whose bytes differ from the approval, sorted.
func changedFiles(prev approvedScript, rel string, sc scanned) []string {
	out := []string{}
	if !bytes.Equal(prev.Body, sc.body) {
		out = append(out, rel)
	}
	var names []string
	for n := range prev.Sources {
		names = append(names, n)
	}
	for n := range sc.contents {
		if _, ok := prev.Sources[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		old, had := prev.Sources[n]
		now, has := sc.contents[n]
		if had != has || !bytes.Equal(old, now) {
			out = append(out, n)
		}
	}
	return out
}

// approvalDiff describes what changed since approval: who it runs as, the script, and each
// sourced file.
func approvalDiff(prev approvedScript, s ScriptReview, sc scanned) string {
	var b strings.Builder
	if prev.RunsAs != s.RunsAs {
		fmt.Fprintf(&b, "runs as: approved for %s, now %s\n", prev.RunsAs, s.RunsAs)
	}
	if d := lineDiff(string(prev.Body), string(sc.body)); d != "" {
		fmt.Fprintf(&b, "--- %s (approved)\n+++ %s (now)\n%s", s.Path, s.Path, d)
	}
	names := map[string]bool{}
	for n := range prev.Sources {
		names[n] = true
	}
	for n := range sc.contents {
		names[n] = true
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	for _, n := range sorted {
		if d := lineDiff(string(prev.Sources[n]), string(sc.contents[n])); d != "" {
			fmt.Fprintf(&b, "--- %s (approved, pulled in)\n+++ %s (now, pulled in)\n%s", n, n, d)
		}
	}
	return b.String()
}

// Approve records every script and package of r as approved. It refuses, recording nothing,
// while any script is refused.
func Approve(ctx context.Context, h home.Home, r *ReviewReport) error {
	var refused []string
	for _, s := range r.Scripts {
		if s.State == StateRefused {
			refused = append(refused, fmt.Sprintf("%q: %s", s.Path, strings.Join(s.Problems, "; ")))
		}
	}
	for _, p := range r.Packages {
		if p.State == StateRefused {
			refused = append(refused, fmt.Sprintf("package %q is not a Debian package name", p.Name))
		}
	}
	if len(refused) > 0 {
		return fmt.Errorf("approve provision scripts of %s: cannot approve %s", r.Box, strings.Join(refused, ", "))
	}
	path := h.Approvals(r.Box)
	a, err := loadApprovals(ctx, path)
	if err != nil {
		return err
	}
	now := time.Now().UTC().Format(time.RFC3339)
	for _, s := range r.Scripts {
		if s.State == StateApproved {
			continue
		}
		a.Scripts[s.Path] = approvedScript{SHA256: s.SHA256, RunsAs: s.RunsAs, Body: []byte(s.Content), Sources: s.contents, ApprovedAt: now}
	}
	seen := map[string]bool{}
	for _, p := range a.Packages {
		seen[p] = true
	}
	for _, p := range r.Packages {
		if !seen[p.Name] {
			a.Packages = append(a.Packages, p.Name)
			seen[p.Name] = true
		}
	}
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return fmt.Errorf("write approvals %s: %w", path, err)
	}
	if err := h.MkdirAll(filepath.Dir(path)); err != nil {
		return err
	}
	return atomicfile.Write(path, append(b, '\n'), 0o600)
}

// ErrNotApproved is returned by CheckApproved while anything awaits review.
var ErrNotApproved = errors.New("provision scripts or packages are not approved")

// CheckApproved returns the box's repository scripts as they were approved, ready for
// Options.Repo, or an error wrapping ErrNotApproved that names everything new, changed or
// refused. The returned bytes are the stored approved copies, not the files on disk.
func CheckApproved(ctx context.Context, h home.Home, box string, req Request) ([]RepoScript, error) {
	r, err := Review(ctx, h, box, req)
	if err != nil {
		return nil, err
	}
	if pending := r.Pending(); len(pending) > 0 {
		return nil, fmt.Errorf("%w for box %s: %s", ErrNotApproved, box, strings.Join(pending, "; "))
	}
	a, err := loadApprovals(ctx, h.Approvals(box))
	if err != nil {
		return nil, err
	}
	var out []RepoScript
	for _, s := range r.Scripts {
		prev := a.Scripts[s.Path]
		if prev.SHA256 != s.SHA256 || hexSum(prev.Body) != hexSum([]byte(s.Content)) {
			return nil, fmt.Errorf("%w for box %s: %q changed while being checked", ErrNotApproved, box, s.Path)
		}
		files := map[string][]byte{}
		for _, src := range s.Sources {
			if src.SHA256 == "missing" {
				continue
			}
			b, ok := prev.Sources[src.Path]
			if !ok || hexSum(b) != src.SHA256 {
				return nil, fmt.Errorf("%w for box %s: %q changed while being checked", ErrNotApproved, box, src.Path)
			}
			files[src.Path] = b
		}
		out = append(out, RepoScript{Path: s.Path, Body: prev.Body, Files: files, Root: prev.RunsAs == "root" && s.RunsAs == "root"})
	}
	return out, nil
}
