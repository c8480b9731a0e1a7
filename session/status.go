package session

// Status reads what the host knows about one box, for `git corral status`. Its rules:
//   - Host-side state only: the box's metadata, Lima's store (files, no limactl process), the
//     audit log, the egress log and the marker files of sessions and connection holders. It
//     never boots the box, never connects to it, never starts a process and creates no file.
//   - A missing piece is a fact to report, not an error: no box, no metadata, no limactl, no
//     logs. Only an unreadable file the box owns (its metadata, its logs) fails the call.
//   - Names only: the report carries destinations, reasons and times, never a request's path,
//     a variable's value or the broker secret.
//   - Every list is non-nil, so that JSON shows [] rather than null.

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lima-vm/lima/pkg/store"

	"github.com/git-corral/git-corral/audit"
	"github.com/git-corral/git-corral/broker"
	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/vm"
)

// StatusDenials is how many of the box's newest egress denials a status report shows.
const StatusDenials = 5

// StatusReport is what the host knows about one box, read without booting or connecting to it.
type StatusReport struct {
	Box string `json:"box"`
	// Dir is the checkout (or clone directory) the report was asked for.
	Dir string `json:"dir"`
	// Exists is true when the box has a Lima instance; Running when Lima calls it Running.
	Exists  bool `json:"exists"`
	Running bool `json:"running"`
	// State is Lima's word for the instance (Running, Stopped, Broken…), "" without one.
	State string `json:"state"`
	// Limactl is false when no limactl was found: the state is then read from the instance's
	// files alone (lima.yaml present, host agent PID alive).
	Limactl bool `json:"limactl"`
	// Network is the mode fixed when the box was created; "" without metadata.
	Network string `json:"network"`
	// Golden is the key of the golden base the box's disk is an overlay of; "" from scratch.
	Golden  string      `json:"golden"`
	Created *time.Time  `json:"created"`
	Broker  BrokerState `json:"broker"`
	// LastGuard is the newest guard check outcome in the audit log; nil when none is recorded.
	LastGuard *GuardOutcome `json:"lastGuard"`
	Sessions  SessionState  `json:"sessions"`
	// ForwardedPorts are the host ports (on 127.0.0.1) of the `ports` entries the box was
	// created with; every other guest port is ignored by its template.
	ForwardedPorts []int     `json:"forwardedPorts"`
	Disk           DiskUsage `json:"disk"`
	// Denials are the newest egress denials, newest first, at most StatusDenials.
	Denials []Denial `json:"denials"`
	// Problems are what kept a fact from being read (Lima's own errors, a bad metadata file).
	Problems []string `json:"problems"`
	// Hint is the next command when the box does not exist or does not run.
	Hint string `json:"hint,omitempty"`
}

// BrokerState is the box's egress broker as its metadata records it.
type BrokerState struct {
	// Port is the broker's loopback port, fixed at creation; 0 outside broker mode.
	Port int `json:"port"`
	// PID is the broker child last started; Running is true only when that PID is still a
	// broker of this box (a reused PID is not).
	PID     int  `json:"pid"`
	Running bool `json:"running"`
}

// GuardOutcome is the newest guard check the audit log records for the box: a launch record
// (the guards passed and the command ran) or a guard-failure record (the session was refused).
type GuardOutcome struct {
	Passed bool      `json:"passed"`
	Event  string    `json:"event"`
	Time   time.Time `json:"time"`
	Detail string    `json:"detail,omitempty"`
}

// SessionState is what the marker files say about the box's sessions.
type SessionState struct {
	// Open is true while a session process holds the box's session marker.
	Open bool `json:"open"`
	// LastActive is when a session was last alive (the marker's mtime); nil without a marker.
	LastActive *time.Time `json:"lastActive"`
	// ConnectionHolder is true while a connection holder holds its lock under run/<box>.
	ConnectionHolder bool `json:"connectionHolder"`
}

// DiskUsage is the space the box's Lima instance takes on the host, in allocated bytes.
type DiskUsage struct {
	// InstanceBytes is every file under the instance directory; DiffDiskBytes the box's own
	// disk (an overlay of its base), which is most of it.
	InstanceBytes int64 `json:"instanceBytes"`
	DiffDiskBytes int64 `json:"diffDiskBytes"`
}

// Denial is one refused connection attempt, names only.
type Denial struct {
	Time   time.Time `json:"time"`
	Host   string    `json:"host"`
	Port   int       `json:"port"`
	Reason string    `json:"reason"`
}

// Status reports box (the box of the checkout at dir) from host-side state only. m is nil when
// limactl is missing; the report then says so and still holds what the files show.
func Status(ctx context.Context, h home.Home, m *vm.Manager, box, dir string) (StatusReport, error) {
	r := StatusReport{Box: box, Dir: dir, Limactl: m != nil, ForwardedPorts: []int{}, Denials: []Denial{}, Problems: []string{}}
	if err := ctx.Err(); err != nil {
		return r, err
	}
	r.limaState(h, m)
	if err := r.readMeta(h); err != nil {
		return r, err
	}
	if err := r.readGuard(h); err != nil {
		return r, err
	}
	r.Sessions = sessionState(h, box)
	r.Disk = diskUsage(filepath.Join(h.LimaHome(), box))
	denials, err := lastDenials(h.EgressLog(box), StatusDenials)
	if err != nil {
		return r, err
	}
	r.Denials = denials
	switch {
	case !r.Exists:
		r.Hint = "'git corral start' creates the box and boots it"
	case !r.Running:
		r.Hint = "'git corral start' boots the box"
	}
	return r, nil
}

