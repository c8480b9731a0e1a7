package gitshadow

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	format "github.com/go-git/go-git/v5/plumbing/format/config"
)

// Git dirs that appear during a session (git submodule add, git worktree add, git init or
// git clone in the work tree) are not refused — git in the box keeps working — but the host
// neutralises them as soon as it sees them: hooks other than *.sample are quarantined,
// config.worktree and a stray commondir are quarantined, and config is cut down to the keys in
// safeKeys, which execute nothing. The git dir is then adopted into the snapshot, so later
// changes to it are restored like any other. The guest shadows it from its next boot.

// safeKeys lists the config keys kept in a new git dir: section, then key, lower-case; "*" is
// any subsection.
var safeKeys = map[string]map[string]bool{
	"core":        {"repositoryformatversion": true, "filemode": true, "bare": true, "logallrefupdates": true, "ignorecase": true, "precomposeunicode": true, "symlinks": true, "worktree": true},
	"remote.*":    {"url": true, "pushurl": true, "fetch": true},
	"branch.*":    {"remote": true, "merge": true},
	"submodule.*": {"url": true, "active": true},
	"extensions":  {"objectformat": true},
}

// newGitDirs finds git dirs under the modules/ and worktrees/ dirs of every known git dir that
// are not known, neutralises and adopts them.
func (s *Snapshot) newGitDirs(ctx context.Context) []Change {
	var changes []Change
	for _, g := range sortedKeys(s.GitDirs) {
		if ctx.Err() != nil {
			break
		}
		found, links := gitDirsBelow(g)
		for _, d := range found {
			if !s.GitDirs[d] {
				changes = append(changes, s.neutralise(d, strings.Contains(d, "/worktrees/"))...)
			}
		}
		for _, l := range links {
			if _, known := s.Files[l]; !known {
				changes = append(changes, s.quarantineChange(l, "symlink where git looks for a git dir"))
			}
		}
	}
	return changes
}

// gitDirsBelow returns the git dirs under g's modules/ and worktrees/, and the symlinks found
// there: git follows a symlinked modules/NAME or worktrees/NAME to whatever it points at, so a
// new one is quarantined rather than neutralised (which would write through it).
func gitDirsBelow(g string) (found, links []string) {
	findGitDirs(filepath.Join(g, "modules"), &found, &links)
	wts, _ := os.ReadDir(filepath.Join(g, "worktrees"))
	for _, e := range wts {
		p := filepath.Join(g, "worktrees", e.Name())
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			links = append(links, p)
		case e.IsDir() && isGitDir(p):
			found = append(found, p)
		}
	}
	return found, links
}

// quarantineChange quarantines path and describes it as an added entry.
func (s *Snapshot) quarantineChange(path, detail string) Change {
	c := Change{Path: path, What: "added", Detail: detail}
	q, err := s.quarantine(path)
	if err != nil {
		c.Detail = err.Error()
	} else {
		c.Quarantine, c.Restored = q, true
	}
	return c
}

// findGitDirs appends the git dirs below a modules/ dir (not descending into git dirs: their own
// modules/ is walked when they are processed) and the symlinks met on the way.
func findGitDirs(dir string, out, links *[]string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if e.Type()&fs.ModeSymlink != 0 {
			*links = append(*links, p)
			continue
		}
		if !e.IsDir() {
			continue
		}
		if isGitDir(p) {
			*out = append(*out, p)
			continue
		}
		findGitDirs(p, out, links)
	}
}

