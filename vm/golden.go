package vm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/git-corral/git-corral/internal/atomicfile"
	"github.com/git-corral/git-corral/internal/lazyre"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/provision"
)

// A golden base is the disk of a box booted once from scratch (image + packages + the product's
// guest scripts), stopped and flattened into one read-only qcow2. A new box with the same guest
// recipe gets a qcow2 overlay backed by it instead of a copy of the image: a few hundred KiB
// instead of ~0.5 GB, and no first-boot work. QEMU opens backing files read-only; the file is
// also mode 0444 and its sha256 is recorded at build time so that a changed base is detected.

// Files of a golden base, inside its directory $CORRAL_HOME/golden/<key>.
const (
	GoldenDisk = "golden.qcow2"
	goldenMeta = "golden.json"
)

// Golden is one built golden base.
type Golden struct {
	// Key is the guest recipe hash (the directory name).
	Key string `json:"key"`
	// Dir holds GoldenDisk and golden.json.
	Dir string `json:"dir"`
	// Image is the hash of the base image it was built from.
	Image string `json:"image"`
	// Disk is the box disk size it was built for.
	Disk string `json:"disk"`
	// SHA256 is the hash of GoldenDisk when it was built.
	SHA256 string `json:"sha256"`
	// Bytes is the size of GoldenDisk.
	Bytes int64 `json:"bytes"`
	// Built is when the build finished; BuildSeconds how long it took.
	Built        time.Time `json:"built"`
	BuildSeconds float64   `json:"buildSeconds"`
	// StateSHA256 and StateBytes describe GoldenStateFile, the build box's saved memory, when
	// the base has one (golden_state.go); empty for a disk-only base.
	StateSHA256 string `json:"stateSha256,omitempty"`
	StateBytes  int64  `json:"stateBytes,omitempty"`
	// LimaVersion is the Lima that made the build box (its instance's lima-version): a state
	// holds that Lima's guest agent and boot state, so only a box made by the same Lima resumes
	// it; others boot from the disk, where Lima's boot scripts install their own agent.
	LimaVersion string `json:"limaVersion,omitempty"`
	// Users are the boxes whose metadata names this base (filled by Goldens).
	Users []string `json:"users"`
}

// DiskPath is the golden disk's path.
func (g Golden) DiskPath() string { return filepath.Join(g.Dir, GoldenDisk) }

// StatePath is the saved state's path (only meaningful when StateSHA256 is set).
func (g Golden) StatePath() string { return filepath.Join(g.Dir, GoldenStateFile) }

// HasState reports whether the base has a saved running state.
func (g Golden) HasState() bool { return g.StateSHA256 != "" }

// GoldenBox is what of one box its golden key depends on besides its recipe.
type GoldenBox struct {
	// ProjectDir and BrokerPort are masked out of the recipe's scripts: a base serves every
	// project (and every broker port) of the same recipe otherwise. That is safe by
	// construction: a box that boots from a base runs every product script at each boot, and a
	// box that resumes a base's state runs again every script that is not byte for byte one the
	// build box ran (golden_state.go).
	ProjectDir string
	BrokerPort int
	// State is whether the box can resume a saved state (stateCapable): such boxes get bases
	// with one, built with their devices, and the state fixes the CPUs and memory.
	State bool
	// AgentMounts is whether the box has the standard agent mounts (agentmounts.go): a state
	// base is built with the same devices, so boxes with and without them never share one.
	AgentMounts bool
}

