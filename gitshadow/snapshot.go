package gitshadow

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/git-corral/git-corral/internal/atomicfile"
)

// maxTreeFiles bounds how many files one snapshotted directory (hooks/, info/, a hooksPath
// target) may hold; more is refused rather than silently left unprotected.
const maxTreeFiles = 10000

// maxFileSize bounds one snapshotted file. Git metadata files are small.
const maxFileSize = 16 << 20

// fileState is what a path held when it was snapshotted.
type fileState struct {
	// Type is "file", "symlink", "dir", "absent" or "other".
	Type string `json:"type"`
	// Perm is the permission bits of a file.
	Perm fs.FileMode `json:"perm,omitempty"`
	// Hash is the sha256 of a file's content; the content is kept under objects/HASH.
	Hash string `json:"hash,omitempty"`
	// Link is a symlink's target.
	Link string `json:"link,omitempty"`
	// UID and GID own the path; a restored path gets them back.
	UID uint32 `json:"uid"`
	GID uint32 `json:"gid"`
}

// owner returns the uid and gid of fi.
func owner(fi fs.FileInfo) (uint32, uint32) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Uid, st.Gid
	}
	return 0, 0
}

// pinState identifies a directory so that a replacement under the same name is noticed.
type pinState struct {
	Dev uint64 `json:"dev"`
	Ino uint64 `json:"ino"`
}

// Snapshot is the host-side record of every host-executed git metadata file of a plan, with a
// copy of each, taken when a session starts and kept outside the box's reach (in stateDir).
type Snapshot struct {
	// Plan is the plan the snapshot was taken of. The record keeps only its TopLevel (loading the
	// whole plan cost as much as a check): after LoadSnapshot, Plan holds nothing else. TakeSnapshot
	// writes the whole plan beside the record as plan.json, for people.
	Plan *Plan `json:"-"`
	// TopLevel is the work tree the checks scan for planted .git entries (Plan.TopLevel).
	TopLevel string `json:"topLevel"`
	StateDir string `json:"stateDir"`
	// Files maps each snapshotted path to its state; absent paths are recorded too, so that a
	// file appearing there is noticed.
	Files map[string]fileState `json:"files"`
	// Trees are directories whose whole content is snapshotted (hooks/, info/, hooksPath): an
	// entry that appears in them is quarantined.
	Trees map[string]bool `json:"trees"`
	// Pins are the git dirs and modules/ levels that must stay the same directory.
	Pins map[string]pinState `json:"pins"`
	// GitDirs are the git dirs known at the start or adopted since; any other git dir found
	// under modules/ or worktrees/ or in the work tree is new and gets neutralised.
	GitDirs map[string]bool `json:"gitDirs"`
	// Adopted are the git dirs the box added during a session (a subset of GitDirs).
	Adopted map[string]bool `json:"adopted,omitempty"`
	// Stat is the stat cache of the snapshotted regular files (see statcache.go).
	Stat map[string]statEntry `json:"stat,omitempty"`
	// DirStat is the stat cache of the snapshotted directories (trees) listed as holding nothing
	// new and no subdirectory.
	DirStat map[string]statEntry `json:"dirStat,omitempty"`

	mu  sync.Mutex
	seq int
	// statDirty is set when Stat gained an entry a later check can trust: saving it then spares
	// the next session from reading that file.
	statDirty bool
}

// Snapshot hashes and copies every host-executed git metadata file of plan into stateDir
// (created 0700) and writes the record there as snapshot.json.
func (p *Plan) Snapshot(ctx context.Context, stateDir string) (*Snapshot, error) {
	return TakeSnapshot(ctx, p, stateDir)
}

// TakeSnapshot is Plan.Snapshot as a function: it records plan's metadata under stateDir.
func TakeSnapshot(ctx context.Context, plan *Plan, stateDir string) (*Snapshot, error) {
	for _, d := range []string{stateDir, filepath.Join(stateDir, "objects"), filepath.Join(stateDir, "quarantine")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("snapshot git metadata: %w", err)
		}
	}
	s := &Snapshot{Plan: plan, TopLevel: plan.TopLevel, StateDir: stateDir, Files: map[string]fileState{},
		Trees: map[string]bool{}, Pins: map[string]pinState{}, GitDirs: map[string]bool{}}
	if err := writePlan(plan, stateDir); err != nil {
		return nil, err
	}
	for _, g := range plan.GitDirs {
		s.GitDirs[g.Path] = true
	}
	for _, sh := range plan.AllShadows() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := s.record(sh); err != nil {
			return nil, fmt.Errorf("snapshot git metadata: %w", err)
		}
	}
	for _, g := range plan.GitDirs { // symlinks already there are the user's: keep them as they are
		_, links := gitDirsBelow(g.Path)
		for _, l := range links {
			if err := s.recordFile(l); err != nil {
				return nil, fmt.Errorf("snapshot git metadata: %w", err)
			}
		}
	}
	return s, s.save()
}

// record adds one shadow to the snapshot.
func (s *Snapshot) record(sh Shadow) error {
	switch {
	case sh.Kind == Pin:
		if st, ok := pinOf(sh.Path); ok {
			s.Pins[sh.Path] = st
		}
		return nil
	case sh.Dir:
		s.Trees[sh.Path] = true
		return s.recordTree(sh.Path)
	default:
		return s.recordFile(sh.Path)
	}
}