// neutralise makes a new git dir inert for the host's git and adopts it into the snapshot.
func (s *Snapshot) neutralise(dir string, worktree bool) []Change {
	var changes []Change
	note := func(path, what, q string, err error) {
		c := Change{Path: path, What: what, Quarantine: q, Restored: err == nil, Detail: "new git dir " + dir}
		if err != nil {
			c.Detail = err.Error()
		}
		changes = append(changes, c)
	}
	for _, name := range []string{"hooks", "info"} {
		// A symlink (or anything but a directory) here would make git read hooks or
		// attributes from wherever it points, which the box may keep writing: quarantine the
		// entry itself, never what it points at.
		p := filepath.Join(dir, name)
		if fi, err := os.Lstat(p); err == nil && !fi.IsDir() {
			q, err := s.quarantine(p)
			note(p, "neutralised", q, err)
		}
	}
	hooks, _ := os.ReadDir(filepath.Join(dir, "hooks"))
	for _, h := range hooks {
		if !strings.HasSuffix(h.Name(), ".sample") {
			p := filepath.Join(dir, "hooks", h.Name())
			q, err := s.quarantine(p)
			note(p, "neutralised", q, err)
		}
	}
	for _, name := range []string{"config.worktree", "commondir"} {
		p := filepath.Join(dir, name)
		if _, err := os.Lstat(p); err != nil || (name == "commondir" && worktree && (commondirIsParent(p) || emptyFile(p))) {
			// An empty commondir is one git has opened and not yet written: adopt records it
			// as pending, and the next check keeps "../.." or restores anything else away.
			continue
		}
		q, err := s.quarantine(p)
		note(p, "neutralised", q, err)
	}
	safe, q, changed, err := s.sanitizeConfig(filepath.Join(dir, "config"))
	if changed || err != nil {
		note(filepath.Join(dir, "config"), "neutralised", q, err)
	}
	if betweenNeutraliseAndAdopt != nil {
		betweenNeutraliseAndAdopt(dir)
	}
	s.adopt(dir, worktree, safe)
	return changes
}

// betweenNeutraliseAndAdopt, when set (by tests only), runs after a new git dir is neutralised
// and before it is adopted: the moment a box still writing the git dir races the host.
var betweenNeutraliseAndAdopt func(dir string)

// forgetVanished drops the git dirs the box added and then removed again (a failed git worktree
// add or submodule clone cleans up after itself): nothing of them is left for the host's git to
// run, so there is nothing to restore, and restoring their files would only re-create what the
// box wrote.
func (s *Snapshot) forgetVanished() []Change {
	var out []Change
	for _, dir := range sortedKeys(s.Adopted) {
		if _, err := os.Lstat(dir); !os.IsNotExist(err) {
			continue
		}
		under := func(p string) bool { return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator)) }
		for p := range s.Files {
			if under(p) {
				delete(s.Files, p)
			}
		}
		for p := range s.Trees {
			if under(p) {
				delete(s.Trees, p)
			}
		}
		for p := range s.Pins {
			if under(p) {
				delete(s.Pins, p)
			}
		}
		delete(s.GitDirs, dir)
		delete(s.Adopted, dir)
		out = append(out, Change{Path: dir, What: "added and removed again", Restored: true, Detail: "nothing of it is left to run"})
	}
	return out
}

// lateWorktreeFile reports whether path is the commondir ("../..") or gitdir (a regular file)
// that git writes into a linked worktree's git dir after creating it: an adopted worktree
// recorded before git got to them must not lose them, or the box's own git worktree add fails.
// pending is true while such a file is still empty (git opens it, then writes): it is left
// alone until its content shows. Any other commondir is still restored away: it would point the
// host's git at other config.
func (s *Snapshot) lateWorktreeFile(path string, want fileState) (accept, pending bool) {
	if want.Type != "absent" || !s.Adopted[filepath.Dir(path)] || !strings.Contains(path, "/worktrees/") {
		return false, false
	}
	name := filepath.Base(path)
	if name != "commondir" && name != "gitdir" {
		return false, false
	}
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return false, false
	}
	if fi.Size() == 0 {
		return false, true
	}
	return name == "gitdir" || commondirIsParent(path), false
}

// emptyFile reports whether path is an empty regular file (not following a symlink).
func emptyFile(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Size() == 0
}

// commondirIsParent reports whether a worktree's commondir file says "../.." (what git writes).
func commondirIsParent(path string) bool {
	data, err := readSmall(path)
	return err == nil && strings.TrimSpace(string(data)) == "../.."
}

