package vm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/lima-vm/lima/pkg/store"

	"github.com/git-corral/git-corral/internal/lazyre"
)

// Snapshots are qcow2 internal snapshots of a STOPPED box's diffdisk (Lima runs qemu-img
// snapshot then). A running box is refused: with 9p mounts QEMU refuses migration, and Lima then
// logs the error as a warning and exits 0 without a snapshot (REPORT.md, quirk 7); restoring a
// running box leaves ssh and sshfs stale (quirk 8). For a box made from a golden base only the
// box's overlay holds the snapshot: the base is never written.

// AutoSnapshotPrefix starts the names of snapshots taken at session start; only these are
// pruned to snapshots_keep.
const AutoSnapshotPrefix = "auto-"

// MountNote is said wherever a snapshot is taken or restored in mount mode.
const MountNote = "the project directory is mounted from the host and is NOT in the snapshot: undo restores the box's own disk only"

// Snapshot is one snapshot of a box.
type Snapshot struct {
	Name    string    `json:"name"`
	Created time.Time `json:"created"`
	Auto    bool      `json:"auto"`
}

// ErrBoxRunning is returned when a snapshot operation needs a stopped box.
var ErrBoxRunning = errors.New("box is running: snapshots are taken and restored only while it is stopped")

var snapName = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// CheckSnapshotName refuses names qemu-img or a terminal could misread.
func CheckSnapshotName(name string) error {
	if !snapName.MatchString(name) {
		return fmt.Errorf("snapshot name %q: use 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	return nil
}

// stoppedBox returns the box's state, refusing a missing or running box.
func (m *Manager) stoppedBox(box string) (Status, error) {
	st, err := m.Inspect(box)
	if err != nil {
		return st, err
	}
	switch st.Status {
	case "":
		return st, fmt.Errorf("%w: %s", ErrNoBox, box)
	case store.StatusStopped:
		return st, nil
	case store.StatusRunning:
		return st, fmt.Errorf("box %s: %w", box, ErrBoxRunning)
	}
	return st, fmt.Errorf("box %s is %s: %v", box, st.Status, st.Errors)
}

// Snapshots lists the box's snapshots, oldest first, read from its diffdisk with qemu-img info
// (-U: no lock needed, so this also works on a running box).
func (m *Manager) Snapshots(ctx context.Context, box string) ([]Snapshot, error) {
	st, err := m.Inspect(box)
	if err != nil {
		return nil, err
	}
	if !st.Exists() {
		return nil, fmt.Errorf("%w: %s", ErrNoBox, box)
	}
	out, err := exec.CommandContext(ctx, "qemu-img", "info", "-U", "--output=json", filepath.Join(st.Dir, "diffdisk")).Output()
	if err != nil {
		return nil, fmt.Errorf("list snapshots of box %s: qemu-img info: %w", box, err)
	}
	return parseSnapshots(out)
}

// parseSnapshots reads the snapshots from qemu-img info --output=json.
func parseSnapshots(b []byte) ([]Snapshot, error) {
	var info struct {
		Snapshots []struct {
			Name    string `json:"name"`
			DateSec int64  `json:"date-sec"`
		} `json:"snapshots"`
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return nil, fmt.Errorf("read qemu-img info: %w", err)
	}
	var out []Snapshot
	for _, s := range info.Snapshots {
		out = append(out, Snapshot{Name: s.Name, Created: time.Unix(s.DateSec, 0).UTC(), Auto: strings.HasPrefix(s.Name, AutoSnapshotPrefix)})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out, nil
}

// SnapshotCreate takes a snapshot of the stopped box and checks that it exists afterwards
// (limactl can exit 0 without one).
func (m *Manager) SnapshotCreate(ctx context.Context, box, name string) error {
	if err := CheckSnapshotName(name); err != nil {
		return err
	}
	if _, err := m.stoppedBox(box); err != nil {
		return err
	}
	if err := m.run(ctx, box, nil, "snapshot", "create", "--tag", name, box); err != nil {
		return err
	}
	snaps, err := m.Snapshots(ctx, box)
	if err != nil {
		return err
	}
	for _, s := range snaps {
		if s.Name == name {
			return nil
		}
	}
	return fmt.Errorf("snapshot %q of box %s: limactl reported success but the snapshot is not there (log: %s)", name, box, m.LogPath(box))
}

// SnapshotRestore restores the stopped box's disk to snapshot name.
func (m *Manager) SnapshotRestore(ctx context.Context, box, name string) error {
	if err := CheckSnapshotName(name); err != nil {
		return err
	}
	if _, err := m.stoppedBox(box); err != nil {
		return err
	}
	return m.run(ctx, box, nil, "snapshot", "apply", "--tag", name, box)
}

// SnapshotDelete deletes snapshot name of the stopped box.
func (m *Manager) SnapshotDelete(ctx context.Context, box, name string) error {
	if err := CheckSnapshotName(name); err != nil {
		return err
	}
	if _, err := m.stoppedBox(box); err != nil {
		return err
	}
	return m.run(ctx, box, nil, "snapshot", "delete", "--tag", name, box)
}

// AutoSnapshotName names an automatic snapshot taken at t.
func AutoSnapshotName(t time.Time) string {
	return AutoSnapshotPrefix + t.UTC().Format("20060102T150405Z")
}

// PruneAuto deletes the oldest automatic snapshots beyond keep; named ones are kept.
func (m *Manager) PruneAuto(ctx context.Context, box string, keep int) ([]string, error) {
	snaps, err := m.Snapshots(ctx, box)
	if err != nil {
		return nil, err
	}
	var auto []Snapshot
	for _, s := range snaps {
		if s.Auto {
			auto = append(auto, s)
		}
	}
	var gone []string
	for i := 0; i < len(auto)-keep; i++ {
		if err := m.SnapshotDelete(ctx, box, auto[i].Name); err != nil {
			return gone, err
		}
		gone = append(gone, auto[i].Name)
	}
	return gone, nil
}
