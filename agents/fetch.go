package agents

// This file is the one wrapper around npm. Rules:
//   - npm only ever views metadata and packs an exact PACKAGE@VERSION; it never installs, so
//     no package script can run, and --ignore-scripts is passed besides;
//   - its working directory and cache are under $CORRAL_HOME/agents/cache, never a project, so
//     no repository's .npmrc applies;
//   - argv is built by a pure function from names and versions checked by validVersion, so a
//     value can never become an option;
//   - nothing npm says about integrity is believed: Fetch hashes the tarball itself against the
//     integrity string the registry's metadata names.

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/git-corral/git-corral/internal/lazyre"
)

// versionRE is an exact semver version (prerelease allowed), never a range or a tag.
var versionRE = lazyre.New(`^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z][0-9A-Za-z.-]*)?$`)

// releaseRE is a plain release version, what `agents update` picks from.
var releaseRE = lazyre.New(`^[0-9]+\.[0-9]+\.[0-9]+$`)

// validVersion refuses anything but an exact version: a range, a tag, an option, a newline.
func validVersion(v string) error {
	if !versionRE.MatchString(v) {
		return fmt.Errorf("version %q is not an exact version like 1.2.3 (no ranges, tags or options)", v)
	}
	return nil
}

// Meta is what the registry says about one exact package version.
type Meta struct {
	Integrity string    `json:"integrity"`
	Tarball   string    `json:"tarball"`
	Published time.Time `json:"published"`
}

// viewArgs is npm's argv for the metadata of spec.
func viewArgs(spec Spec) []string {
	return []string{"view", "--json", "--ignore-scripts", "--", spec.String(), "dist.integrity", "dist.tarball", "time"}
}

// packArgs is npm's argv for downloading spec's tarball into dir.
func packArgs(spec Spec, dir string) []string {
	return []string{"pack", "--json", "--ignore-scripts", "--pack-destination", dir, "--", spec.String()}
}

// timesArgs is npm's argv for every version's publication time of pkg.
func timesArgs(pkg string) []string {
	return []string{"view", "--json", "--ignore-scripts", "--", pkg, "time"}
}

// parseView reads `npm view SPEC dist.integrity dist.tarball time --json`.
func parseView(spec Spec, out []byte) (Meta, error) {
	var v struct {
		Integrity string            `json:"dist.integrity"`
		Tarball   string            `json:"dist.tarball"`
		Time      map[string]string `json:"time"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		return Meta{}, fmt.Errorf("read npm view of %q: %w", spec, err)
	}
	if v.Integrity == "" {
		return Meta{}, fmt.Errorf("npm view of %q: the registry names no dist.integrity (does the version exist?)", spec)
	}
	ts, ok := v.Time[spec.Version]
	if !ok {
		return Meta{}, fmt.Errorf("npm view of %q: the registry names no publication time for %q", spec, spec.Version)
	}
	t, err := time.Parse(time.RFC3339, ts)
	if err != nil {
		return Meta{}, fmt.Errorf("npm view of %q: publication time %q: %w", spec, ts, err)
	}
	return Meta{Integrity: v.Integrity, Tarball: v.Tarball, Published: t}, nil
}

// parsePack reads `npm pack --json`: the file name npm wrote.
func parsePack(spec Spec, out []byte) (string, error) {
	var v []struct {
		Filename string `json:"filename"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		return "", fmt.Errorf("read npm pack of %q: %w", spec, err)
	}
	if len(v) != 1 || v[0].Filename == "" || filepath.Base(v[0].Filename) != v[0].Filename {
		return "", fmt.Errorf("npm pack of %q: expected one plain file name, got %s", spec, bytes.TrimSpace(out))
	}
	return v[0].Filename, nil
}

// npmRunner runs npm with the store's cache as working directory and npm cache.
type npmRunner struct {
	npm   string
	cache string
}

// env is npm's environment: the user's own (their npmrc and registry are trusted), with
// scripts off and npm's cache moved under the store's cache.
func (r npmRunner) env() []string {
	env := os.Environ()
	return append(env,
		"npm_config_ignore_scripts=true",
		"npm_config_cache="+filepath.Join(r.cache, "npm"),
		"npm_config_update_notifier=false",
		"npm_config_fund=false",
		"npm_config_audit=false",
	)
}

