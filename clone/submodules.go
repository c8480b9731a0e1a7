package clone

// Submodule rules: submodules are never fetched on the host. The box's own git fetches them,
// inside the box, after delivery, and only the ones PlanSubmodules accepts:
//   - The .gitmodules read is the one of the commit the box checks out (the snapshot of
//     uncommitted changes when there is one, so an edited, uncommitted .gitmodules is held to
//     the same rules). Every value must pass GitmodulesProblems; a single refused entry refuses
//     the whole plan, naming the entry, before anything is delivered or run.
//   - Only entries whose path is a gitlink in that commit's tree are planned (git ignores the
//     others), and an entry with update = none is left alone.
//   - Each entry's transport (https, ssh, git; a relative URL takes the origin's) must be one
//     the box's network mode allows: full allows https, ssh and git; broker allows https only
//     (through the broker's proxy, whose settings the caller's Guest carries); offline none. An
//     entry whose transport is not allowed, a relative URL with no origin, or one whose "../"
//     climb more levels than the origin's path has (resolved as git does, it would name another
//     host), is skipped and reported, never rewritten.
//   - The guest git runs with GIT_ALLOW_PROTOCOL and protocol.allow=never except the allowed
//     transports (file and ext named never as well), transfer.fsckObjects on (git's own
//     .gitmodules checks for nested submodules, whose files the host never sees), no terminal
//     prompt, and only the planned paths after "--".

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	format "github.com/go-git/go-git/v5/plumbing/format/config"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// Transports a box may fetch submodules over, by network mode.
var (
	// TransportsFull is what a full-network box may use.
	TransportsFull = []string{"https", "ssh", "git"}
	// TransportsBroker is what a broker-mode box may use: HTTPS through the broker's proxy.
	TransportsBroker = []string{"https"}
)

// SubmoduleOptions says which commit's submodules are planned and what the box may reach.
type SubmoduleOptions struct {
	// Branch is the delivered branch; "" means the branch the store's HEAD names.
	Branch string
	// Origin is the URL relative submodule URLs resolve against; "" resolves none.
	Origin string
	// Transports are the allowed transports (TransportsFull, TransportsBroker, or none).
	Transports []string
}

// Submodule is one .gitmodules entry the box will fetch.
type Submodule struct {
	Name      string `json:"name"`
	Path      string `json:"path"`
	URL       string `json:"url"`
	Transport string `json:"transport"`
}

// SubmodulePlan is what the box fetches and what it leaves out, with why.
type SubmodulePlan struct {
	Fetch   []Submodule `json:"fetch"`
	Skipped []Finding   `json:"skipped"`
	// Transports are the transports the guest git is allowed.
	Transports []string `json:"transports"`
}

// PlanSubmodules reads the .gitmodules of the commit the box will check out from store and
// returns the submodules the box may fetch. A refused entry is a *RefusedError naming it.
func PlanSubmodules(store string, o SubmoduleOptions) (SubmodulePlan, error) {
	plan := SubmodulePlan{Transports: o.Transports}
	s, err := openStore(store)
	if err != nil {
		return plan, err
	}
	tree, err := deliveredTree(s, o.Branch)
	if err != nil {
		return plan, err
	}
	data, ok, err := gitmodulesOf(s, tree)
	if err != nil || !ok {
		return plan, err
	}
	var refused []Finding
	for _, f := range GitmodulesProblems(data) {
		if !strings.HasPrefix(f.Reason, "warning: ") {
			if f.Path == "" {
				f.Path = ".gitmodules"
			}
			refused = append(refused, f)
		}
	}
	if len(refused) > 0 {
		return plan, &RefusedError{Findings: refused}
	}
	cfg := format.New()
	if err := format.NewDecoder(bytes.NewReader(data)).Decode(cfg); err != nil {
		return plan, err // GitmodulesProblems already refused it
	}
	for _, sub := range cfg.Section("submodule").Subsections {
		planEntry(s, &plan, tree, sub, o)
	}
	sort.Slice(plan.Fetch, func(i, j int) bool { return plan.Fetch[i].Path < plan.Fetch[j].Path })
	return plan, nil
}

