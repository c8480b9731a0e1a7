package sandbox

// Pids rules: RLIMIT_NPROC holds for an unprivileged user (it counts the tasks of the user in
// the sandbox's own user namespace), but the kernel never applies it to the host's root, whose
// sandbox runs as root mapped to root. So when root runs a sandbox with limits.pids, the limit
// is a cgroup v1 pids controller made for the run: the exec step moves itself into it (through
// a descriptor of its cgroup.procs handed down the pipes) before it execs the command, and the
// controller's "max" event count tells the host that the limit was reached. Without the
// controller, root's run with limits.pids is refused.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// pidsRoot is the cgroup v1 pids hierarchy.
var pidsRoot = "/sys/fs/cgroup/pids"

var cgroupSeq atomic.Int64

// pidsCgroup is one run's pids cgroup.
type pidsCgroup struct {
	dir   string
	procs *os.File
}

// needPidsCgroup reports whether this run's pids limit needs a cgroup.
func needPidsCgroup(l Limits) bool { return l.Pids > 0 && os.Geteuid() == 0 }

// pidsController reports whether the host has the cgroup v1 pids controller.
func pidsController() bool {
	_, err := os.Stat(filepath.Join(pidsRoot, "cgroup.procs"))
	return err == nil
}

// joinWeaker adds why to the log line's list of what was accepted weaker.
func joinWeaker(weaker, why string) string {
	if weaker == "" {
		return why
	}
	return weaker + "; " + why
}

// newPidsCgroup makes a pids cgroup capped at max tasks.
func newPidsCgroup(max int) (*pidsCgroup, error) {
	if _, err := os.Stat(filepath.Join(pidsRoot, "cgroup.procs")); err != nil {
		return nil, errors.New("limits.pids: as root it needs the cgroup v1 pids controller at " + pidsRoot + " (root is exempt from RLIMIT_NPROC); run as an unprivileged user, or drop limits.pids")
	}
	dir := filepath.Join(pidsRoot, fmt.Sprintf("corral-sandbox-%d-%d", os.Getpid(), cgroupSeq.Add(1)))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("limits.pids: create cgroup %s: %w", dir, err)
	}
	c := &pidsCgroup{dir: dir}
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(max)), 0); err != nil {
		c.remove()
		return nil, fmt.Errorf("limits.pids: set %s/pids.max: %w", dir, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "cgroup.procs"), os.O_WRONLY, 0)
	if err != nil {
		c.remove()
		return nil, fmt.Errorf("limits.pids: open %s/cgroup.procs: %w", dir, err)
	}
	c.procs = f
	return c, nil
}

// hit reports whether a fork was refused because the cgroup was full.
func (c *pidsCgroup) hit() bool {
	b, err := os.ReadFile(filepath.Join(c.dir, "pids.events"))
	if err != nil {
		return false
	}
	n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(b)), "max")))
	return n > 0
}

// remove deletes the cgroup once its tasks are gone (bubblewrap's end kills them).
func (c *pidsCgroup) remove() {
	if c.procs != nil {
		c.procs.Close()
	}
	for range 50 {
		if err := os.Remove(c.dir); err == nil || os.IsNotExist(err) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