// run runs npm with args and returns its stdout; its error carries the command and the tail of
// stderr.
func (r npmRunner) run(ctx context.Context, args []string) ([]byte, error) {
	if err := os.MkdirAll(r.cache, 0o700); err != nil {
		return nil, fmt.Errorf("create npm cache %q: %w", r.cache, err)
	}
	cmd := exec.CommandContext(ctx, r.npm, args...)
	cmd.Dir = r.cache
	cmd.Env = r.env()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %w: %s", r.npm, strings.Join(args, " "), err, tail(stderr.Bytes(), 600))
	}
	return stdout.Bytes(), nil
}

// view returns the registry's metadata of spec.
func (r npmRunner) view(ctx context.Context, spec Spec) (Meta, error) {
	out, err := r.run(ctx, viewArgs(spec))
	if err != nil {
		return Meta{}, err
	}
	return parseView(spec, out)
}

// times returns the publication time of every version of pkg.
func (r npmRunner) times(ctx context.Context, pkg string) (map[string]time.Time, error) {
	out, err := r.run(ctx, timesArgs(pkg))
	if err != nil {
		return nil, err
	}
	var raw map[string]string
	if err := json.Unmarshal(out, &raw); err != nil {
		return nil, fmt.Errorf("read npm view of %q time: %w", pkg, err)
	}
	times := map[string]time.Time{}
	for v, ts := range raw {
		if t, err := time.Parse(time.RFC3339, ts); err == nil && versionRE.MatchString(v) {
			times[v] = t
		}
	}
	return times, nil
}

// pack downloads spec's tarball into dir and returns its path.
func (r npmRunner) pack(ctx context.Context, spec Spec, dir string) (string, error) {
	out, err := r.run(ctx, packArgs(spec, dir))
	if err != nil {
		return "", err
	}
	name, err := parsePack(spec, out)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, name), nil
}

// checkIntegrity hashes the file at path and compares it with every sha512 in integrity (an
// SRI string). A string with no sha512 is refused: sha1 alone is not enough.
func checkIntegrity(path, integrity string) error {
	var want []string
	for _, f := range strings.Fields(integrity) {
		if d, ok := strings.CutPrefix(f, "sha512-"); ok {
			want = append(want, strings.SplitN(d, "?", 2)[0])
		}
	}
	if len(want) == 0 {
		return fmt.Errorf("check %q: integrity %q names no sha512: %w", path, integrity, ErrIntegrity)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("check %q: %w", path, err)
	}
	defer f.Close()
	h := sha512.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("check %q: %w", path, err)
	}
	got := base64.StdEncoding.EncodeToString(h.Sum(nil))
	for _, w := range want {
		if w == got {
			return nil
		}
	}
	return fmt.Errorf("check %q: sha512 is %q, the registry says %q: %w", path, "sha512-"+got, integrity, ErrIntegrity)
}

// checkAge refuses a version published less than minAge before now.
func checkAge(spec Spec, published, now time.Time, minAge time.Duration) error {
	if minAge < 0 {
		return nil
	}
	if age := now.Sub(published); age < minAge {
		return fmt.Errorf("agent package %q was published %s (%s ago), less than %s ago: %w; pin an older version with agent_versions, or lower agent_min_age in your trusted config (~/.corral/config.toml) if you accept the risk",
			spec, published.UTC().Format(time.RFC3339), age.Round(time.Minute), minAge, ErrTooNew)
	}
	return nil
}

// tail returns the last n bytes of b, trimmed, for error messages.
func tail(b []byte, n int) string {
	b = bytes.TrimSpace(b)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// newestOldEnough returns the highest plain release in times published at least minAge before
// now, or "".
func newestOldEnough(times map[string]time.Time, now time.Time, minAge time.Duration) string {
	best := ""
	for v, t := range times {
		if !releaseRE.MatchString(v) || (minAge >= 0 && now.Sub(t) < minAge) {
			continue
		}
		if best == "" || compareRelease(v, best) > 0 {
			best = v
		}
	}
	return best
}

// compareRelease compares two plain X.Y.Z releases numerically.
func compareRelease(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := range 3 {
		x, _ := strconv.Atoi(as[i])
		y, _ := strconv.Atoi(bs[i])
		if x != y {
			return cmp.Compare(x, y)
		}
	}
	return 0
}
