package report

// Build reads every host-side record of a box into one Record. Rules:
//   - The session is chosen from the audit log: by ID, or the box's last; with All, every
//     session of the box, and the window runs from the first start to the last end.
//   - Each section is read on its own; one that cannot be read says why (Unavailable) and the
//     record is still made: a record that leaves out what it could not read, silently, would
//     be worse than one that says so.
//   - The diff check is the state of the work tree now, so it is taken only for the box's last
//     session (or for All); an older session's diff section says so.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/git-corral/git-corral/audit"
	"github.com/git-corral/git-corral/diff"
	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/internal/visible"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/project"
	"github.com/git-corral/git-corral/vm"
)

// ErrNoSession means the audit log holds no session of the box (or none with the ID asked).
var ErrNoSession = errors.New("no session of this box in the audit log")

// Options says what to record. Home and Box are required.
type Options struct {
	// Home is the state directory.
	Home home.Home
	// Box is the box.
	Box string
	// Session is the ID of the session to record; "" means the box's last.
	Session string
	// All records every session of the box (a KindBox record).
	All bool
	// Now is the time of the report; nil means time.Now.
	Now func() time.Time
	// Generator names the program ("git corral v1.2.3").
	Generator string
	// Policy is how to load the effective configuration; a zero Home skips the section.
	Policy policy.LoadOptions
	// Project is the checkout of a mount-mode box (diff and commits); nil for none.
	Project *project.Project
	// ConfigPaths are the work-tree paths the host's git config names (diff.Options).
	ConfigPaths []diff.ConfigPath
	// CloneStore is a clone-mode box's store and CloneBranch the branch it delivered.
	CloneStore, CloneBranch string
	// Snapshots lists the box's snapshots; nil records the section as unavailable.
	Snapshots func(ctx context.Context) ([]vm.Snapshot, error)
}

// Build reads the records and returns the (unsealed) Record; Encode seals and writes it.
func Build(ctx context.Context, o Options) (*Record, error) {
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	at := now().UTC()
	res, err := audit.Read(o.Home.SessionsLog(), audit.Filter{Box: o.Box})
	if err != nil {
		return nil, err
	}
	all := sessionsOf(res.Records, at)
	chosen, last, err := choose(all, o)
	if err != nil {
		return nil, err
	}
	w := windowOf(chosen, at)
	rec := &Record{}
	s := &rec.Sections
	s.Record = Header{Kind: KindSession, Box: o.Box, Generated: at, Generator: o.Generator, Window: w,
		Sources: []string{o.Home.SessionsLog(), o.Home.BoxMeta(o.Box), o.Home.EgressLog(o.Box)}, Notes: baseNotes()}
	if o.All {
		s.Record.Kind = KindBox
	} else {
		s.Record.Session = chosen[0].ID
	}
	if res.Bad > 0 || res.PartialTail {
		s.Record.Notes = append(s.Record.Notes, fmt.Sprintf("the audit log has %d lines that are not records", res.Bad))
	}
	s.Sessions = chosen
	s.Box = boxSection(o.Home, o.Box)
	s.Policy = policySection(ctx, o.Policy, chosen[len(chosen)-1])
	entries, bad, err := readEgress(o.Home.EgressLog(o.Box))
	if err != nil {
		s.Egress = Egress{Log: o.Home.EgressLog(o.Box), Counts: map[string]int{}, Destinations: []Destination{}, Refusals: []EgressEntry{}, Unavailable: err.Error()}
		s.Pushes = Pushes{Counts: map[string]int{}, Entries: []EgressEntry{}}
	} else {
		s.Egress, s.Pushes = egressSection(o.Home.EgressLog(o.Box), entries, bad, w)
	}
	if o.All || last {
		s.Diff = diffSection(ctx, o)
	} else {
		s.Diff = Diff{Verdict: "unavailable", Unavailable: "the diff check reads the work tree as it is now, which is the box's last session's end, not this session's"}
	}
	if s.Diff.Verdict != "unavailable" && o.CloneStore == "" {
		changed := false
		for _, c := range s.Diff.Changes {
			changed = changed || c.Path == policy.RepoFile
		}
		s.Policy.RepositoryFileChanged = &changed
	}
	s.Snapshots = snapshotSection(ctx, o.Snapshots, w)
	s.Commits = commitsOf(o, w)
	return rec, nil
}

