package vm

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/lima-vm/lima/pkg/osutil"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/lima-vm/lima/pkg/store"
	"github.com/lima-vm/lima/pkg/store/filenames"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/internal/atomicfile"
	"github.com/git-corral/git-corral/internal/lazyre"
)

// TCGQemu is the QEMU binary plus the arguments that force software emulation; Lima reads it
// from $QEMU_SYSTEM_X86_64 (MACHINE.md: Lima always asks for KVM on Linux).
const TCGQemu = "qemu-system-x86_64 -machine q35,vmport=off -accel tcg,thread=multi,tb-size=512"

// ErrRoot is returned when git corral is run as root: limactl refuses it.
var ErrRoot = errors.New("limactl refuses to run as root, so git corral cannot manage boxes as root")

// ErrNoBox is returned when a box does not exist and may not be created.
var ErrNoBox = errors.New("box does not exist")

// Manager runs limactl for the boxes under one $CORRAL_HOME.
type Manager struct {
	// Limactl is the limactl binary.
	Limactl string
	// Home is git corral's state directory; LIMA_HOME is Home.LimaHome().
	Home home.Home
	// TCG forces software emulation for the boxes this manager starts.
	TCG bool
}

// NewManager returns a Manager and points this process's LIMA_HOME at h.LimaHome(), which Lima's
// Go packages (store, limayaml) read from the environment. It refuses root.
func NewManager(limactl string, h home.Home) (*Manager, error) {
	if os.Geteuid() == 0 {
		return nil, ErrRoot
	}
	if err := h.MkdirAll(h.LimaHome()); err != nil {
		return nil, err
	}
	if err := os.Setenv("LIMA_HOME", h.LimaHome()); err != nil {
		return nil, err
	}
	return &Manager{Limactl: limactl, Home: h}, nil
}

// command returns a limactl command with git corral's environment, plus extra (which may set
// QEMU_SYSTEM_X86_64: the golden state's QEMU wrapper).
func (m *Manager) command(ctx context.Context, extra []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, m.Limactl, append([]string{"--tty=false"}, args...)...)
	env := []string{"LIMA_HOME=" + m.Home.LimaHome()}
	own := map[string]bool{}
	for _, kv := range extra {
		k, _, _ := strings.Cut(kv, "=")
		own[k] = true
	}
	if m.TCG && !own["QEMU_SYSTEM_X86_64"] {
		env = append(env, "QEMU_SYSTEM_X86_64="+TCGQemu)
	}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k != "LIMA_HOME" && k != "QEMU_SYSTEM_X86_64" && k != "LIMA_INSTANCE" && !strings.HasPrefix(k, "CORRAL_QEMU_") && !own[k] {
			env = append(env, kv)
		}
	}
	env = append(env, extra...)
	cmd.Env = env
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// Status is a box's state as Lima sees it.
type Status struct {
	Name   string `json:"name"`
	Status string `json:"status"` // Running, Stopped, Broken, … or "" when it does not exist
	Dir    string `json:"dir"`
	// SSHConfig is the instance's ssh.config.
	SSHConfig string   `json:"sshConfig"`
	Errors    []string `json:"errors,omitempty"`
}

// Exists reports whether the box has a Lima instance.
func (s Status) Exists() bool { return s.Status != "" }

// Inspect returns the box's state through Lima's store package.
func (m *Manager) Inspect(box string) (Status, error) {
	if st, ok := runningByPIDs(box); ok {
		return st, nil
	}
	inst, err := store.Inspect(box)
	if errors.Is(err, fs.ErrNotExist) {
		return Status{Name: box}, nil
	}
	if err != nil {
		return Status{}, fmt.Errorf("inspect box %q: %w", box, err)
	}
	s := Status{Name: box, Status: inst.Status, Dir: inst.Dir, SSHConfig: inst.SSHConfigFile}
	for _, e := range inst.Errors {
		s.Errors = append(s.Errors, e.Error())
	}
	return s, nil
}

// runningByPIDs is Inspect's fast path for the common case of every warm command: Lima calls
// an instance Running when its host agent's and its VM driver's PID files name live processes,
// and so does this, with the SSH config in place — without loading and validating lima.yaml
// and asking the host agent over its socket, which store.Inspect does (~7 ms, three times per
// `git corral run`). Anything else takes the full inspection.
func runningByPIDs(box string) (Status, bool) {
	dir, err := store.InstanceDir(box)
	if err != nil {
		return Status{}, false
	}
	if pid, err := store.ReadPIDFile(filepath.Join(dir, filenames.HostAgentPID)); err != nil || pid == 0 {
		return Status{}, false
	}
	driver := 0
	for _, vmType := range []string{"qemu", "vz"} {
		if pid, err := store.ReadPIDFile(filepath.Join(dir, filenames.PIDFile(vmType))); err == nil && pid != 0 {
			driver = pid
		}
	}
	cfg := filepath.Join(dir, filenames.SSHConfig)
	if fi, err := os.Lstat(cfg); driver == 0 || err != nil || !fi.Mode().IsRegular() {
		return Status{}, false
	}
	return Status{Name: box, Status: store.StatusRunning, Dir: dir, SSHConfig: cfg}, true
}