// adopt adds a neutralised git dir to the snapshot, so later changes to it are restored. It
// records what neutralise left, not what is there now: the box may still be writing the git dir
// (git clone, git submodule add), and whatever it wrote since neutralise looked must be found
// by the next check rather than adopted as the host's own. So hooks/ is recorded without any
// entry (every entry but *.sample was quarantined), hooks/ and info/ as a directory or absent
// (never a symlink), config with the allow-listed content (safeConfig; nil when config is
// absent or unreadable), and config.worktree as absent.
// commondir and a worktree's gitdir, which neutralise keeps or removes by value, and info/ are
// recorded as they are.
func (s *Snapshot) adopt(dir string, worktree bool, safeConfig []byte) {
	s.GitDirs[dir] = true
	if s.Adopted == nil {
		s.Adopted = map[string]bool{}
	}
	s.Adopted[dir] = true
	if st, ok := pinOf(dir); ok {
		s.Pins[dir] = st
	}
	s.Files[filepath.Join(dir, "config.worktree")] = fileState{Type: "absent"}
	s.recordFile(filepath.Join(dir, "commondir"))
	s.recordConfig(filepath.Join(dir, "config"), safeConfig)
	if worktree {
		s.recordFile(filepath.Join(dir, "gitdir"))
		// commondir and gitdir that git has opened but not yet written are recorded as
		// absent: lateWorktreeFile then accepts what git writes into them.
		for _, name := range []string{"commondir", "gitdir"} {
			if p := filepath.Join(dir, name); emptyFile(p) {
				s.Files[p] = fileState{Type: "absent"}
			}
		}
	}
	hooks := filepath.Join(dir, "hooks")
	s.Trees[hooks] = true
	s.recordFile(hooks)
	info := filepath.Join(dir, "info")
	s.Trees[info] = true
	s.recordTree(info)
	for _, p := range []string{hooks, info} { // a directory or nothing, as neutralise left it
		if st := s.Files[p]; st.Type != "dir" {
			s.Files[p] = fileState{Type: "absent"}
		}
	}
}

// recordConfig records a new git dir's config as holding exactly safe, whatever the file holds
// now; a difference is restored by the next check.
func (s *Snapshot) recordConfig(path string, safe []byte) {
	if err := s.recordFile(path); err != nil || safe == nil {
		return
	}
	st := s.Files[path]
	sum := sha256.Sum256(safe)
	if hash := hex.EncodeToString(sum[:]); st.Type != "file" || st.Hash != hash {
		if s.writeObject(hash, safe) == nil {
			s.Files[path] = fileState{Type: "file", Perm: 0o644, Hash: hash, UID: st.UID, GID: st.GID}
		}
	}
}

// sanitizeConfig rewrites a config file keeping only safeKeys, and returns the content it left
// there (nil when there is no config file). An unreadable or unparsable config is quarantined
// and replaced by a minimal one.
func (s *Snapshot) sanitizeConfig(path string) (safe []byte, quarantined string, changed bool, err error) {
	for attempt := 1; ; attempt++ {
		before, _ := os.Lstat(path)
		data, rerr := readSmall(path)
		if os.IsNotExist(rerr) {
			return nil, "", false, nil
		}
		cfg := format.New()
		if rerr == nil {
			rerr = format.NewDecoder(bytes.NewReader(data)).Decode(cfg)
		}
		out := []byte("[core]\n\trepositoryformatversion = 0\n")
		if rerr == nil {
			out = []byte(renderSafeConfig(cfg))
		}
		if bytes.Equal(out, data) {
			return out, "", false, nil
		}
		q, err := s.quarantineCopy(path)
		if err != nil {
			return nil, "", true, err
		}
		tmp, err := writeTemp(path, out, 0o644)
		if err != nil {
			return nil, q, true, err
		}
		// Renamed once git holds no lock, and only over the file that was read: a config git
		// committed meanwhile is read again (a box rewriting it without end gets the safe
		// content at the fifth try, and the next check puts it back if git commits over it).
		unchanged := func() bool { return sameFile(path, before) }
		if attempt >= 5 {
			unchanged = nil
		}
		err = renameWhenGitIdle(tmp, path, unchanged)
		if errors.Is(err, errGitRaced) {
			os.Remove(tmp)
			continue
		}
		if err != nil {
			os.Remove(tmp)
			return nil, q, true, fmt.Errorf("write %s: %w", path, err)
		}
		return out, q, true, nil
	}
}

