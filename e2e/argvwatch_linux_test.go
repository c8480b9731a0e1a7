package e2e

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// argvShortest is the lifetime of the shortest host process an argvWatch must see: a process
// whose command line could not be read (it had exited) and that lived this long fails the test.
const argvShortest = 50 * time.Millisecond

// argvWatch looks for a secret on the command line of every host process, from before the
// command under test starts until stop: every process already running when it starts or still
// running when it stops, and every process that execs in between, which the kernel announces
// at once through the process events connector (netlink, root only). A scan every so often would
// miss short processes on a loaded machine (a pass over /proc took 100-300 ms here under load);
// the events cannot. The reader runs on a real-time thread where it may, so that a busy machine
// (QEMU under software emulation takes every core) does not make it wait; and whatever the
// wait, a process whose command line it could not read is judged by the kernel's own exit
// event: one that lived argvShortest or longer is a miss, which fails the test. A control
// process that lives argvShortest with a marker on its argv runs first, and stop fails the test
// unless its exec was seen and read, or when the kernel dropped events (the socket's buffer
// overflowed).
type argvWatch struct {
	secret, marker string
	fd             int
	done, quit     chan struct{}
	mu             sync.Mutex
	leaks          map[string]bool
	marked, lost   bool
	execs          int
	worst          time.Duration         // the longest exec-to-read, or pass-to-pass span when polling
	polling        bool                  // no connector: worst decides whether a process could be missed
	todo           chan execEvent        // execs for the reader threads
	reads          sync.WaitGroup        // readExec goroutines
	reading        map[int]time.Duration // pid → exec time of a read not finished yet
	exits          map[int]time.Duration // pid → exit time, seen while its read ran
	sched          string                // the reader thread's scheduling, for the log
	gone           map[int]time.Duration // pid → exec time (monotonic) of a process gone before its read
	missed         []string              // processes gone before their read that lived argvShortest or more
	unread         map[string]string     // a read that found nothing: why, and what the process was
	err            error
	release        func() // lets the other groups' commands run again (parallel_test.go)
}

// Process events connector constants (linux/connector.h, linux/cn_proc.h).
const (
	cnIdxProc          = 1
	cnValProc          = 1
	procCnMcastListen  = 1
	procEventExec      = 2
	procEventExit      = 0x80000000
	nlmsgHdrLen        = 16
	cnMsgLen           = 20
	procEventHeaderLen = 16 // what, cpu, timestamp_ns
)

// watchArgv starts watching for secret and runs the control process.
func watchArgv(t *testing.T, secret string) *argvWatch {
	t.Helper()
	release := suiteGate.exclusive(t)
	w := &argvWatch{release: release, secret: secret, marker: "argv-watch-control-" + randomSecret(t), done: make(chan struct{}),
		quit: make(chan struct{}), leaks: map[string]bool{}, unread: map[string]string{}, gone: map[int]time.Duration{},
		reading: map[int]time.Duration{}, exits: map[int]time.Duration{}, todo: make(chan execEvent, 4096), fd: -1}
	if err := w.listen(); err != nil {
		// Not root: pass after pass over /proc instead, and stop says whether they were fast
		// enough to promise anything.
		t.Logf("argv watch: no process events connector (%v): scanning /proc pass after pass", err)
		w.polling = true
		go w.poll()
	} else {
		go w.run()
	}
	w.pass()
	ctl := exec.Command("sh", "-c", "sleep 0.05", "sh", w.marker)
	if err := ctl.Run(); err != nil {
		t.Fatalf("argv watch control process: %v", err)
	}
	return w
}

// listen subscribes to the kernel's process events.
func (w *argvWatch) listen() error {
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_DGRAM, syscall.NETLINK_CONNECTOR)
	if err != nil {
		return err
	}
	_ = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVBUF, 8<<20)
	tv := syscall.NsecToTimeval(int64(100 * time.Millisecond))
	if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv); err != nil {
		syscall.Close(fd)
		return err
	}
	if err := syscall.Bind(fd, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK, Groups: cnIdxProc}); err != nil {
		syscall.Close(fd)
		return err
	}
	msg := make([]byte, nlmsgHdrLen+cnMsgLen+4)
	le := binary.LittleEndian
	le.PutUint32(msg[0:], uint32(len(msg)))
	le.PutUint16(msg[4:], syscall.NLMSG_DONE)
	le.PutUint32(msg[16:], cnIdxProc)
	le.PutUint32(msg[20:], cnValProc)
	le.PutUint16(msg[32:], 4)
	le.PutUint32(msg[36:], procCnMcastListen)
	if err := syscall.Sendto(fd, msg, 0, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		syscall.Close(fd)
		return err
	}
	w.fd = fd
	return nil
}

