package agents

// This file builds store entries. Rules:
//   - an entry is built in a staging directory beside the store and renamed into place only
//     after its manifest is written, so a crash leaves no half entry under its final name;
//   - an entry already present is checked in full against its manifest before it is used; a
//     mismatch deletes it and builds it again from a verified tarball;
//   - a cached tarball is used only if its sha512 matches the registry's integrity string; one
//     that does not is deleted and fetched again;
//   - every package's publication time is checked against MinAge before it is fetched, and its
//     package.json must be a regular file (read without following a link, never a FIFO) naming
//     the package and version asked for;
//   - an error names the package (PACKAGE@VERSION) and, for a refused entry, the entry;
//   - store/<name> must be a real directory: a link in its place is removed, never followed.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// part is one package of an entry and where it goes inside it.
type part struct {
	spec Spec
	dest string // relative to the entry: node_modules/<name>, or "." for the Node runtime
}

// entryDir is the directory of name@version in the store.
func (s *Store) entryDir(name, version string) string {
	return filepath.Join(StoreDir(s.home), name, version)
}

func (s *Store) npm() npmRunner {
	return npmRunner{npm: s.opt.Npm, cache: filepath.Join(Dir(s.home), "cache")}
}

// ensureEntry makes the entry name@version present and verified, building it from parts.
func (s *Store) ensureEntry(ctx context.Context, name, version, node string, parts []part, progress io.Writer) (manifest, error) {
	dir := s.entryDir(name, version)
	m, err := checkEntry(dir, s.opt.FullCheck)
	switch {
	case err == nil && m.Platform == s.opt.Platform:
		return m, nil
	case err == nil:
		say(progress, "%s %s in the store is for %s, not %s: building it again", name, version, m.Platform, s.opt.Platform)
	case errors.Is(err, ErrTampered):
		say(progress, "%s %s in the store does not match its manifest (%v): deleting it and fetching again", name, version, err)
	case !errors.Is(err, os.ErrNotExist):
		return m, err
	}
	if err := realDir(filepath.Dir(dir), progress); err != nil {
		return m, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return m, fmt.Errorf("remove store entry %q: %w", dir, err)
	}
	removeStale(filepath.Dir(dir), ".stage-*")
	return s.build(ctx, dir, manifest{Name: name, Version: version, Platform: s.opt.Platform, Node: node}, parts, progress)
}

// build fetches, verifies and extracts parts into a staging directory, writes the manifest and
// renames the result to dir.
func (s *Store) build(ctx context.Context, dir string, m manifest, parts []part, progress io.Writer) (manifest, error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return m, fmt.Errorf("create store %q: %w", filepath.Dir(dir), err)
	}
	stage, err := os.MkdirTemp(filepath.Dir(dir), ".stage-"+m.Version+"-")
	if err != nil {
		return m, fmt.Errorf("create staging directory: %w", err)
	}
	defer os.RemoveAll(stage)
	if err := os.Chmod(stage, 0o755); err != nil {
		return m, err
	}
	for _, p := range parts {
		locked, err := s.fetchPart(ctx, p, stage, progress)
		if err != nil {
			return m, fmt.Errorf("package %s: %w", p.spec, err)
		}
		m.Packages = append(m.Packages, locked)
		m.Roots = append(m.Roots, p.dest)
	}
	m.Installed = s.opt.Now().UTC()
	if err := writeManifest(stage, m); err != nil {
		return m, err
	}
	if err := os.Rename(stage, dir); err != nil {
		if m2, cerr := checkEntry(dir, true); cerr == nil {
			return m2, nil // another git corral finished the same entry first
		}
		return m, fmt.Errorf("move store entry into %q: %w", dir, err)
	}
	return m, nil
}

