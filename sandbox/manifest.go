package sandbox

// Manifest rules:
//   - The file is TOML, at most 64 KiB. It is decoded into plain maps first, so every key is
//     checked exactly as written: a key in another case or with a look-alike letter ("[FS]",
//     "networ\u212A") is unknown and refused, never folded into a known one.
//   - Every problem is reported at once, each naming the file, the key path and the value.
//   - Paths are absolute or start with "~/" (the host's $HOME); they are cleaned, and may not
//     contain NUL, newlines or "..".
//   - Nothing granted means nothing beyond running the command itself.

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/git-corral/git-corral/internal/lazyre"
)

// maxManifestBytes caps the manifest file.
const maxManifestBytes = 64 << 10

// DefaultScratch is the size of the private /tmp when limits.scratch is not set.
const DefaultScratch = 256 << 20

// Manifest is what one sandboxed run is granted. The zero value grants nothing.
type Manifest struct {
	// Source is the file the manifest came from ("" for none).
	Source string
	// Digest is "sha256:" and the hex digest of the file's bytes ("" for none).
	Digest string
	// NarrowedBy is the repository's .corral.toml whose [sandbox] table narrowed this manifest
	// (git corral sandbox does, through policy), or "".
	NarrowedBy string
	// Read and Write are absolute host paths, read-only and read-write.
	Read, Write []string
	// Network is the broker allow-list.
	Network []string
	// Exec are programs, or directories of programs, that may be executed.
	Exec []string
	// Env are host variable names passed in.
	Env []string
	// Limits bound the run.
	Limits Limits
}

// Limits bound one run; a zero field means no limit (Scratch: DefaultScratch).
type Limits struct {
	// Timeout ends the run (status 124).
	Timeout time.Duration `json:"timeoutNs,omitempty"`
	// Memory is the address space of each process (RLIMIT_AS), in bytes.
	Memory int64 `json:"memory,omitempty"`
	// Pids caps the processes and threads of the sandbox (RLIMIT_NPROC in its own user
	// namespace).
	Pids int `json:"pids,omitempty"`
	// CPU is the CPU time of each process (RLIMIT_CPU).
	CPU time.Duration `json:"cpuNs,omitempty"`
	// Output caps the bytes copied from the command's stdout and stderr together.
	Output int64 `json:"output,omitempty"`
	// Scratch is the size of the private /tmp, in bytes.
	Scratch int64 `json:"scratch,omitempty"`
}

// tables lists the keys each table accepts, exactly as they must be written.
var tables = map[string][]string{
	"fs":      {"read", "write"},
	"network": {"allow"},
	"exec":    {"allow"},
	"env":     {"pass"},
	"limits":  {"timeout", "memory", "pids", "cpu", "output", "scratch"},
}

// LoadManifest reads and checks the manifest at path; home is the host's $HOME for "~/" paths.
func LoadManifest(path, home string, b Broker) (*Manifest, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read sandbox manifest: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read sandbox manifest %s: %w", path, err)
	}
	if len(data) > maxManifestBytes {
		return nil, fmt.Errorf("sandbox manifest %s: larger than %d bytes", path, maxManifestBytes)
	}
	return ParseManifest(path, data, home, b)
}

// ParseManifest checks data, the manifest named name, and returns it or an error listing every
// problem; b checks network.allow. Without b, a manifest whose network.allow holds an entry is
// ErrNeedsBroker, whatever else it holds: only a caller with the broker can say all of it.
func ParseManifest(name string, data []byte, home string, b Broker) (*Manifest, error) {
	sum := sha256.Sum256(data)
	m := &Manifest{Source: name, Digest: "sha256:" + hex.EncodeToString(sum[:])}
	var raw map[string]any
	md, err := toml.Decode(string(data), &raw)
	if err != nil {
		return nil, fmt.Errorf("sandbox manifest %s: %w", name, err)
	}
	p := &parser{name: name, home: home, broker: b}
	// The decoder keeps the last of two definitions of an array key; a manifest must say one.
	seen := map[string]bool{}
	for _, k := range md.Keys() {
		if key := k.String(); seen[key] {
			p.errf(key, "defined more than once")
		} else {
			seen[key] = true
		}
	}
	for _, t := range sortedKeys(raw) {
		allowed, ok := tables[t]
		if !ok {
			p.errf(t, "unknown table; the manifest has [fs], [network], [exec], [env] and [limits]")
			continue
		}
		tab, ok := raw[t].(map[string]any)
		if !ok {
			p.errf(t, "must be a table, got %s", typeName(raw[t]))
			continue
		}
		for _, k := range sortedKeys(tab) {
			if !slices.Contains(allowed, k) {
				p.errf(t+"."+k, "unknown key; [%s] has %s", t, strings.Join(allowed, ", "))
				continue
			}
			p.set(m, t+"."+k, tab[k])
		}
	}
	if b == nil && len(m.Network) > 0 {
		return nil, fmt.Errorf("sandbox manifest %s: %w", name, ErrNeedsBroker)
	}
	if err := errors.Join(p.errs...); err != nil {
		return nil, err
	}
	return m, nil
}

