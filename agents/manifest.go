package agents

// This file is a store entry's manifest. Rules:
//   - manifest.json is written last, after every file is in place, and the entry directory is
//     renamed into the store only after it: an entry without a manifest is never used;
//   - it records what was verified (each package's integrity string and publication time) and,
//     per file, its size, mode, mtime and sha512 (links: their target);
//   - a check walks the tree: a missing, extra, changed or retyped file is a mismatch (fast
//     check: size, mode and mtime; full check: the sha512 too).

import (
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/git-corral/git-corral/internal/atomicfile"
)

// manifestName is the manifest's file name inside an entry.
const manifestName = "manifest.json"

// manifest describes one store entry.
type manifest struct {
	Name      string          `json:"name"`
	Version   string          `json:"version"`
	Platform  Platform        `json:"platform"`
	Packages  []Locked        `json:"packages"`
	Node      string          `json:"node,omitempty"`
	Installed time.Time       `json:"installedAt"`
	Files     []manifestEntry `json:"files"`
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

// scanTree lists every entry under dir except the manifest, hashing regular files when full.
func scanTree(dir string, full bool) ([]manifestEntry, error) {
	var out []manifestEntry
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." || rel == manifestName {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		e := manifestEntry{Path: filepath.ToSlash(rel), Mode: info.Mode()}
		switch {
		case info.Mode().IsRegular():
			e.Size, e.MTime = info.Size(), info.ModTime().UnixNano()
			if full {
				if e.SHA512, err = hashFile(p); err != nil {
					return err
				}
			}
		case info.Mode()&fs.ModeSymlink != 0:
			if e.Link, err = os.Readlink(p); err != nil {
				return err
			}
		case !info.IsDir():
			return fmt.Errorf("%q is neither file, directory nor link: %w", p, ErrTampered)
		}
		out = append(out, e)
		return nil
	})
	return out, err
}

// hashFile returns the hex sha512 of the file at p.
func hashFile(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha512.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash %q: %w", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writeManifest scans dir fully and writes its manifest atomically (temporary file, rename).
func writeManifest(dir string, m manifest) error {
	files, err := scanTree(dir, true)
	if err != nil {
		return fmt.Errorf("write manifest of %q: %w", dir, err)
	}
	m.Files = files
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, manifestName), append(data, '\n'), 0o644)
}

// readManifest reads an entry's manifest.
func readManifest(dir string) (manifest, error) {
	var m manifest
	data, err := os.ReadFile(filepath.Join(dir, manifestName))
	if err != nil {
		return m, fmt.Errorf("read manifest of %q: %w", dir, err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("read manifest of %q: %w: %w", dir, err, ErrTampered)
	}
	return m, nil
}

// checkEntry compares dir with its manifest; full also compares every file's sha512. It
// returns the manifest, or an error wrapping ErrTampered that names the first difference.
func checkEntry(dir string, full bool) (manifest, error) {
	m, err := readManifest(dir)
	if err != nil {
		return m, err
	}
	got, err := scanTree(dir, full)
	if err != nil {
		return m, fmt.Errorf("check %q: %w", dir, err)
	}
	if d := firstDifference(m.Files, got, full); d != "" {
		return m, fmt.Errorf("check %q: %s: %w", dir, d, ErrTampered)
	}
	return m, nil
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