// fetchPart checks one package's age, brings its verified tarball into the cache and extracts
// it into stage.
func (s *Store) fetchPart(ctx context.Context, p part, stage string, progress io.Writer) (Locked, error) {
	r := s.npm()
	meta, err := r.view(ctx, p.spec)
	if err != nil {
		return Locked{}, err
	}
	if err := checkAge(p.spec, meta.Published, s.opt.Now(), s.opt.MinAge); err != nil {
		return Locked{}, err
	}
	tgz, err := s.verifiedTarball(ctx, p.spec, meta.Integrity, progress)
	if err != nil {
		return Locked{}, err
	}
	dest := filepath.Join(stage, filepath.FromSlash(p.dest))
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return Locked{}, err
	}
	say(progress, "extracting %s", p.spec)
	if err := extractTarball(tgz, dest, defaultLimits); err != nil {
		return Locked{}, err
	}
	if err := checkPackageJSON(dest, p.spec); err != nil {
		return Locked{}, err
	}
	return Locked{Spec: p.spec, Integrity: meta.Integrity, Published: meta.Published.UTC().Format("2006-01-02T15:04:05Z")}, nil
}

// verifiedTarball returns the cached tarball of spec whose sha512 matches integrity, fetching
// it (again) with npm pack when there is none or the cached one does not match.
func (s *Store) verifiedTarball(ctx context.Context, spec Spec, integrity string, progress io.Writer) (string, error) {
	dir := filepath.Join(Dir(s.home), "cache", "tarballs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	cached := filepath.Join(dir, strings.NewReplacer("@", "", "/", "-").Replace(spec.Package)+"-"+spec.Version+".tgz")
	if _, err := os.Stat(cached); err == nil {
		if err := checkIntegrity(cached, integrity); err == nil {
			return cached, nil
		} else {
			say(progress, "cached %s refused (%v): fetching it again", spec, err)
			os.Remove(cached)
		}
	}
	removeStale(dir, ".pack-*")
	tmp, err := os.MkdirTemp(dir, ".pack-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	say(progress, "fetching %s", spec)
	got, err := s.npm().pack(ctx, spec, tmp)
	if err != nil {
		return "", err
	}
	if err := checkIntegrity(got, integrity); err != nil {
		return "", fmt.Errorf("fetch %s: %w", spec, err)
	}
	if err := os.Rename(got, cached); err != nil {
		return "", fmt.Errorf("cache %s: %w", spec, err)
	}
	return cached, nil
}

// maxPackageJSON caps the package.json read (the largest agent's is a few KB).
const maxPackageJSON = 4 << 20

// checkPackageJSON refuses an extracted package whose package.json is not a regular file (a
// link, even one inside, or a FIFO is never opened) or names another package or version than
// the one asked for.
func checkPackageJSON(dir string, spec Spec) error {
	fd, err := openTop(dir)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	data, err := readRegularBeneath(fd, "package.json", maxPackageJSON)
	if errors.Is(err, errNotPlain) {
		return fmt.Errorf("entry \"package/package.json\": %w: %w", err, ErrUnsafeArchive)
	} else if err != nil {
		return err
	}
	var pj struct{ Name, Version string }
	if err := json.Unmarshal(data, &pj); err != nil {
		return fmt.Errorf("package.json: %w", err)
	}
	if pj.Name != spec.Package || pj.Version != spec.Version {
		return fmt.Errorf("its package.json says %q, not what was asked for: %w", pj.Name+"@"+pj.Version, ErrIntegrity)
	}
	return nil
}

// realDir makes sure dir (store/<name>, store/bin) is a directory and not a link or a file
// someone put in its place: such a thing is removed (never followed) and the directory made.
func realDir(dir string, progress io.Writer) error {
	if fi, err := os.Lstat(dir); err == nil && !fi.IsDir() {
		say(progress, "%s is a %s, not a directory: removing it", dir, fi.Mode().Type())
		if err := os.Remove(dir); err != nil {
			return fmt.Errorf("remove %q: %w", dir, err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create store %q: %w", dir, err)
	}
	return nil
}

// say writes one progress line to w, when there is one.
func say(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", args...)
	}
}

// removeStale removes what an interrupted build left in dir (staging directories, partial
// packs). Only called under the store lock, so no live build owns them.
func removeStale(dir, pattern string) {
	stale, _ := filepath.Glob(filepath.Join(dir, pattern))
	for _, p := range stale {
		os.RemoveAll(p)
	}
}