// planEntry adds one .gitmodules section to the plan: fetched, skipped with a reason, or (no
// gitlink, update = none) left out as git would.
func planEntry(s storer.EncodedObjectStorer, plan *SubmodulePlan, tree *object.Tree, sub *format.Subsection, o SubmoduleOptions) {
	p, u := sub.Option("path"), sub.Option("url")
	if p == "" || strings.EqualFold(sub.Option("update"), "none") {
		return
	}
	if e, n := findEntry(s, tree, p); n != 1 || e.Mode != filemode.Submodule {
		return
	}
	skip := func(reason string) {
		plan.Skipped = append(plan.Skipped, Finding{Class: ClassGitmodules, Path: "submodule." + sub.Name + ".url", Reason: reason})
	}
	t, why := submoduleTransport(u, o.Origin)
	switch {
	case why != "":
		skip(why)
	case !contains(o.Transports, t):
		allowed := strings.Join(o.Transports, ", ")
		if allowed == "" {
			allowed = "none: the box is offline"
		}
		skip(fmt.Sprintf("url %q uses %s, which this box's network mode does not allow (allowed: %s)", u, t, allowed))
	default:
		plan.Fetch = append(plan.Fetch, Submodule{Name: sub.Name, Path: p, URL: u, Transport: t})
	}
}

// submoduleTransport names the transport a validated URL uses; why explains one it cannot use.
func submoduleTransport(u, origin string) (transport, why string) {
	if strings.HasPrefix(u, "./") || strings.HasPrefix(u, "../") {
		if origin == "" {
			return "", fmt.Sprintf("url %q is relative and the box's checkout has no origin to resolve it against", u)
		}
		t, _ := submoduleTransport(origin, "")
		if t == "" {
			return "", fmt.Sprintf("url %q is relative to origin %q, which is not a network URL", u, origin)
		}
		return t, climbsOutOf(u, origin)
	}
	lower := strings.ToLower(u)
	for _, p := range []struct{ prefix, t string }{
		{"https://", "https"}, {"http://", "http"}, {"git://", "git"},
		{"ssh://", "ssh"}, {"git+ssh://", "ssh"}, {"ssh+git://", "ssh"},
	} {
		if strings.HasPrefix(lower, p.prefix) {
			return p.t, ""
		}
	}
	if !strings.Contains(u, "://") && scpLike.MatchString(u) {
		return "ssh", ""
	}
	return "", fmt.Sprintf("url %q has no network transport", u)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// deliveredTree is the tree the box checks out: the snapshot's when the store has one, else the
// branch's (HEAD's branch when branch is "").
func deliveredTree(s *filesystem.Storage, branch string) (*object.Tree, error) {
	name := SnapshotRef
	if _, err := s.Reference(SnapshotRef); err != nil {
		if branch == "" {
			head, err := s.Reference(plumbing.HEAD)
			if err != nil || head.Type() != plumbing.SymbolicReference {
				return nil, fmt.Errorf("plan submodules: HEAD names no branch")
			}
			name = head.Target()
		} else {
			name = plumbing.NewBranchReferenceName(branch)
		}
	}
	ref, err := s.Reference(name)
	if err != nil {
		return nil, fmt.Errorf("plan submodules: %s: %w", name, err)
	}
	c, err := object.GetCommit(s, ref.Hash())
	if err != nil {
		return nil, fmt.Errorf("plan submodules: %s: %w", name, err)
	}
	return c.Tree()
}

// gitmodulesOf reads the top-level .gitmodules blob of tree; a .gitmodules that is not a
// regular file (git refuses a symlinked one) or is over the cap is refused.
func gitmodulesOf(s *filesystem.Storage, tree *object.Tree) ([]byte, bool, error) {
	e, n := findEntry(s, tree, ".gitmodules")
	if n == 0 {
		return nil, false, nil
	}
	refuse := func(why string) error {
		return &RefusedError{Findings: []Finding{{Class: ClassGitmodules, Object: e.Hash.String(), Path: ".gitmodules", Reason: why}}}
	}
	if n > 1 {
		return nil, false, refuse("the tree has more than one .gitmodules entry")
	}
	if e.Mode != filemode.Regular && e.Mode != filemode.Executable {
		return nil, false, refuse(fmt.Sprintf("is not a regular file (mode %s)", e.Mode))
	}
	b, err := object.GetBlob(s, e.Hash)
	if err != nil {
		return nil, false, err
	}
	if b.Size > maxGitmodules {
		return nil, false, refuse(fmt.Sprintf("is %d bytes, over the %d byte cap", b.Size, maxGitmodules))
	}
	r, err := b.Reader()
	if err != nil {
		return nil, false, err
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, maxGitmodules+1))
	return data, err == nil, err
}