// limaState fills Exists, Running and State from Lima's store, or from the instance's files
// when there is no manager.
func (r *StatusReport) limaState(h home.Home, m *vm.Manager) {
	if m == nil {
		dir := filepath.Join(h.LimaHome(), r.Box)
		if _, err := os.Lstat(filepath.Join(dir, "lima.yaml")); err == nil {
			r.Exists = true
			r.Running = pidAlive(filepath.Join(dir, "ha.pid"))
		}
		return
	}
	st, err := m.Inspect(r.Box)
	if err != nil {
		r.Problems = append(r.Problems, err.Error())
		return
	}
	r.Exists, r.State, r.Running = st.Exists(), st.Status, st.Status == store.StatusRunning
	r.Problems = append(r.Problems, st.Errors...)
}

// readMeta fills what the box's metadata records. A missing file is no box yet; a file that
// does not parse is reported as a problem, not fatal, so the rest of the report still shows.
func (r *StatusReport) readMeta(h home.Home) error {
	meta, err := (&vm.Manager{Home: h}).ReadMeta(r.Box)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return err
		}
		r.Problems = append(r.Problems, err.Error())
		return nil
	}
	r.Network, r.Golden = meta.Network, meta.Golden
	if !meta.Created.IsZero() {
		c := meta.Created
		r.Created = &c
	}
	r.Broker = BrokerState{Port: meta.BrokerPort, PID: meta.BrokerPID, Running: broker.ChildRunning(meta.BrokerPID, r.Box)}
	if ps, err := policy.ParsePorts(meta.Ports); err == nil {
		for _, p := range ps {
			r.ForwardedPorts = append(r.ForwardedPorts, p.Host)
		}
	}
	return nil
}

// readGuard finds the newest launch or guard-failure record of the box in the audit log.
func (r *StatusReport) readGuard(h home.Home) error {
	res, err := audit.Read(h.SessionsLog(), audit.Filter{Box: r.Box})
	if err != nil {
		return err
	}
	for i := len(res.Records) - 1; i >= 0; i-- {
		rec := res.Records[i]
		if rec.Event == audit.EventLaunch || rec.Event == audit.EventGuardFailure {
			r.LastGuard = &GuardOutcome{Passed: rec.Event == audit.EventLaunch, Event: string(rec.Event), Time: rec.Time, Detail: rec.Detail}
			return nil
		}
	}
	return nil
}

// sessionState reads the session marker and the connection holder's lock. A session holds a
// shared lock on its marker and a holder an exclusive one on its lock for their whole lives, so
// a lock that cannot be taken at once means one is alive. The probe never creates either file.
func sessionState(h home.Home, box string) SessionState {
	var s SessionState
	mark := h.BoxSessionMark(box)
	if fi, err := os.Lstat(mark); err == nil && fi.Mode().IsRegular() {
		t := fi.ModTime()
		s.LastActive = &t
		s.Open = locked(mark)
	}
	s.ConnectionHolder = locked(vm.HolderPaths(h, box).Lock())
	return s
}

// locked reports whether another process holds a lock on path: an exclusive lock cannot be
// taken without waiting. A missing file or a symlink is not locked.
func locked(path string) bool {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return errors.Is(err, syscall.EWOULDBLOCK)
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

// pidAlive reports whether the PID file at path names a live process.
func pidAlive(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return false
	}
	err = syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// diskUsage adds up the blocks allocated to the files under dir (like du: a sparse disk counts
// what it uses, not its size), without following symlinks. A missing dir uses nothing.
func diskUsage(dir string) DiskUsage {
	var d DiskUsage
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return nil
		}
		fi, err := e.Info()
		if err != nil {
			return nil
		}
		n := fi.Size()
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			n = int64(st.Blocks) * 512
		}
		d.InstanceBytes += n
		if p == filepath.Join(dir, "diffdisk") {
			d.DiffDiskBytes = n
		}
		return nil
	})
	return d
}

// lastDenials returns the newest n denials of the egress log at path, newest first, with the
// destination and the reason only.
func lastDenials(path string, n int) ([]Denial, error) {
	entries, _, err := broker.ReadLog(path)
	if err != nil {
		return nil, err
	}
	out := []Denial{}
	for i := len(entries) - 1; i >= 0 && len(out) < n; i-- {
		if e := entries[i]; e.Decision == broker.Deny {
			out = append(out, Denial{Time: e.Time, Host: e.Host, Port: e.Port, Reason: e.Reason})
		}
	}
	return out, nil
}
