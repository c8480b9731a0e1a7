package agents

// This file is `agents verify`: everything in the store must be what git corral put there.
// Rules:
//   - every entry (agents and Node runtimes) is checked in full against its manifest
//     (manifest.go): every byte, every mode, every link's target and where it resolves, no
//     file added or removed, no file hard-linked with one outside, no FIFO, device or socket;
//   - the store's layout is checked as well, never following a link: at the top only bin/,
//     node/ and one directory per catalogue agent; in each of those only version directories
//     (a staging directory an interrupted install left is removed without a word); in bin/
//     only each agent's launcher, byte for byte and mode for mode what Ensure writes, and its
//     .version link naming a version;
//   - whatever fails is deleted (a link is removed, never followed), named in the result
//     ("NAME@VERSION" for an entry, its path under the store for anything else) and its reason
//     written to progress;
//   - the same checks judge a store about to be exported and one staged by an import
//     (export.go), refusing at the first failure instead of deleting anything.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// maxLauncherBytes caps the launcher read; a launcher is a few hundred bytes.
const maxLauncherBytes = 64 << 10

// verifier is one Verify's running result.
type verifier struct {
	store    string
	progress io.Writer
	deleted  []string
	// refuse makes the first failure an error wrapping ErrTampered and deletes nothing; it also
	// refuses an entry built for another platform than the store's (export.go).
	refuse   bool
	platform Platform
}

// Verify rechecks the whole store: every entry (Node runtimes included) against its manifest
// with full hashes, and the store's layout and launchers. It deletes each thing that fails,
// says why on progress (may be nil) and returns "name@version" of each entry deleted and the
// path under the store of anything else deleted.
func (s *Store) Verify(ctx context.Context, progress io.Writer) ([]string, error) {
	unlock, err := s.lock(nil)
	if err != nil {
		return nil, err
	}
	defer unlock()
	v := &verifier{store: StoreDir(s.home), progress: progress}
	err = s.verifyTree(ctx, v)
	return v.deleted, err
}

// verifyTree runs every check of Verify on v.store.
func (s *Store) verifyTree(ctx context.Context, v *verifier) error {
	top, err := os.ReadDir(v.store)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("verify agents: %w", err)
	}
	var entries []string // store/<name> directories: every agent's, and node
	for _, a := range s.agents {
		entries = append(entries, a.Name)
	}
	entries = append(entries, "node")
	known := append(slices.Clone(entries), "bin")
	for _, e := range top {
		if !slices.Contains(known, e.Name()) {
			if err := v.remove(e.Name(), e.Name(), "git corral puts no such thing in the store"); err != nil {
				return err
			}
		}
	}
	for _, name := range entries {
		if err := v.entries(ctx, name); err != nil {
			return err
		}
	}
	return s.verifyLaunchers(v)
}