// Boxes lists every box under LIMA_HOME.
func (m *Manager) Boxes() ([]Status, error) {
	names, err := store.Instances()
	if err != nil {
		return nil, fmt.Errorf("list boxes: %w", err)
	}
	var out []Status
	for _, n := range names {
		s, err := m.Inspect(n)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// Meta is what git corral records about a box, in $CORRAL_HOME/boxes/<box>.json.
type Meta struct {
	Box          string    `json:"box"`
	Project      string    `json:"project"`
	Created      time.Time `json:"created"`
	TemplateHash string    `json:"templateHash"`
	Image        string    `json:"image"`
	MountType    string    `json:"mountType"`
	TCG          bool      `json:"tcg"`
	Network      string    `json:"network"`
	// BrokerPort is the box's broker port on the host, fixed at creation: the guest's firewall
	// allows exactly this port on the gateway.
	BrokerPort int `json:"brokerPort,omitempty"`
	// BrokerPID is the running broker child, when there is one.
	BrokerPID int `json:"brokerPid,omitempty"`
	// NoProjectMount is true for a clone-mode box, which mounts nothing of the host.
	NoProjectMount bool `json:"noProjectMount,omitempty"`
	// Golden is the key of the golden base the box's disk is an overlay of; "" from scratch.
	Golden string `json:"golden,omitempty"`
	// GuestScripts are the product's guest scripts rendered into the box at creation
	// (provision.Bundle.ProductScripts); nil for a box made before they were recorded.
	GuestScripts map[string]string `json:"guestScripts,omitempty"`
	// State is StateCreating from before `limactl create` until the new box first reached
	// READY, "" after (creating.go).
	State string `json:"state,omitempty"`
	// Mounts and Ports are the box's `mounts` and `ports` entries as written when it was
	// created: its Lima instance keeps them (session/extra.go refuses a box that differs).
	Mounts []string `json:"mounts,omitempty"`
	Ports  []string `json:"ports,omitempty"`
	// GitMounts are the host directories mounted besides the project (a linked worktree's
	// common dir, BoxSpec.GitMounts), so the template can be rendered again as it was made.
	GitMounts []string `json:"gitMounts,omitempty"`
}

// TemplateHash names a rendered template; a box whose template hash differs has drifted.
func TemplateHash(tmpl []byte) string {
	s := sha256.Sum256(tmpl)
	return hex.EncodeToString(s[:8])
}

// ReadMeta reads a box's metadata.
func (m *Manager) ReadMeta(box string) (Meta, error) {
	var meta Meta
	b, err := os.ReadFile(m.Home.BoxMeta(box))
	if err != nil {
		return meta, err
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		return meta, fmt.Errorf("read box metadata %s: %w", m.Home.BoxMeta(box), err)
	}
	return meta, nil
}

// WriteMeta writes a box's metadata atomically.
func (m *Manager) WriteMeta(meta Meta) error {
	p := m.Home.BoxMeta(meta.Box)
	if err := m.Home.MkdirAll(filepath.Dir(p)); err != nil {
		return err
	}
	b, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(p, append(b, '\n'), 0o600)
}

// LogPath is where git corral keeps limactl's output for a box.
func (m *Manager) LogPath(box string) string {
	return filepath.Join(m.Home.Logs(), "box-"+box+".log")
}

// Create makes the box's instance from tmpl without booting it (Lima copies the image).
func (m *Manager) Create(ctx context.Context, box string, tmpl []byte, p *Progress) error {
	dir := m.Home.Boxes()
	if err := m.Home.MkdirAll(dir); err != nil {
		return err
	}
	path := filepath.Join(dir, box+".yaml")
	if err := atomicfile.Write(path, tmpl, 0o600); err != nil {
		return err
	}
	p.Phase("copy image")
	return m.run(ctx, box, p, "create", "--name", box, path)
}

// Start boots an existing box and waits until Lima reports it READY.
func (m *Manager) Start(ctx context.Context, box string, p *Progress) error {
	if dir, err := store.InstanceDir(box); err == nil {
		if rp, ok := takeResume(dir); ok {
			return m.startResumed(ctx, box, dir, rp, p)
		}
	}
	p.Phase("boot")
	return m.run(ctx, box, p, "start", "--timeout", "20m", box)
}

// Stop shuts a box down.
//
// A failed `limactl stop` whose box reads as stopped afterwards is a stop: after the instance has
// shut down, limactl reconciles Lima's networks by inspecting every instance under LIMA_HOME, and
// one that another command is creating or deleting at that moment (its directory there, its
// lima.yaml not, or no longer) fails that step and limactl exits 1 (seen with two boxes made side
// by side: the box stopped, its watcher took the stop for a failure and never audited it). The
// error goes to the box's log.
func (m *Manager) Stop(ctx context.Context, box string) error {
	err := m.run(ctx, box, nil, "stop", box)
	if err == nil {
		return nil
	}
	if st, ierr := m.Inspect(box); ierr == nil && st.Status == store.StatusStopped {
		m.logf(box, "limactl stop exited with an error after the box stopped; the box is stopped: %v", err)
		return nil
	}
	return err
}

// Delete removes a box's instance (stopping it first) and its metadata.
func (m *Manager) Delete(ctx context.Context, box string) error {
	if err := m.run(ctx, box, nil, "delete", "--force", box); err != nil {
		// limactl reconciles its networks after removing the instance (see reconcileRace).
		st, ierr := m.Inspect(box)
		if ierr != nil || st.Exists() || !reconcileRace(err, box) {
			return err
		}
		m.logf(box, "limactl delete exited with an error after the box was removed; the box is deleted: %v", err)
	}
	for _, p := range []string{m.Home.BoxMeta(box), m.Home.BoxTemplate(box), m.Home.BoxNotices(box)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("delete box %q: %w", box, err)
		}
	}
	return nil
}

// run runs limactl, appending its output to the box's log and turning Lima's messages into
// progress phases.
func (m *Manager) run(ctx context.Context, box string, p *Progress, args ...string) error {
	return m.runWith(ctx, box, p, nil, args...)
}

// logf appends one line to the box's log.
func (m *Manager) logf(box, format string, a ...any) {
	if f, err := os.OpenFile(m.LogPath(box), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600); err == nil {
		fmt.Fprintf(f, "--- %s %s\n", time.Now().UTC().Format(time.RFC3339), strings.ReplaceAll(fmt.Sprintf(format, a...), "\n", " "))
		f.Close()
	}
}

// runWith is run with extra environment for limactl (see command). A `limactl start` that
// failed on another instance's missing lima.yaml (reconcileRace) is run again, up to twice, a
// second apart: Lima reconciles its networks before it starts anything, so nothing of the box
// was started.
func (m *Manager) runWith(ctx context.Context, box string, p *Progress, extra []string, args ...string) error {
	for attempt := 1; ; attempt++ {
		err := m.runOnce(ctx, box, p, extra, args...)
		if err == nil || attempt == 3 || args[0] != "start" || !reconcileRace(err, box) {
			return err
		}
		m.logf(box, "limactl start failed on another instance being created or deleted beside this box; trying again: %v", err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Second):
		}
	}
}