// parser collects every problem of one manifest.
type parser struct {
	name, home string
	broker     Broker
	errs       []error
}

func (p *parser) errf(key, format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf("sandbox manifest %s: %s: %s", p.name, strconv.Quote(key), fmt.Sprintf(format, args...)))
}

// set checks one value and stores it in m.
func (p *parser) set(m *Manifest, key string, v any) {
	switch key {
	case "fs.read":
		m.Read = p.paths(key, v)
	case "fs.write":
		m.Write = p.paths(key, v)
	case "exec.allow":
		m.Exec = p.paths(key, v)
	case "network.allow":
		m.Network = p.strings(key, v)
		if p.broker == nil {
			break // ParseManifest refuses m when m.Network holds an entry
		}
		if err := p.broker.CheckAllowList(m.Network); err != nil {
			p.errf(key, "%v", err)
		}
	case "env.pass":
		m.Env = p.strings(key, v)
		for _, n := range m.Env {
			if !envName.MatchString(n) {
				p.errf(key, "%q is not a variable name (letters, digits and _, not starting with a digit)", n)
			}
		}
	case "limits.timeout", "limits.cpu":
		d := p.duration(key, v)
		if key == "limits.timeout" {
			m.Limits.Timeout = d
		} else {
			m.Limits.CPU = d
		}
	case "limits.memory", "limits.output", "limits.scratch":
		n := p.size(key, v)
		switch key {
		case "limits.memory":
			m.Limits.Memory = n
		case "limits.output":
			m.Limits.Output = n
		default:
			m.Limits.Scratch = n
		}
	case "limits.pids":
		n, ok := v.(int64)
		if !ok || n < 1 || n > 1<<20 {
			p.errf(key, "want a whole number from 1 to %d, got %s", 1<<20, show(v))
			return
		}
		m.Limits.Pids = int(n)
	}
}

var envName = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*$`)

// strings checks an array of strings.
func (p *parser) strings(key string, v any) []string {
	arr, ok := v.([]any)
	if !ok {
		p.errf(key, "want an array of strings, got %s", typeName(v))
		return nil
	}
	out := make([]string, 0, len(arr))
	for i, e := range arr {
		s, ok := e.(string)
		if !ok {
			p.errf(fmt.Sprintf("%s[%d]", key, i), "want a string, got %s", typeName(e))
			continue
		}
		out = append(out, s)
	}
	return out
}

// paths checks an array of host paths and returns them absolute and clean.
func (p *parser) paths(key string, v any) []string {
	var out []string
	for _, s := range p.strings(key, v) {
		abs, err := hostPath(s, p.home)
		if err != nil {
			p.errf(key, "%q: %v", s, err)
			continue
		}
		out = append(out, abs)
	}
	return out
}

// hostPath turns a manifest path into an absolute, clean host path.
func hostPath(s, home string) (string, error) {
	if strings.ContainsAny(s, "\x00\n\r") {
		return "", errors.New("contains NUL or a line break")
	}
	for _, part := range strings.Split(s, "/") {
		if part == ".." {
			return "", errors.New(`contains "..": name the path itself`)
		}
	}
	if rest, ok := strings.CutPrefix(s, "~/"); ok {
		if home == "" {
			return "", errors.New("starts with ~/ but $HOME is not set")
		}
		s = filepath.Join(home, rest)
	}
	if !filepath.IsAbs(s) {
		return "", errors.New(`must be absolute or start with "~/"`)
	}
	return filepath.Clean(s), nil
}

// duration checks a Go duration string.
func (p *parser) duration(key string, v any) time.Duration {
	s, ok := v.(string)
	d, err := time.ParseDuration(s)
	if !ok || err != nil || d <= 0 || d > 365*24*time.Hour {
		p.errf(key, `want a duration such as "30s" or "5m", got %s`, show(v))
		return 0
	}
	return d
}

// size checks a size: a whole number of bytes or a string such as "512MiB".
func (p *parser) size(key string, v any) int64 {
	n, err := parseSize(v)
	if err != nil {
		p.errf(key, `want a size such as "512MiB" (KiB, MiB, GiB) or a number of bytes, got %s`, show(v))
	}
	return n
}

var sizeUnits = map[string]int64{"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}

func parseSize(v any) (int64, error) {
	if n, ok := v.(int64); ok {
		if n <= 0 {
			return 0, errors.New("not positive")
		}
		return n, nil
	}
	s, ok := v.(string)
	if !ok {
		return 0, errors.New("not a size")
	}
	i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	if i < 0 {
		i = len(s)
	}
	unit, ok := sizeUnits[strings.TrimSpace(s[i:])]
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if !ok || err != nil || n <= 0 || n > (1<<50)/unit {
		return 0, errors.New("not a size")
	}
	return n * unit, nil
}

func show(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%v (%s)", v, typeName(v))
}

func typeName(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	}
	return fmt.Sprintf("%T", v)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