// findEntry looks p up by a linear scan of each tree on the way (go-git's FindEntry assumes
// git's sort order, which a hostile tree need not keep) and returns the entry and how many
// entries of that name the last tree holds (0 when p is missing).
func findEntry(s storer.EncodedObjectStorer, tree *object.Tree, p string) (object.TreeEntry, int) {
	parts := strings.Split(p, "/")
	for i, name := range parts {
		var found object.TreeEntry
		n := 0
		for _, e := range tree.Entries {
			if e.Name == name {
				found, n = e, n+1
			}
		}
		if n != 1 || i == len(parts)-1 {
			return found, n
		}
		if found.Mode != filemode.Dir {
			return object.TreeEntry{}, 0
		}
		sub, err := object.GetTree(s, found.Hash)
		if err != nil {
			return object.TreeEntry{}, 0
		}
		tree = sub
	}
	return object.TreeEntry{}, 0
}

// SubmoduleArgv is the guest command that fetches plan's submodules in the checkout at dir.
func SubmoduleArgv(dir string, plan SubmodulePlan) ([]string, error) {
	if !strings.HasPrefix(dir, "/") || hasControl(dir) {
		return nil, fmt.Errorf("submodules: guest dir %q must be absolute without control characters", dir)
	}
	for _, t := range plan.Transports {
		if !contains(TransportsFull, t) {
			return nil, fmt.Errorf("submodules: transport %q is not https, ssh or git", t)
		}
	}
	argv := []string{"env", "GIT_TERMINAL_PROMPT=0", "GIT_ALLOW_PROTOCOL=" + strings.Join(plan.Transports, ":"),
		"git", "-C", dir, "-c", "protocol.allow=never", "-c", "protocol.file.allow=never", "-c", "protocol.ext.allow=never"}
	for _, t := range plan.Transports {
		argv = append(argv, "-c", "protocol."+t+".allow=always")
	}
	argv = append(argv, "-c", "transfer.fsckObjects=true", "submodule", "update", "--init", "--recursive", "--")
	for _, m := range plan.Fetch {
		if strings.HasPrefix(m.Path, "-") || pathProblem(m.Path) != "" {
			return nil, fmt.Errorf("submodules: path %q is not a plain relative path", m.Path)
		}
		argv = append(argv, m.Path)
	}
	return argv, nil
}

// UpdateSubmodules has the box's git fetch and check out plan's submodules in dir. It runs
// nothing when the plan fetches nothing.
func UpdateSubmodules(ctx context.Context, g Guest, dir string, plan SubmodulePlan) error {
	if len(plan.Fetch) == 0 {
		return nil
	}
	argv, err := SubmoduleArgv(dir, plan)
	if err != nil {
		return err
	}
	code, err := g.Exec(ctx, argv, nil, io.Discard)
	if err != nil {
		return fmt.Errorf("fetch submodules in the box: %w", err)
	}
	if code != 0 {
		return fmt.Errorf("fetch submodules in the box: git submodule update exited %d (see its message above)", code)
	}
	return nil
}
