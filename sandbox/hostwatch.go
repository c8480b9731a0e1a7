package sandbox

// Host watch rules: on the direct path no init step inside gathers the evidence that names
// the pids and memory limits, so the host gathers it. bubblewrap writes the PID of its child
// (the sandbox's PID 1) on the info pipe; the host opens that process's view of the sandbox's
// own /proc once bubblewrap has mounted it, and only a /proc whose PID 1 is in the sandbox's
// PID namespace (as bubblewrap names it), so that neither the host's /proc nor a PID reused
// after the run can make it count other processes. Every 5 ms it counts the sandbox's processes and keeps the peak, and every 10 ms
// reads the peak resident size (VmHWM) of up to 32 of them and keeps the largest. Nothing it reads is
// trusted beyond a number: the evidence only names a limit for a run that failed.

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// hostWatch is the evidence gathered from the host on the direct path.
type hostWatch struct {
	pidsPeak atomic.Int64
	maxRSS   atomic.Int64
	done     chan struct{}
	stopped  chan struct{}
}

// watchSandbox reads bubblewrap's info from info and samples the sandbox until stop.
func watchSandbox(info io.ReadCloser) *hostWatch {
	w := &hostWatch{done: make(chan struct{}), stopped: make(chan struct{})}
	go func() {
		defer close(w.stopped)
		defer info.Close()
		var bw struct {
			Pid   int    `json:"child-pid"`
			PidNS uint64 `json:"pid-namespace"`
		}
		if json.NewDecoder(info).Decode(&bw) != nil || bw.Pid <= 0 || bw.PidNS == 0 {
			return
		}
		procs := w.sandboxProc(bw.Pid, bw.PidNS)
		if procs == nil {
			return
		}
		defer procs.Close()
		w.sample(procs)
	}()
	return w
}

// sandboxProc opens the sandbox's own /proc through the process pid, once bubblewrap has
// mounted it there (bubblewrap names its child before the child has built its mounts): the
// /proc whose PID 1 is in the namespace pidNS. It tries every 5 ms until the run ends.
func (w *hostWatch) sandboxProc(pid int, pidNS uint64) *os.File {
	want := "pid:[" + strconv.FormatUint(pidNS, 10) + "]"
	for {
		// Not at once: bubblewrap takes longer than this to mount it, and a short run (a 'true')
		// is over before the first look.
		select {
		case <-w.done:
			return nil
		case <-time.After(5 * time.Millisecond):
		}
		// Until then the root is the host's, or has no /proc yet.
		if procs, err := os.Open("/proc/" + strconv.Itoa(pid) + "/root/proc"); err == nil {
			if ns, err := readlinkAt(procs, "1/ns/pid"); err == nil && ns == want {
				return procs
			}
			procs.Close()
		}
	}
}

// sample counts the processes in procs every 5 ms, and reads their peak sizes every 10 ms.
func (w *hostWatch) sample(procs *os.File) {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for tick := 0; ; tick++ {
		if _, err := procs.Seek(0, io.SeekStart); err != nil {
			return
		}
		names, _ := procs.Readdirnames(-1)
		n, rss := int64(0), int64(0)
		for _, name := range names {
			if _, err := strconv.Atoi(name); err != nil {
				continue
			}
			if n++; tick%2 == 0 && n <= 32 {
				rss = max(rss, peakResident(procs, name))
			}
		}
		if n > w.pidsPeak.Load() {
			w.pidsPeak.Store(n)
		}
		if rss > w.maxRSS.Load() {
			w.maxRSS.Store(rss)
		}
		select {
		case <-w.done:
			return
		case <-t.C:
		}
	}
}

// stop ends the sampling and returns the evidence.
func (w *hostWatch) stop() (pidsPeak int, maxRSS int64) {
	close(w.done)
	<-w.stopped
	return int(w.pidsPeak.Load()), w.maxRSS.Load()
}

// peakResident reads the peak resident size (VmHWM) of process name from its status under
// procs: the peak, so that a sample taken after a balloon stopped growing still sees it.
func peakResident(procs *os.File, name string) int64 {
	fd, err := unix.Openat(int(procs.Fd()), name+"/status", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0
	}
	defer unix.Close(fd)
	var b [4096]byte
	n, err := unix.Read(fd, b[:])
	if err != nil {
		return 0
	}
	i := bytes.Index(b[:n], []byte("\nVmHWM:"))
	if i < 0 {
		return 0
	}
	var kb int64
	for _, c := range b[i+len("\nVmHWM:") : n] {
		switch {
		case c >= '0' && c <= '9':
			kb = kb*10 + int64(c-'0')
		case c != ' ' && c != '\t':
			return kb << 10
		}
	}
	return 0
}

func readlinkAt(dir *os.File, name string) (string, error) {
	b := make([]byte, 64)
	n, err := unix.Readlinkat(int(dir.Fd()), name, b)
	if err != nil {
		return "", err
	}
	return string(b[:n]), nil
}