// entries checks store/<name>: a real directory holding only verified version directories.
func (v *verifier) entries(ctx context.Context, name string) error {
	dir := filepath.Join(v.store, name)
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("verify agents: %w", err)
	}
	if !fi.IsDir() {
		return v.remove(name, name, fmt.Sprintf("a %s, not a directory", fi.Mode().Type()))
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("verify agents: %w", err)
	}
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return err
		}
		rel := name + "/" + e.Name()
		switch {
		case strings.HasPrefix(e.Name(), ".stage-") && v.refuse:
			// never exported, never installed from an import
		case strings.HasPrefix(e.Name(), ".stage-"):
			os.RemoveAll(filepath.Join(v.store, rel)) // under the lock no install owns it
		case validVersion(e.Name()) != nil || !e.IsDir():
			if err := v.remove(rel, rel, fmt.Sprintf("a %s that is no store entry", e.Type())); err != nil {
				return err
			}
		default:
			m, err := checkEntry(filepath.Join(v.store, rel), true)
			if err == nil && v.refuse && m.Platform != v.platform {
				err = fmt.Errorf("built for %s guests, not %s", m.Platform, v.platform)
			}
			if err != nil && v.refuse {
				if !errors.Is(err, ErrTampered) {
					err = fmt.Errorf("%w: %w", err, ErrTampered)
				}
				return fmt.Errorf("%s@%s: %w", name, e.Name(), err)
			}
			if err != nil {
				if err := v.remove(rel, name+"@"+e.Name(), err.Error()); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// remove deletes rel (under the store; a link itself, never its target), records it as what
// and says why.
func (v *verifier) remove(rel, what, why string) error {
	if v.refuse {
		return fmt.Errorf("%s: %s: %w", what, why, ErrTampered)
	}
	say(v.progress, "%s: %s: deleting it", what, why)
	if err := os.RemoveAll(filepath.Join(v.store, filepath.FromSlash(rel))); err != nil {
		return fmt.Errorf("verify agents: remove %q: %w", filepath.Join(v.store, rel), err)
	}
	v.deleted = append(v.deleted, what)
	return nil
}

// verifyLaunchers checks store/bin: for each agent at most a launcher that is exactly what
// Ensure writes for the version its .version link names, and nothing else.
func (s *Store) verifyLaunchers(v *verifier) error {
	bin := filepath.Join(v.store, "bin")
	fi, err := os.Lstat(bin)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("verify agents: %w", err)
	}
	if !fi.IsDir() {
		return v.remove("bin", "bin", fmt.Sprintf("a %s, not a directory", fi.Mode().Type()))
	}
	fd, err := openTop(bin)
	if err != nil {
		return fmt.Errorf("verify agents: %w", err)
	}
	defer unix.Close(fd)
	good := map[string]bool{}
	for _, a := range s.agents {
		problem := s.launcherProblem(fd, a)
		if problem == "" {
			good[a.Name], good[a.Name+".version"] = true, true
		} else if problem != "absent" && v.refuse {
			return fmt.Errorf("bin/%s: %s: %w", a.Name, problem, ErrTampered)
		} else if problem != "absent" {
			for _, n := range []string{a.Name, a.Name + ".version"} {
				good[n] = true // named below, with the reason
				os.Remove(filepath.Join(bin, n))
			}
			say(v.progress, "bin/%s: %s: deleting it (the next install or session writes it again)", a.Name, problem)
			v.deleted = append(v.deleted, "bin/"+a.Name)
		}
	}
	ents, err := os.ReadDir(bin)
	if err != nil {
		return fmt.Errorf("verify agents: %w", err)
	}
	for _, e := range ents {
		if !good[e.Name()] {
			if err := v.remove("bin/"+e.Name(), "bin/"+e.Name(), "no launcher git corral writes"); err != nil {
				return err
			}
		}
	}
	return nil
}

// launcherProblem says what is wrong with agent a's launcher in the open bin directory fd:
// "" when it is what Ensure writes, "absent" when there is neither launcher nor mark.
func (s *Store) launcherProblem(fd int, a Agent) string {
	var st unix.Stat_t
	markErr := unix.Fstatat(fd, a.Name+".version", &st, unix.AT_SYMLINK_NOFOLLOW)
	var lst unix.Stat_t
	if errors.Is(markErr, unix.ENOENT) && errors.Is(unix.Fstatat(fd, a.Name, &lst, unix.AT_SYMLINK_NOFOLLOW), unix.ENOENT) {
		return "absent"
	}
	if markErr != nil || st.Mode&unix.S_IFMT != unix.S_IFLNK {
		return a.Name + ".version is missing or not a link naming a version"
	}
	version, err := readlinkAt(fd, a.Name+".version")
	if err != nil || validVersion(version) != nil {
		return fmt.Sprintf("%s.version names %q, not a version", a.Name, version)
	}
	node := ""
	if a.NeedsNode {
		node = DefaultNodeVersion
	}
	want, err := launcherScript(a, version, node, s.opt.Platform)
	if err != nil {
		return err.Error()
	}
	f, fst, err := openRegularAt(fd, a.Name, "bin/"+a.Name)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	got, err := io.ReadAll(io.LimitReader(f, maxLauncherBytes))
	switch {
	case err != nil:
		return err.Error()
	case string(got) != want:
		return fmt.Sprintf("its content is not the launcher of %s %s", a.Name, version)
	case fst.Mode&0o7777 != 0o755:
		return fmt.Sprintf("mode %#o, not 0755", fst.Mode&0o7777)
	}
	return ""
}