// choose returns the sessions to record and whether they include the box's last.
func choose(all []Session, o Options) ([]Session, bool, error) {
	if len(all) == 0 {
		return nil, false, fmt.Errorf("box %q: %w (%s)", o.Box, ErrNoSession, o.Home.SessionsLog())
	}
	if o.All {
		return all, true, nil
	}
	if o.Session == "" {
		return all[len(all)-1:], true, nil
	}
	for i, s := range all {
		if s.ID == o.Session {
			return all[i : i+1], i == len(all)-1, nil
		}
	}
	return nil, false, fmt.Errorf("box %q: %w: no session %q (the last is %q)", o.Box, ErrNoSession, o.Session, all[len(all)-1].ID)
}

// windowOf spans the sessions; it is open when one has no end record and ends now.
func windowOf(ss []Session, now time.Time) Window {
	w := Window{Start: ss[0].Start, End: ss[0].End}
	for _, s := range ss {
		if s.End.After(w.End) {
			w.End = s.End
		}
		if s.Ended == "" && s.End.Equal(now) {
			w.Open = true
		}
	}
	return w
}

func baseNotes() []string {
	return []string{
		"every section is read from host files the box cannot write, except the commits of a mount-mode checkout and the repository's .corral.toml: their hashes bind content, but commit times, messages and the repository layer are the box's to write (policy.repositoryFileChanged says whether .corral.toml changed since the session base)",
		"the egress log is per box: decisions are taken from the window by time, so sessions whose windows overlap (sessions[].overlaps) share them",
		"commands are recorded by name, argument count and argv sha256; the audit log holds the argv",
	}
}

// boxSection reads the box's metadata and its golden base.
func boxSection(h home.Home, box string) BoxInfo {
	b := BoxInfo{Name: box}
	raw, err := os.ReadFile(h.BoxMeta(box))
	if err != nil {
		b.Unavailable = fmt.Sprintf("read box metadata: %v (the box was deleted, or never created)", err)
		return b
	}
	var meta vm.Meta
	if err := json.Unmarshal(raw, &meta); err != nil {
		b.Unavailable = fmt.Sprintf("read box metadata %s: %v", h.BoxMeta(box), err)
		return b
	}
	sum := sha256.Sum256(raw)
	b.MetaSHA256 = "sha256:" + hex.EncodeToString(sum[:])
	b.Mode, b.Project, b.Image, b.TemplateHash = "mount", meta.Project, meta.Image, meta.TemplateHash
	if meta.NoProjectMount {
		b.Mode = "clone"
	}
	b.MountType, b.Network, b.TCG = meta.MountType, meta.Network, meta.TCG
	if !meta.Created.IsZero() {
		t := meta.Created.UTC()
		b.Created = &t
	}
	if meta.Golden != "" {
		b.Golden = goldenInfo(h, meta.Golden)
	}
	return b
}

func goldenInfo(h home.Home, key string) *GoldenInfo {
	gi := &GoldenInfo{Key: key}
	g, err := (&vm.Manager{Home: h}).FindGolden(key)
	if err != nil {
		gi.Unavailable = err.Error()
		return gi
	}
	gi.Image, gi.SHA256, gi.StateSHA256, gi.LimaVersion = g.Image, g.SHA256, g.StateSHA256, g.LimaVersion
	if !g.Built.IsZero() {
		t := g.Built.UTC()
		gi.Built = &t
	}
	return gi
}

// policySection is the policy session started under, from the snapshot its start record names
// (checked against that digest), or, for a session from before sessions stored one, the
// effective configuration loaded now, as git corral config --json shows it.
func policySection(ctx context.Context, lo policy.LoadOptions, session Session) Policy {
	p := Policy{Settings: []policy.Setting{}, Files: []PolicyFile{}, At: "report"}
	if lo.Home.Dir == "" {
		p.Unavailable = "no configuration was loaded"
		return p
	}
	p.Files = policyFiles(lo)
	if session.PolicyDigest != "" {
		snap, err := storedSnapshot(lo.Home, session.PolicyDigest)
		if err != nil {
			p.Unavailable = fmt.Sprintf("session %s started under policy %s: %v", session.ID, session.PolicyDigest, err)
			return p
		}
		p.Settings, p.Digest, p.At, p.Session = snap.Settings, snap.Digest, "session start", session.ID
		return p
	}
	eff, err := policy.Load(ctx, lo)
	if err != nil {
		p.Unavailable = "load the configuration: " + err.Error()
		return p
	}
	snap, err := eff.Snapshot()
	if err != nil {
		p.Unavailable = err.Error()
		return p
	}
	p.Settings, p.Digest = snap.Settings, snap.Digest
	return p
}