// pinOf returns the device and inode of a directory.
func pinOf(path string) (pinState, bool) {
	fi, err := os.Lstat(path)
	if err != nil || !fi.IsDir() {
		return pinState{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return pinState{}, false
	}
	return pinState{Dev: uint64(st.Dev), Ino: st.Ino}, true
}

// recordTree records a directory and every entry below it, and the directory's stat cache
// entry when it holds no subdirectory.
func (s *Snapshot) recordTree(dir string) error {
	if err := s.recordFile(dir); err != nil {
		return err
	}
	at := now().UnixNano()
	k, listable := s.treeKey(dir)
	n, subdirs := 0, false
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return nil
		}
		subdirs = subdirs || d.IsDir()
		if inert(path) {
			return nil
		}
		if n++; n > maxTreeFiles {
			return fmt.Errorf("%s: more than %d entries", dir, maxTreeFiles)
		}
		return s.recordFile(path)
	})
	if err == nil && listable && !subdirs {
		s.recordDir(dir, statEntry{statKey: k, Hash: listedFlat, At: at})
	}
	return err
}

// inert reports whether git never reads path as a hook or config: a *.sample entry (git init
// puts a dozen in every hooks/ dir). Such entries are neither snapshotted nor quarantined, which
// keeps a snapshot of 1,000 submodules small; renaming one to its real name is caught as a new
// entry.
func inert(path string) bool {
	return strings.HasSuffix(path, ".sample")
}

// recordFile records what is at path now, keeping a copy of a file's content.
func (s *Snapshot) recordFile(path string) error {
	st, data, err := s.readStateAt(path, now().UnixNano())
	if err != nil {
		return err
	}
	if st.Type == "file" {
		if err := s.writeObject(st.Hash, data); err != nil {
			return err
		}
	}
	s.Files[path] = st
	return nil
}

// writeObject keeps a copy of content under objects/HASH (temp file and rename, so a reader never
// sees half an object). It does not sync each one: save syncs once for the whole snapshot, which
// keeps a snapshot of 1,000 submodules from costing 1,000 fsyncs.
func (s *Snapshot) writeObject(hash string, data []byte) error {
	obj := filepath.Join(s.StateDir, "objects", hash)
	if _, err := os.Stat(obj); err == nil {
		return nil
	}
	tmp := obj + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("keep a copy: %w", err)
	}
	if err := os.Rename(tmp, obj); err != nil {
		return fmt.Errorf("keep a copy: %w", err)
	}
	return nil
}

// readStateInfo reads the state of path and, for a file, its content; fi is what lstat said
// before the content was read (nil when path is absent).
func readStateInfo(path string) (st fileState, data []byte, fi fs.FileInfo, err error) {
	fi, err = os.Lstat(path)
	if err == nil {
		defer func() { st.UID, st.GID = owner(fi) }()
	}
	switch {
	case os.IsNotExist(err):
		return fileState{Type: "absent"}, nil, nil, nil
	case err != nil:
		return fileState{}, nil, nil, err
	case fi.IsDir():
		return fileState{Type: "dir", Perm: fi.Mode().Perm()}, nil, fi, nil
	case fi.Mode()&fs.ModeSymlink != 0:
		link, err := os.Readlink(path)
		return fileState{Type: "symlink", Link: link}, nil, fi, err
	case !fi.Mode().IsRegular():
		return fileState{Type: "other"}, nil, fi, nil
	case fi.Size() > maxFileSize:
		return fileState{}, nil, fi, fmt.Errorf("%s: %d bytes, more than %d", path, fi.Size(), maxFileSize)
	}
	data, err = os.ReadFile(path)
	if err != nil {
		return fileState{}, nil, fi, err
	}
	sum := sha256.Sum256(data)
	return fileState{Type: "file", Perm: fi.Mode().Perm(), Hash: hex.EncodeToString(sum[:])}, data, fi, nil
}

// save writes the snapshot record atomically, so a session that crashed can still be verified
// with LoadSnapshot.
func (s *Snapshot) save() error {
	syscall.Sync() // the objects written since the last save
	return s.saveRecord()
}

// saveRecord writes the record without syncing objects first: for a record that refers to no
// object it did not refer to when last saved (only the stat cache changed).
func (s *Snapshot) saveRecord() error {
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(s.StateDir, "snapshot.json"), data, 0o600); err != nil {
		return err
	}
	s.statDirty = false
	return nil
}

// LoadSnapshot reads the record a Snapshot saved in stateDir.
func LoadSnapshot(ctx context.Context, stateDir string) (*Snapshot, error) {
	data, err := os.ReadFile(filepath.Join(stateDir, "snapshot.json"))
	if err != nil {
		return nil, fmt.Errorf("load git metadata snapshot: %w", err)
	}
	var rec struct {
		*Snapshot
		// Legacy is the whole plan a record written before topLevel kept.
		Legacy *struct {
			TopLevel string `json:"topLevel"`
		} `json:"plan"`
	}
	rec.Snapshot = &Snapshot{}
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("load git metadata snapshot %s: %w", stateDir, err)
	}
	s := rec.Snapshot
	if s.TopLevel == "" && rec.Legacy != nil {
		s.TopLevel = rec.Legacy.TopLevel
	}
	if s.TopLevel == "" {
		return nil, fmt.Errorf("load git metadata snapshot %s: no top level recorded", stateDir)
	}
	s.Plan = &Plan{TopLevel: s.TopLevel}
	s.StateDir = stateDir
	return s, nil
}

// writePlan keeps the plan a snapshot is taken of beside it, for people: LoadSnapshot does not
// read it.
func writePlan(plan *Plan, stateDir string) error {
	data, err := json.MarshalIndent(plan, "", "  ")
	if err != nil {
		return fmt.Errorf("snapshot git metadata: %w", err)
	}
	if err := os.WriteFile(filepath.Join(stateDir, "plan.json"), data, 0o600); err != nil {
		return fmt.Errorf("snapshot git metadata: %w", err)
	}
	return nil
}

// sortedKeys returns m's keys in order, parents before children.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
