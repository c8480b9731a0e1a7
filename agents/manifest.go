package agents

// This file is a store entry's manifest. Rules:
//   - manifest.json is written last, after every file is in place, and the entry directory is
//     renamed into the store only after it: an entry without a manifest is never used;
//   - it records what was verified (each package's integrity string and publication time) and,
//     per file, its size, mode, mtime and sha512 (links: their target);
//   - a check walks the tree without following a link (walk.go): a missing, extra, changed or
//     retyped file, a changed mode (the entry's own directory included), a link retargeted,
//     a file hard-linked with one outside the entry or a FIFO, device or socket is a mismatch
//     (fast check: size, mode and mtime; full check: the sha512 too);
//   - every link is resolved against the tree and must stay inside its package (links.go),
//     at every check, so an entry whose manifest matches but whose links climb out (one an
//     older git corral extracted) is refused too;
//   - the manifest itself is read only as a regular file, never through a link.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/git-corral/git-corral/internal/atomicfile"
)

// manifestName is the manifest's file name inside an entry.
const manifestName = "manifest.json"

// manifestFormat is the manifest layout this file writes. 2: the entry's own directory is
// listed as ".", package roots are recorded, links are resolved against the tree. Entries of
// format 1 were extracted with per-link lexical checks only and are built again.
const manifestFormat = 2

// maxManifestBytes caps the manifest read (Node's is about 600 KB).
const maxManifestBytes = 64 << 20

// manifest describes one store entry.
type manifest struct {
	Name      string    `json:"name"`
	Version   string    `json:"version"`
	Platform  Platform  `json:"platform"`
	Packages  []Locked  `json:"packages"`
	Node      string    `json:"node,omitempty"`
	Installed time.Time `json:"installedAt"`
	// Format is manifestFormat; an entry with another is built again.
	Format int `json:"format"`
	// Roots are the entry's package directories ("." for the Node runtime): a link resolves
	// inside the one that holds it.
	Roots []string        `json:"roots"`
	Files []manifestEntry `json:"files"`
}

// manifestEntry is one file, directory or link of an entry.
type manifestEntry struct {
	Path   string      `json:"path"`
	Mode   fs.FileMode `json:"mode"`
	Size   int64       `json:"size,omitempty"`
	MTime  int64       `json:"mtime,omitempty"`
	SHA512 string      `json:"sha512,omitempty"`
	Link   string      `json:"link,omitempty"`
}

// writeManifest scans dir (a staging directory two below the store) fully and writes its
// manifest atomically (temporary file, rename).
func writeManifest(dir string, m manifest) error {
	fd, err := openEntry(dir)
	if err != nil {
		return fmt.Errorf("write manifest of %q: %w", dir, err)
	}
	defer unix.Close(fd)
	files, err := scanFD(fd, true, manifestName)
	if err == nil {
		err = checkLinks(fd, files, m.Roots)
	}
	if err != nil {
		return fmt.Errorf("write manifest of %q: %w", dir, err)
	}
	m.Format, m.Files = manifestFormat, files
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, manifestName), append(data, '\n'), 0o644)
}

// openEntry opens dir, an entry or staging directory two below the store, without following a
// link in either of those two elements (the store itself is git corral's own path).
func openEntry(dir string) (int, error) {
	top, err := openTop(filepath.Dir(filepath.Dir(dir)))
	if err != nil {
		return -1, err
	}
	defer unix.Close(top)
	return openDirBeneath(top, filepath.Base(filepath.Dir(dir))+"/"+filepath.Base(dir))
}

