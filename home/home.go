package home

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Env is the environment variable that moves git corral's state directory.
const Env = "CORRAL_HOME"

// Home is the resolved state directory. The zero value is not usable; call Resolve.
type Home struct {
	Dir string
}

// Resolve returns $CORRAL_HOME, or ~/.corral when it is unset. The path is made absolute so that
// later chdirs do not move it.
func Resolve(getenv func(string) string) (Home, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	dir := getenv(Env)
	if dir == "" {
		h := getenv("HOME")
		if h == "" {
			var err error
			if h, err = os.UserHomeDir(); err != nil {
				return Home{}, fmt.Errorf("find home directory: %w (set %s)", err, Env)
			}
		}
		dir = filepath.Join(h, ".corral")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Home{}, fmt.Errorf("resolve %s %q: %w", Env, dir, err)
	}
	return Home{Dir: abs}, nil
}

// GlobalConfig is the trusted global configuration file.
func (h Home) GlobalConfig() string { return filepath.Join(h.Dir, "config.toml") }

// ProjectConfig is the trusted per-project configuration file of a box.
func (h Home) ProjectConfig(box string) string {
	return filepath.Join(h.Dir, "projects", box+".toml")
}

// LimaHome is the LIMA_HOME git corral runs limactl with.
func (h Home) LimaHome() string { return filepath.Join(h.Dir, "lima") }

// BoxMeta is the metadata file of a box.
func (h Home) BoxMeta(box string) string { return filepath.Join(h.Dir, "boxes", box+".json") }

// Approvals is the provision review state of a box.
func (h Home) Approvals(box string) string {
	return filepath.Join(h.Dir, "approvals", box+".json")
}

// Images is the directory of locally built base images.
func (h Home) Images() string { return filepath.Join(h.Dir, "images") }

// Logs is the directory of the audit and egress logs.
func (h Home) Logs() string { return filepath.Join(h.Dir, "logs") }

// SessionsLog is the audit log.
func (h Home) SessionsLog() string { return filepath.Join(h.Logs(), "sessions.jsonl") }

// PolicySnapshots is where sessions store the policy they started under, by digest
// (policy.Snapshot): logs/policies/<hex>.json.
func (h Home) PolicySnapshots() string { return filepath.Join(h.Logs(), "policies") }

// PolicySnapshot is the file of the snapshot with digest "sha256:<hex>"; "" for another form.
func (h Home) PolicySnapshot(digest string) string {
	hexd, ok := strings.CutPrefix(digest, "sha256:")
	if !ok || len(hexd) != 64 || strings.Trim(hexd, "0123456789abcdef") != "" {
		return ""
	}
	return filepath.Join(h.PolicySnapshots(), hexd+".json")
}

// EgressLog is the broker's decision log of a box.
func (h Home) EgressLog(box string) string {
	return filepath.Join(h.Logs(), "egress-"+box+".jsonl")
}

// BrokerLog is the broker's own diagnostic log of a box.
func (h Home) BrokerLog(box string) string {
	return filepath.Join(h.Logs(), "broker-"+box+".log")
}

// MkdirAll creates dir (a path under the home) with owner-only permissions and refuses a
// symlink in its place, so that another local user cannot redirect state files.
func (h Home) MkdirAll(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("check %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("check %s: %w", dir, errors.New("not a directory (a symlink or file is in the way)"))
	}
	return nil
}

// SessionBases is the directory of a box's session bases (package diff): their manifests and
// the blob store holding the bytes the repository lacks, ignored files such as .env included.
// It lives here, never in the repository, so that no ref or object of the repository carries
// them.
func (h Home) SessionBases(box string) string { return filepath.Join(h.Dir, "sessions", box) }

// CloneStore is the bare, hook-free store of a clone-mode box (package clone).
func (h Home) CloneStore(box string) string {
	return filepath.Join(h.Dir, "clones", box+".git")
}

// Boxes is the directory of box metadata, templates, locks and per-box secrets.
func (h Home) Boxes() string { return filepath.Join(h.Dir, "boxes") }

// BoxTemplate is the rendered Lima template of a box, kept for drift checks.
func (h Home) BoxTemplate(box string) string { return filepath.Join(h.Boxes(), box+".yaml") }

// BoxSessionMark is the file whose mtime says when a box was last used (idle stop).
func (h Home) BoxSessionMark(box string) string { return filepath.Join(h.Boxes(), box+".session") }

// BrokerSecret is the 0600 file holding a box's proxy secret.
func (h Home) BrokerSecret(box string) string {
	return filepath.Join(h.Boxes(), box+".json.broker-secret")
}

// Run is the directory of a box's connection holder (its socket, host key and lock).
func (h Home) Run(box string) string { return filepath.Join(h.Dir, "run", box) }

// ShadowState is where a box's git metadata snapshot lives (package gitshadow's files).
func (h Home) ShadowState(box string) string { return filepath.Join(h.Dir, "state", box, "gitshadow") }

// Golden is the directory of golden bases.
func (h Home) Golden() string { return filepath.Join(h.Dir, "golden") }

// Libexec holds helper programs git corral writes for QEMU (the golden resume wrapper).
func (h Home) Libexec() string { return filepath.Join(h.Dir, "libexec") }

// KVMProbe is the cached result of the KVM usability probe.
func (h Home) KVMProbe() string { return filepath.Join(h.Dir, "kvm-probe.json") }

// SandboxLog is the light tier's log of runs and broker decisions (package sandbox).
func (h Home) SandboxLog() string { return filepath.Join(h.Logs(), "sandbox.jsonl") }

// SSHConfig is the ssh_config(5) file git corral ssh-config --install writes.
func (h Home) SSHConfig() string { return filepath.Join(h.Dir, "ssh_config") }

// BoxNotices records the notices already said for a box (session/notice.go), so that a notice
// about something that does not change between sessions is said once, not on every command.
func (h Home) BoxNotices(box string) string { return filepath.Join(h.Boxes(), box+".notices") }

// SSHKnownHosts is the known_hosts file of an editor's ssh connections to a box.
func (h Home) SSHKnownHosts(box string) string { return filepath.Join(h.Boxes(), box+".known_hosts") }
