package provision

// This file approves whole directories, for scripts whose dependencies review cannot determine
// (deps.go). Rules:
//   - Every file under the directory is read under readRepoFile's rules (no symlink, regular,
//     not binary, at most MaxScriptSize) and becomes part of the approval and of the approved
//     copy the script runs from; ".git" and "__pycache__" entries are left out (git's own data
//     and Python's caches: neither is in the copy, so neither can run).
//   - A directory nested in another one already approved adds nothing.
//   - At most MaxDirFiles files and MaxDirBytes bytes in all: a bigger tree is refused with a
//     message that says how to narrow it, never hashed in part.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// MaxDirFiles and MaxDirBytes bound the directories one script's approval may cover whole.
const (
	MaxDirFiles = 256
	MaxDirBytes = 4 << 20
)

// approveDirs adds every file of the needed directories to s, flagging why each is needed.
func (s *scanned) approveDirs(ctx context.Context, top string, needs []dirNeed) {
	if len(needs) == 0 {
		return
	}
	dirs := map[string]bool{}
	for _, n := range needs {
		dirs[n.dir] = true
	}
	var list []string
	for d := range dirs {
		list = append(list, d)
	}
	sort.Strings(list)
	for _, d := range list {
		if !coveredBy(d, s.dirs) {
			s.dirs = append(s.dirs, d)
		}
	}
	for _, n := range needs {
		s.flags = append(s.flags, fmt.Sprintf("%s: the approval covers every file under %s", n.why, dirLabel(n.dir)))
	}
	files, size := 0, int64(0)
	for _, d := range s.dirs {
		if err := s.walkDir(ctx, top, d, &files, &size); err != nil {
			s.problems = append(s.problems, fmt.Sprintf("approving every file under %s: %s; name the files the script runs literally, or keep them in a directory of their own", dirLabel(d), err))
			return
		}
	}
}

func dirLabel(d string) string {
	if d == "." {
		return "the repository top (./)"
	}
	return d + "/"
}

// coveredBy reports whether d is one of dirs or lies under one.
func coveredBy(d string, dirs []string) bool {
	for _, o := range dirs {
		if o == "." || d == o || strings.HasPrefix(d, o+"/") {
			return true
		}
	}
	return false
}

// walkDir reads every file under rel into s, counting against the bounds.
func (s *scanned) walkDir(ctx context.Context, top, rel string, files *int, size *int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if rel != "." {
		if err := checkRepoDir(top, rel); err != nil {
			return err
		}
	}
	entries, err := os.ReadDir(filepath.Join(top, rel))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read directory %s: %w", rel, err)
	}
	for _, e := range entries {
		if e.Name() == ".git" || e.Name() == "__pycache__" {
			continue
		}
		child := path.Join(rel, e.Name())
		switch {
		case e.Type()&os.ModeSymlink != 0:
			return fmt.Errorf("%s is a symlink", child)
		case e.IsDir():
			if err := s.walkDir(ctx, top, child, files, size); err != nil {
				return err
			}
			continue
		case !e.Type().IsRegular():
			return fmt.Errorf("%s is not a regular file", child)
		}
		if *files++; *files > MaxDirFiles {
			return fmt.Errorf("more than %d files", MaxDirFiles)
		}
		if _, ok := s.contents[child]; ok || child == s.self {
			continue
		}
		b, err := readRepoFile(ctx, top, child)
		if err != nil {
			return err
		}
		if *size += int64(len(b)); *size > MaxDirBytes {
			return fmt.Errorf("more than %d bytes", MaxDirBytes)
		}
		s.sources = append(s.sources, Source{Path: child, SHA256: hexSum(b)})
		s.contents[child] = b
	}
	return nil
}

// checkRepoDir refuses a directory path that is or passes through a symlink, or is not a
// directory; a missing one is fine (it holds nothing yet).
func checkRepoDir(top, rel string) error {
	cur := top
	for _, part := range strings.Split(rel, "/") {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read directory %s: %w", rel, err)
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("%s is or passes through a symlink", rel)
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", rel)
		}
	}
	return nil
}