// readManifest reads the manifest of the open entry fd (found at dir), never through a link.
func readManifest(fd int, dir string) (manifest, error) {
	var m manifest
	data, err := readRegularBeneath(fd, manifestName, maxManifestBytes)
	if errors.Is(err, errNotPlain) {
		return m, fmt.Errorf("read manifest of %q: %w: %w", dir, err, ErrTampered)
	} else if err != nil {
		return m, fmt.Errorf("read manifest of %q: %w", dir, err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("read manifest of %q: %w: %w", dir, err, ErrTampered)
	}
	if m.Format != manifestFormat {
		return m, fmt.Errorf("manifest of %q is format %d, not %d (written before links were resolved against the tree; the entry is built again): %w",
			dir, m.Format, manifestFormat, ErrTampered)
	}
	return m, nil
}

// checkEntry compares dir with its manifest; full also compares every file's sha512. It
// returns the manifest, or an error wrapping ErrTampered that names the first difference: an
// entry or file that is a link, a file type other than directory, file and link, a file
// hard-linked with one outside the entry, a missing, added or changed path (mode included,
// the entry's own directory too), or a link that resolves outside its package.
func checkEntry(dir string, full bool) (manifest, error) {
	var m manifest
	fd, err := openEntry(dir)
	if errors.Is(err, errNotPlain) {
		return m, fmt.Errorf("check %q: %w: %w", dir, err, ErrTampered)
	} else if err != nil {
		return m, fmt.Errorf("check %q: %w", dir, err)
	}
	defer unix.Close(fd)
	if m, err = readManifest(fd, dir); err != nil {
		return m, err
	}
	got, err := scanFD(fd, full, manifestName)
	if errors.Is(err, errNotPlain) {
		return m, fmt.Errorf("check %q: %w: %w", dir, err, ErrTampered)
	} else if err != nil {
		return m, fmt.Errorf("check %q: %w", dir, err)
	}
	if d := firstDifference(m.Files, got, full); d != "" {
		return m, fmt.Errorf("check %q: %s: %w", dir, d, ErrTampered)
	}
	if err := checkLinks(fd, got, m.Roots); err != nil {
		return m, fmt.Errorf("check %q: %w: %w", dir, err, ErrTampered)
	}
	return m, nil
}

// checkLinks resolves every link of files (a walk of the open entry fd) against the package
// it is in (roots: each package's directory in the entry) and refuses one that leaves it.
func checkLinks(fd int, files []manifestEntry, roots []string) error {
	open := map[string]int{}
	defer func() {
		for _, rfd := range open {
			unix.Close(rfd)
		}
	}()
	for _, f := range files {
		if f.Mode&fs.ModeSymlink == 0 {
			continue
		}
		root, rel, ok := packageOf(f.Path, roots)
		if !ok {
			return fmt.Errorf("link %q is in no package of the entry: %w", f.Path, errLeaves)
		}
		rfd, ok := open[root]
		if !ok {
			var err error
			if rfd, err = openDirBeneath(fd, root); err != nil {
				return fmt.Errorf("package directory %q: %w", root, err)
			}
			open[root] = rfd
		}
		if err := resolveInside(rfd, rel); err != nil {
			return fmt.Errorf("package %q: %w", root, err)
		}
	}
	return nil
}

// packageOf returns the root in roots that holds p (the longest), and p relative to it.
func packageOf(p string, roots []string) (root, rel string, ok bool) {
	for _, r := range roots {
		switch {
		case r == "." && len(r) > len(root):
			root, rel, ok = r, p, true
		case strings.HasPrefix(p, r+"/") && len(r) > len(root):
			root, rel, ok = r, strings.TrimPrefix(p, r+"/"), true
		}
	}
	return root, rel, ok
}

// firstDifference names the first path where want and got differ, or "".
func firstDifference(want, got []manifestEntry, full bool) string {
	byPath := make(map[string]manifestEntry, len(want))
	for _, e := range want {
		byPath[e.Path] = e
	}
	for _, g := range got {
		w, ok := byPath[g.Path]
		if !ok {
			return fmt.Sprintf("%q is not in the manifest", g.Path)
		}
		delete(byPath, g.Path)
		if !full {
			g.SHA512, w.SHA512 = "", ""
		}
		if g != w {
			return fmt.Sprintf("%q changed", g.Path)
		}
	}
	for p := range byPath {
		return fmt.Sprintf("%q is missing", p)
	}
	return ""
}