// GoldenKey hashes a box's guest recipe: the image, the box disk size, the packages, the
// product's guest scripts in the bundle (Bundle.Recipe) with the project path and broker port
// masked, the seals, and for a state base the CPUs and memory. It leaves out the mounts, the git
// shadow script and the repository's own provision scripts, which are per box and run in every
// box; the product scripts still carry the network mode, so each mode has its own base.
func GoldenKey(img Image, cfg *policy.Config, b provision.Bundle, box GoldenBox) string {
	h := sha256.New()
	fmt.Fprintf(h, "golden/6\x00image\x00%s\x00disk\x00%s\x00", img.Hash, cfg.Disk)
	if box.State {
		fmt.Fprintf(h, "state\x00cpus\x00%d\x00memory\x00%s\x00", cfg.CPUs, cfg.Memory)
		if box.AgentMounts {
			io.WriteString(h, "agentmounts\x00")
		}
	}
	pk := append([]string(nil), cfg.Packages...)
	sort.Strings(pk)
	for _, p := range pk {
		fmt.Fprintf(h, "package\x00%s\x00", p)
	}
	mask := func(body string) string {
		// First the digests and the heredoc tags made from them (05-box's heredoc of the broker
		// port file is tagged with its digest), then the box's own values.
		body = hexRun.ReplaceAllString(body, "\x00hex\x00")
		if box.ProjectDir != "" {
			body = strings.ReplaceAll(body, box.ProjectDir, "\x00project\x00")
		}
		if box.BrokerPort != 0 {
			body = strings.ReplaceAll(body, strconv.Itoa(box.BrokerPort), "\x00port\x00")
		}
		return body
	}
	// The seals are part of the base (the state's seal also waits in its saved memory), so a
	// changed seal makes a new base.
	for _, s := range append(b.Recipe().Scripts, goldenSealScript(), stateSealScript("", "/", nil)) {
		body := mask(s.Body)
		if s.Name == provision.BoxScriptName {
			// The box's own values (its project directory, none in clone mode, and its broker
			// port), which a resume writes again whenever they differ from the build box's
			// (its body's hash is not the recipe's then): any box of the recipe shares the base.
			body = ""
		}
		fmt.Fprintf(h, "script\x00%s\x00%s\x00%d\x00", s.Name, s.Mode, len(body))
		io.WriteString(h, body)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// hexRun matches the hex digests in rendered scripts.
var hexRun = lazyre.New(`[0-9a-f]{16,}`)

// GoldenRoot is where golden bases live.
func (m *Manager) GoldenRoot() string { return m.Home.Golden() }

// ErrNoGolden is returned when no golden base of a key is built.
var ErrNoGolden = errors.New("no golden base of this guest recipe")

// FindGolden returns the golden base of key.
func (m *Manager) FindGolden(key string) (Golden, error) {
	dir := filepath.Join(m.GoldenRoot(), key)
	var g Golden
	b, err := os.ReadFile(filepath.Join(dir, goldenMeta))
	if errors.Is(err, fs.ErrNotExist) {
		return g, fmt.Errorf("%w (%s)", ErrNoGolden, key)
	}
	if err != nil {
		return g, err
	}
	if err := json.Unmarshal(b, &g); err != nil {
		return g, fmt.Errorf("read golden base %s: %w", filepath.Join(dir, goldenMeta), err)
	}
	g.Dir = dir
	if _, err := os.Stat(g.DiskPath()); err != nil {
		return g, fmt.Errorf("golden base %s: %w", key, err)
	}
	return g, nil
}

// Goldens lists the golden bases and which boxes use them.
func (m *Manager) Goldens() ([]Golden, error) {
	ents, err := os.ReadDir(m.GoldenRoot())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	users := m.goldenUsers()
	var out []Golden
	for _, e := range ents {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		g, err := m.FindGolden(e.Name())
		if err != nil {
			continue // a half-built or foreign directory; prune removes it
		}
		g.Users = users[g.Key]
		out = append(out, g)
	}
	return out, nil
}

// goldenUsers maps a golden key to the boxes whose metadata names it and whose Lima instance
// still exists (metadata left by a box deleted behind git corral's back does not pin a base).
func (m *Manager) goldenUsers() map[string][]string {
	out := map[string][]string{}
	metas, _ := filepath.Glob(filepath.Join(m.Home.Boxes(), "*.json"))
	for _, p := range metas {
		box := strings.TrimSuffix(filepath.Base(p), ".json")
		if _, err := os.Stat(filepath.Join(m.Home.LimaHome(), box)); err != nil {
			continue
		}
		if meta, err := m.ReadMeta(box); err == nil && meta.Golden != "" {
			out[meta.Golden] = append(out[meta.Golden], box)
		}
	}
	return out
}

// VerifyGolden re-hashes the golden disk and compares it with the hash recorded at build time.
func VerifyGolden(ctx context.Context, g Golden) error {
	sum, err := fileSHA256(ctx, g.DiskPath())
	if err != nil {
		return err
	}
	if sum != g.SHA256 {
		return fmt.Errorf("golden base %s was modified: sha256 %s, recorded %s", g.Key, sum, g.SHA256)
	}
	if !g.HasState() {
		return nil
	}
	if sum, err = fileSHA256(ctx, g.StatePath()); err != nil {
		return err
	}
	if sum != g.StateSHA256 {
		return fmt.Errorf("golden state %s was modified: sha256 %s, recorded %s", g.Key, sum, g.StateSHA256)
	}
	return nil
}

// fileSHA256 hashes a file, stopping when ctx ends.
func fileSHA256(ctx context.Context, p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	buf := make([]byte, 1<<20)
	for {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		n, err := f.Read(buf)
		h.Write(buf[:n])
		if errors.Is(err, io.EOF) {
			return hex.EncodeToString(h.Sum(nil)), nil
		}
		if err != nil {
			return "", fmt.Errorf("hash %s: %w", p, err)
		}
	}
}

// PruneGoldens removes golden bases no box uses (and half-built directories); it returns the
// keys removed. A base some box's metadata names is kept: its overlay would lose its backing.
func (m *Manager) PruneGoldens() ([]string, error) {
	ents, err := os.ReadDir(m.GoldenRoot())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	users := m.goldenUsers()
	var gone []string
	for _, e := range ents {
		if !e.IsDir() || len(users[e.Name()]) > 0 || strings.HasPrefix(e.Name(), ".golden-src") {
			continue
		}
		dir := filepath.Join(m.GoldenRoot(), e.Name())
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = os.Chmod(p, 0o700)
			}
			return nil
		})
		if err := os.RemoveAll(dir); err != nil {
			return gone, fmt.Errorf("prune golden base %s: %w", e.Name(), err)
		}
		gone = append(gone, e.Name())
	}
	return gone, nil
}

// writeGoldenMeta records a finished golden base.
func writeGoldenMeta(g Golden) error {
	b, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(g.Dir, goldenMeta), append(b, '\n'), 0o444)
}

// qemuImg runs qemu-img with args and returns its combined output in the error.
func qemuImg(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "qemu-img", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("qemu-img %s: %w: %s", args[0], err, strings.TrimSpace(string(out)))
	}
	return nil
}