// run reads exec events until quit, reading each new process's command line, then closes the
// socket.
func (w *argvWatch) run() {
	defer close(w.done)
	defer syscall.Close(w.fd)
	w.sched = urgent()
	for i := 0; i < argvReaders; i++ {
		go w.reader()
	}
	defer close(w.todo)
	buf := make([]byte, 64<<10)
	for {
		select {
		case <-w.quit:
			return
		default:
		}
		n, _, err := syscall.Recvfrom(w.fd, buf, 0) // wakes every 100 ms (SO_RCVTIMEO)
		switch {
		case errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.ENOBUFS):
			w.mu.Lock()
			w.lost = true
			w.mu.Unlock()
			continue
		case err != nil:
			w.mu.Lock()
			w.err = err
			w.mu.Unlock()
			return
		}
		w.events(buf[:n])
	}
}

// events handles one datagram of netlink messages.
func (w *argvWatch) events(b []byte) {
	le := binary.LittleEndian
	for len(b) >= nlmsgHdrLen {
		l := int(le.Uint32(b))
		if l < nlmsgHdrLen || l > len(b) {
			return
		}
		ev := b[nlmsgHdrLen+cnMsgLen : l]
		if len(ev) < procEventHeaderLen+8 {
			b = b[(l+3)&^3:]
			continue
		}
		// The event's timestamp is the kernel's CLOCK_MONOTONIC at the exec or exit: the time
		// to the read below includes any wait in the socket's queue.
		ts := time.Duration(le.Uint64(ev[8:]))
		pid := int(le.Uint32(ev[procEventHeaderLen:]))
		switch le.Uint32(ev) {
		case procEventExec:
			// Each read on its own goroutine: reading a command line takes the target's
			// memory lock, which a process starting up under load can hold for a while; one
			// such read must not hold up the others queued behind it.
			w.mu.Lock()
			w.reading[pid] = ts
			w.mu.Unlock()
			w.reads.Add(1)
			w.todo <- execEvent{pid, ts}
		case procEventExit:
			w.exited(pid, ts)
		}
		b = b[(l+3)&^3:]
	}
}

// exited judges a process whose command line could not be read, by how long it lived.
func (w *argvWatch) exited(pid int, ts time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.reading[pid]; ok { // its read has not finished: readExec judges it
		w.exits[pid] = ts
		return
	}
	start, ok := w.gone[pid]
	if !ok {
		return
	}
	delete(w.gone, pid)
	w.judge(pid, ts-start)
}

// argvReaders is how many reader threads read command lines at once: one read blocked on a
// starting process's memory lock holds up only its own thread.
const argvReaders = 8

// execEvent is one exec to read.
type execEvent struct {
	pid int
	ts  time.Duration
}

// urgent gives the calling thread (locked to its goroutine) the scheduling that makes it run
// before the boxes' QEMU threads when it wakes, and says which it got. Best effort: the exit
// events judge a late read anyway. SCHED_FIFO is refused in a cgroup without a real-time
// budget (cgroup v1 with RT group scheduling); the highest priority of the normal class is not.
func urgent() string {
	runtime.LockOSThread() // the thread ends with the goroutine: its scheduling class goes with it
	fifo := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: 10}
	if err := unix.SchedSetAttr(0, &fifo, 0); err == nil {
		return "SCHED_FIFO"
	}
	if err := unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), -20); err == nil {
		return "nice -20"
	}
	return "nice 0"
}

// reader reads the command lines of execs from todo until it is closed.
func (w *argvWatch) reader() {
	urgent()
	for ev := range w.todo {
		w.readExec(ev.pid, ev.ts)
	}
}

// readExec reads the command line of a process that exec'd at ts (monotonic); one it could
// not read is judged by its lifetime, now if its exit was seen meanwhile, else at its exit.
func (w *argvWatch) readExec(pid int, ts time.Duration) {
	defer w.reads.Done()
	since := monotonicNow() - ts
	ok := w.check("/proc/"+strconv.Itoa(pid)+"/cmdline", time.Now().Add(-since))
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.reading, pid)
	end, exited := w.exits[pid]
	delete(w.exits, pid)
	switch {
	case ok:
	case exited:
		w.judge(pid, end-ts)
	default:
		w.gone[pid] = ts
	}
}

// judge records a process whose command line was never read as a miss if it lived long
// enough to be seen. The caller holds mu.
func (w *argvWatch) judge(pid int, lived time.Duration) {
	if lived >= argvShortest {
		w.missed = append(w.missed, fmt.Sprintf("pid %d (lived %v; read: %s)", pid, lived, w.unread["/proc/"+strconv.Itoa(pid)+"/cmdline"]))
	}
}