// quarantineCopy keeps a copy of a file in the quarantine without moving it.
func (s *Snapshot) quarantineCopy(path string) (string, error) {
	s.seq++
	dst := filepath.Join(s.StateDir, "quarantine", fmt.Sprintf("%04d-%s", s.seq, safeName(filepath.Base(path))))
	if err := copyOne(path, dst); err != nil {
		return "", fmt.Errorf("quarantine %s: %w", path, err)
	}
	return dst, nil
}

// renderSafeConfig writes the allow-listed options of cfg as git config text, in a stable
// order, quoting every value and subsection name. Values that carry a line break, and remote
// URLs that name a remote helper (transport::address) or look like an option, are dropped.
func renderSafeConfig(cfg *format.Config) string {
	var b strings.Builder
	for _, sec := range cfg.Sections {
		name := strings.ToLower(sec.Name)
		writeSection(&b, name, "", safeKeys[name], sec.Options)
		for _, sub := range sec.Subsections {
			writeSection(&b, name, sub.Name, safeKeys[name+".*"], sub.Options)
		}
	}
	return b.String()
}

// writeSection writes one section header and its allowed options, or nothing.
func writeSection(b *strings.Builder, name, sub string, allowed map[string]bool, opts format.Options) {
	var lines []string
	for _, o := range opts {
		key := strings.ToLower(o.Key)
		if !allowed[key] || strings.ContainsAny(o.Value, "\x00\n\r") {
			continue
		}
		if (key == "url" || key == "pushurl") && (strings.Contains(o.Value, "::") || strings.HasPrefix(o.Value, "-")) {
			continue
		}
		lines = append(lines, fmt.Sprintf("\t%s = %s\n", key, quoteConfigValue(o.Value)))
	}
	if len(lines) == 0 || strings.ContainsAny(sub, "\x00\n\r") {
		return
	}
	if sub == "" {
		fmt.Fprintf(b, "[%s]\n", name)
	} else {
		fmt.Fprintf(b, "[%s %s]\n", name, quoteConfigValue(sub))
	}
	b.WriteString(strings.Join(lines, ""))
}

// quoteConfigValue quotes a value for git config text: in double quotes, with backslash,
// double quote and tab escaped.
func quoteConfigValue(v string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\t", `\t`)
	return `"` + r.Replace(v) + `"`
}

// scanWorkTree walks the top level's work tree for .git entries (any case) that are not known:
// a .git directory is a planted repository and is neutralised; a .git file pointing anywhere but
// a known git dir is quarantined. Known git dirs are not descended into.
func (s *Snapshot) scanWorkTree(ctx context.Context) []Change {
	var changes []Change
	top := s.TopLevel
	filepath.WalkDir(top, func(path string, d fs.DirEntry, err error) error {
		if err != nil || ctx.Err() != nil {
			return nil
		}
		if s.GitDirs[path] {
			return filepath.SkipDir
		}
		if !strings.EqualFold(d.Name(), ".git") || path == filepath.Join(top, ".git") {
			return nil
		}
		if _, known := s.Files[path]; known {
			return nil
		}
		changes = append(changes, s.plantedDotGit(path, d)...)
		if d.IsDir() {
			return filepath.SkipDir
		}
		return nil
	})
	return changes
}

// plantedDotGit handles one unknown .git entry in the work tree.
func (s *Snapshot) plantedDotGit(path string, d fs.DirEntry) []Change {
	if d.IsDir() {
		if isGitDir(path) {
			return s.neutralise(path, false)
		}
		return nil
	}
	if target, err := readGitFile(path); err == nil && s.GitDirs[target] {
		s.recordFile(path)
		return nil
	}
	return []Change{s.quarantineChange(path, ".git file pointing to an unknown git dir")}
}