// storedSnapshot reads the policy snapshot stored under digest and checks it.
func storedSnapshot(h home.Home, digest string) (policy.Snapshot, error) {
	f := h.PolicySnapshot(digest)
	if f == "" {
		return policy.Snapshot{}, errors.New("the digest is malformed")
	}
	raw, err := os.ReadFile(f)
	if err != nil {
		return policy.Snapshot{}, err
	}
	return policy.CheckSnapshot(raw, digest)
}

// policyFiles lists the files a load reads with their hashes, in layer order.
func policyFiles(lo policy.LoadOptions) []PolicyFile {
	files := []PolicyFile{{Layer: "global", Path: lo.Home.GlobalConfig()}}
	switch {
	case lo.ProjectFile != "":
		files = append(files, PolicyFile{Layer: "repository", Path: lo.ProjectFile})
	case lo.TopLevel != "":
		files = append(files, PolicyFile{Layer: "repository", Path: filepath.Join(lo.TopLevel, policy.RepoFile)})
	}
	if lo.Box != "" {
		files = append(files, PolicyFile{Layer: "project", Path: lo.Home.ProjectConfig(lo.Box)})
	}
	for i := range files {
		b, err := os.ReadFile(files[i].Path)
		if err != nil {
			files[i].Missing = true
			continue
		}
		files[i].SHA256 = sumHex(b)
	}
	return files
}

// diffSection runs the host's diff check: the work tree against the session base (mount), or
// each fetched ref against the delivered branch (clone).
func diffSection(ctx context.Context, o Options) Diff {
	if o.CloneStore != "" {
		return cloneDiff(ctx, o)
	}
	if o.Project == nil {
		return Diff{Verdict: "unavailable", Unavailable: "no checkout of the box was given (run git corral report in its checkout)"}
	}
	r, err := diff.Compare(ctx, o.Project, diff.Options{Box: o.Box, Home: o.Home.Dir, ConfigPaths: o.ConfigPaths})
	if err != nil {
		return Diff{Verdict: "unavailable", Unavailable: err.Error()}
	}
	r = r.Escaped()
	d := Diff{Verdict: "clean", Base: &r.Base, Findings: r.Findings, Changes: []Change{}}
	if len(r.Findings) > 0 {
		d.Verdict = "findings"
	}
	for _, c := range r.Changes {
		d.Changes = append(d.Changes, Change{Path: c.Path, Status: c.Status, Finding: c.Finding})
	}
	return d
}

func cloneDiff(ctx context.Context, o Options) Diff {
	d := Diff{Verdict: "clean", Refs: []RefDiff{}}
	c := commitsSection(o.CloneStore, o.Box, true, Window{})
	if c.Unavailable != "" {
		return Diff{Verdict: "unavailable", Unavailable: c.Unavailable}
	}
	for _, ref := range c.FetchedRefs {
		rd := RefDiff{Ref: ref.Name}
		sr, err := diff.CompareStore(ctx, o.CloneStore, ref.Name, o.CloneBranch)
		if err != nil {
			rd.Error = visible.String(err.Error())
		} else {
			rd.Base, rd.Commit, rd.Files, rd.Findings = sr.Base, sr.Commit, sr.Files, sr.Findings
		}
		if len(rd.Findings) > 0 || rd.Error != "" {
			d.Verdict = "findings"
		}
		d.Refs = append(d.Refs, rd)
	}
	return d
}

// snapshotSection keeps the box's snapshots created in the window.
func snapshotSection(ctx context.Context, list func(context.Context) ([]vm.Snapshot, error), w Window) Snapshots {
	s := Snapshots{Taken: []Snapshot{}}
	if list == nil {
		s.Unavailable = "the box's snapshots were not read"
		return s
	}
	all, err := list(ctx)
	if err != nil {
		s.Unavailable = "list the box's snapshots: " + err.Error()
		return s
	}
	for _, sn := range all {
		if inWindow(sn.Created, w) {
			s.Taken = append(s.Taken, Snapshot{Name: sn.Name, Created: sn.Created.UTC(), Auto: sn.Auto})
		}
	}
	return s
}

// commitsOf reads the commits of the clone store or of the checkout.
func commitsOf(o Options, w Window) Commits {
	switch {
	case o.CloneStore != "":
		return commitsSection(o.CloneStore, o.Box, true, w)
	case o.Project != nil:
		return commitsSection(o.Project.TopLevel, o.Box, false, w)
	}
	return Commits{FetchedRefs: []Ref{}, Made: []Commit{}, Unavailable: "no checkout or clone store of the box was given"}
}