// check reads one process's command line; false when it could not (the process was gone).
func (w *argvWatch) check(p string, at time.Time) bool {
	b, err := os.ReadFile(p)
	// A live process's command line can read empty for a moment (seen under load: a bash in
	// state R, read empty, lived 1.5 s): read it again while it lives and is no zombie, for up
	// to argvRetries × argvRetryGap. What is read then is checked like any other read.
	for i := 0; err == nil && len(b) == 0 && i < argvRetries && !zombie(p); i++ {
		time.Sleep(argvRetryGap)
		b, err = os.ReadFile(p)
	}
	took := time.Since(at)
	why := ""
	if err != nil || len(b) == 0 {
		why = unreadWhy(p, err) // read before the lock: /proc reads of a starting process can wait
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.execs++
	if took > w.worst {
		w.worst = took
	}
	if err != nil || len(b) == 0 {
		// gone, or a zombie (whose command line reads empty); what the process was, for the
		// message should it turn out to have lived long enough to count
		w.unread[p] = why
		return false
	}
	s := string(b)
	if strings.Contains(s, w.marker) {
		w.marked = true
	}
	if strings.Contains(s, w.secret) {
		w.leaks[p+": "+strings.ReplaceAll(s, "\x00", " ")] = true
	}
	return true
}

// argvRetries and argvRetryGap bound check's second reads of an empty command line.
const (
	argvRetries  = 10
	argvRetryGap = 5 * time.Millisecond
)

// zombie reports whether the process of a /proc/PID/cmdline path has exited (state Z or X) or
// is gone.
func zombie(cmdline string) bool {
	b, err := os.ReadFile(strings.TrimSuffix(cmdline, "/cmdline") + "/stat")
	if err != nil {
		return true
	}
	// The state follows the command name in parentheses, which may itself hold ") ".
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		return true
	}
	st := b[i+2]
	return st == 'Z' || st == 'X'
}

// unreadWhy says why a command line read nothing, and what the process was then: its name, state,
// thread count and parent from /proc/PID/status, and its executable.
func unreadWhy(cmdline string, err error) string {
	dir := strings.TrimSuffix(cmdline, "/cmdline")
	why := "empty"
	if err != nil {
		why = err.Error()
	}
	var f []string
	if b, err := os.ReadFile(dir + "/status"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			for _, k := range []string{"Name:", "State:", "Threads:", "PPid:", "NSpid:"} {
				if strings.HasPrefix(l, k) {
					f = append(f, strings.Join(strings.Fields(l), " "))
				}
			}
		}
	}
	if exe, err := os.Readlink(dir + "/exe"); err == nil {
		f = append(f, "exe "+exe)
	}
	return why + "; " + strings.Join(f, ", ")
}

// poll is run without the connector: passes over /proc until quit. A process is seen when it
// is alive at a pass's listing and still alive when read, so the span from one pass's start to
// the end of the next is what a process must outlive; it is recorded as worst.
func (w *argvWatch) poll() {
	defer close(w.done)
	prev := time.Time{}
	for {
		select {
		case <-w.quit:
			return
		default:
		}
		start := time.Now()
		w.pass()
		w.mu.Lock()
		if !prev.IsZero() && time.Since(prev) > w.worst {
			w.worst = time.Since(prev)
		}
		w.mu.Unlock()
		prev = start
	}
}

// pass reads every running process's command line.
func (w *argvWatch) pass() {
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range paths {
		w.check(p, time.Now())
	}
}

// stop ends the watch and returns every host argv that held the secret; it fails the test when
// the watch could have missed one.
func (w *argvWatch) stop(t *testing.T) []string {
	t.Helper()
	defer w.release()
	w.pass()
	close(w.quit)
	<-w.done
	w.reads.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	t.Logf("argv watch: %d command lines read, the slowest %v after its exec; reader %s", w.execs, w.worst, w.sched)
	if !w.marked {
		t.Errorf("the argv watch never saw its control process (alive %v with a marker on its argv): it cannot see a leak either", argvShortest)
	}
	if w.lost || w.err != nil {
		t.Errorf("the argv watch lost process events (overflow %v, error %v): a leak could have been missed", w.lost, w.err)
	}
	if w.polling && w.worst >= argvShortest {
		t.Errorf("the argv watch took %v over two passes of /proc (want under %v): a short process could have been missed", w.worst, argvShortest)
	}
	if len(w.missed) > 0 {
		t.Errorf("the argv watch could not read the command line of %d processes that lived %v or longer: %v", len(w.missed), argvShortest, w.missed)
	}
	var out []string
	for l := range w.leaks {
		out = append(out, l)
	}
	return out
}

// monotonicNow is CLOCK_MONOTONIC, the clock of the process events' timestamps.
func monotonicNow() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