// reconcileRaceRE matches Lima's error for an instance directory without its lima.yaml.
var reconcileRaceRE = lazyre.New(`open (/[^:]*)/lima\.yaml: no such file or directory`)

// reconcileRace reports whether err, from limactl on box, is Lima's network reconciliation
// tripping over another instance: limactl start, stop and delete inspect every instance under
// LIMA_HOME, and one that another command is creating (its directory made, its lima.yaml not
// yet written) or deleting (lima.yaml removed before the directory) fails that inspection.
func reconcileRace(err error, box string) bool {
	for _, m := range reconcileRaceRE.Regexp().FindAllStringSubmatch(err.Error(), -1) {
		if filepath.Base(m[1]) != box {
			return true
		}
	}
	return false
}

// runOnce runs limactl once (see runWith).
func (m *Manager) runOnce(ctx context.Context, box string, p *Progress, extra []string, args ...string) error {
	if err := m.Home.MkdirAll(m.Home.Logs()); err != nil {
		return err
	}
	logf, err := os.OpenFile(m.LogPath(box), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("open box log: %w", err)
	}
	defer logf.Close()
	fmt.Fprintf(logf, "--- %s limactl %s\n", time.Now().UTC().Format(time.RFC3339), strings.Join(args, " "))
	cmd := m.command(ctx, extra, append(logArgs(ctx, m.Limactl), args...)...) // limalog.go
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	last := make(chan string, 1)
	go func() {
		var tail []string
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			r := parseLimaLine(sc.Text())
			fmt.Fprintln(logf, r)
			if ph := recordPhase(r); ph != "" {
				p.Phase(ph)
			}
			if r.failed() {
				tail = append(tail, r.Msg)
			}
		}
		_, _ = io.Copy(io.Discard, pr)
		last <- strings.Join(tail, "; ")
	}()
	err = cmd.Run()
	pw.Close()
	msg := <-last
	if err != nil {
		if msg == "" {
			msg = err.Error()
		}
		return fmt.Errorf("limactl %s %s: %s (log: %s)", args[0], box, msg, m.LogPath(box))
	}
	return nil
}

// limaMsg extracts msg="…" from a logrus text line.
func limaMsg(line string) string {
	_, after, ok := strings.Cut(line, `msg="`)
	if !ok {
		return line
	}
	if i := strings.LastIndex(after, `"`); i >= 0 {
		after = after[:i]
	}
	return strings.ReplaceAll(after, `\"`, `"`)
}

// GuestUser is the user name Lima gives the box user (the host user's name when it is a valid
// Linux user name, "lima" otherwise); provision writes it into the guest's sudoers and groups.
func GuestUser() string {
	return osutil.LimaUser("1.2.2", false).Username
}
