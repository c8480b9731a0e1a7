package gitshadow

// Discovery reads the same files whatever the order, and almost all of its time is file system
// calls, so the reads of a large modules/ directory and of a large .gitmodules are made by a
// few goroutines ahead of the walk (issue #24: 1,000 submodules in at most 0.5 s). The rules:
//   - Only reads are made ahead: listings, config files and .git files, each with the same
//     checks as when it is read in turn (readRegular's fstat, readSmall's lstat).
//   - The walk itself stays sequential and in the same order, so the plan is the same as
//     without prefetching, path for path (TestPlanGolden), and every decision (is it a git
//     dir, is it regular, what to warn) is taken there, from what was read.
//   - A read that was not made ahead (a small directory, a file a listing did not show as
//     regular) is made in turn, as before.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	format "github.com/go-git/go-git/v5/plumbing/format/config"
)

// minPrefetch is the number of entries from which reading ahead pays for its goroutines.
const minPrefetch = 16

// parallel calls f(i) for every i below n from up to GOMAXPROCS goroutines (at most 8), or in
// this goroutine for fewer than minPrefetch.
func parallel(n int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), 8)
	if n < minPrefetch || workers < 2 {
		for i := range n {
			f(i)
		}
		return
	}
	var next sync.Mutex
	i := 0
	take := func() int {
		next.Lock()
		defer next.Unlock()
		i++
		return i - 1
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for j := take(); j < n; j = take() {
				f(j)
			}
		})
	}
	wg.Wait()
}

// moduleDir is what was read ahead of one directory under modules/.
type moduleDir struct {
	l      listing
	config *parsedConfig // nil when not read ahead
}

// readModuleDirs lists each directory of ents under dir and, for one that is a git dir with a
// regular config, reads and parses that config, ahead of walkModules.
func readModuleDirs(dir string, ents []os.DirEntry) []moduleDir {
	out := make([]moduleDir, len(ents))
	parallel(len(ents), func(i int) {
		if !ents[i].IsDir() {
			return
		}
		sub := filepath.Join(dir, ents[i].Name())
		m := moduleDir{l: listDir(sub)}
		if m.l.has("HEAD", false) && m.l.has("config", false) {
			c := parseConfig(filepath.Join(sub, "config"), readRegular)
			m.config = &c
		}
		out[i] = m
	})
	return out
}

// parseConfig reads a config file with read and parses it with go-git, as data.
func parseConfig(path string, read func(string) ([]byte, error)) parsedConfig {
	data, err := read(path)
	if err != nil {
		return parsedConfig{err: err}
	}
	cfg := format.New()
	if err := format.NewDecoder(bytes.NewReader(data)).Decode(cfg); err != nil {
		return parsedConfig{data: data, err: fmt.Errorf("parse git config %s: %w", path, err)}
	}
	return parsedConfig{cfg: cfg, data: data}
}

// dotGitFile is what was read ahead of one submodule work tree's .git.
type dotGitFile struct {
	fi   os.FileInfo
	err  error  // of the lstat
	data []byte // the content of a regular .git file
	rerr error  // of reading it
}

// readDotGits lstats sub/.git of each submodule work tree (but the "" of a skipped one) and
// reads those that are regular files, ahead of submoduleWorkTree.
func readDotGits(subs []string) []dotGitFile {
	out := make([]dotGitFile, len(subs))
	parallel(len(subs), func(i int) {
		if subs[i] == "" {
			return
		}
		dotgit := filepath.Join(subs[i], ".git")
		d := dotGitFile{}
		d.fi, d.err = os.Lstat(dotgit)
		if d.err == nil && d.fi.Mode().IsRegular() {
			d.data, d.rerr = readRegular(dotgit)
		}
		out[i] = d
	})
	return out
}
