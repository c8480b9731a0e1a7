package inside

// Init step rules: it runs first inside the sandbox (bubblewrap's child, under the seccomp
// filter, outside the Landlock domain), reads the spec from its pipe, starts the broker relay
// when the run has one, starts the exec step with the command's environment, and waits. It
// is the child subreaper, so orphans of the command stay its descendants. When the command
// ends it writes a Report to the report pipe and exits with the command's status (128+signal
// when a signal ended it), which bubblewrap passes on.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/git-corral/git-corral/internal/inherit"
)

// Stage runs one of the steps inside the sandbox ("init" or "exec") and returns the process's
// exit status. git corral's main runs it for 'git corral sandbox --stage NAME'.
func Stage(name string) int {
	// What bubblewrap passed on beyond the step's own pipes (a descriptor the caller left
	// open) must not reach the next step or the command; the step's own are read here, or
	// handed on explicitly (ExtraFiles).
	if err := inherit.CloseOnExec(3); err != nil {
		return fail("%v", err)
	}
	switch name {
	case "init":
		return initStep()
	case "exec":
		return execStep()
	}
	fmt.Fprintf(os.Stderr, "corral: error: sandbox: unknown stage %q\n", name)
	return SetupFailed
}

// initStep is the init step.
func initStep() int {
	report := os.NewFile(ReportFD, "report")
	if report == nil {
		return fail("no report pipe: the init stage runs only inside 'git corral sandbox'")
	}
	unix.CloseOnExec(ReportFD)
	rep, code := supervise()
	json.NewEncoder(report).Encode(rep)
	report.Close()
	return code
}

// supervise runs the exec step and waits for the command.
func supervise() (Report, int) {
	var spec Spec
	f := os.NewFile(SpecFD, "spec")
	if err := json.NewDecoder(f).Decode(&spec); err != nil {
		return setupReport("read the spec: %v", err)
	}
	f.Close()
	becomeSubreaper()
	env := spec.Env
	if spec.Broker != "" {
		port, err := startRelay(spec.Broker)
		if err != nil {
			return setupReport("%v", err)
		}
		spec.RelayPort = port
		env = append(env, proxyEnv(spec.Secret, port)...)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return setupReport("spec pipe: %v", err)
	}
	cmd := exec.Command(InitPath, "sandbox", "--stage", "exec")
	cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = env, os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{r}
	if spec.Cgroup {
		unix.CloseOnExec(CgroupFD)
		cmd.ExtraFiles = append(cmd.ExtraFiles, os.NewFile(CgroupFD, "cgroup.procs"))
	}
	if err := cmd.Start(); err != nil {
		return setupReport("start the exec step: %v", err)
	}
	r.Close()
	// The exec step needed this step's capabilities and no filter to make its mounts noexec;
	// this step gives up both before the exec step gets its spec (noexec_linux.go).
	if err := fenceInit(spec.Filter); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return setupReport("%v", err)
	}
	json.NewEncoder(w).Encode(spec)
	w.Close()
	var peak atomic.Int64
	stop := make(chan struct{})
	if spec.Limits.Pids > 0 {
		go samplePids(&peak, stop)
	}
	cmd.Wait()
	close(stop)
	rep := ended(cmd.ProcessState)
	rep.PidsPeak = int(peak.Load())
	rep.ScratchFull = scratchFull()
	return rep, rep.Status
}

func setupReport(format string, args ...any) (Report, int) {
	msg := fmt.Sprintf(format, args...)
	fmt.Fprintf(os.Stderr, "corral: error: sandbox: %s\n", msg)
	return Report{Status: SetupFailed, Error: msg}, SetupFailed
}

// ended describes how the exec step (the command, once exec'd) ended.
func ended(ps *os.ProcessState) Report {
	var rep Report
	ws, _ := ps.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		rep.Status, rep.Signal = 128+int(ws.Signal()), unix.SignalName(ws.Signal())
	} else {
		rep.Status = ws.ExitStatus()
	}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		rep.MaxRSS = ru.Maxrss << 10
		rep.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return rep
}

// samplePids records the most processes alive at once in the sandbox's PID namespace.
func samplePids(peak *atomic.Int64, stop chan struct{}) {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		if n := int64(countProcs()); n > peak.Load() {
			peak.Store(n)
		}
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

func countProcs() int {
	d, err := os.Open("/proc")
	if err != nil {
		return 0
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	n := 0
	for _, name := range names {
		if _, err := strconv.Atoi(name); err == nil {
			n++
		}
	}
	return n
}

// scratchFull reports whether /tmp has less than a page left.
func scratchFull() bool {
	var st unix.Statfs_t
	if unix.Statfs("/tmp", &st) != nil {
		return false
	}
	return st.Bavail*uint64(st.Bsize) < 4096
}

// proxyVars are the proxy variables the command gets.
var proxyVars = []string{"http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy"}

// proxyEnv points the usual proxy variables at the relay, with the broker's secret.
func proxyEnv(secret string, port uint16) []string {
	u := "http://sandbox:" + secret + "@127.0.0.1:" + strconv.Itoa(int(port))
	var env []string
	for _, v := range proxyVars {
		env = append(env, v+"="+u)
	}
	return append(env, "no_proxy=", "NO_PROXY=")
}

// startRelay listens on the sandbox's loopback and forwards every connection to the broker's
// socket, which is the only way out of the sandbox's network namespace.
func startRelay(sock string) (uint16, error) {
	lc := net.ListenConfig{}
	lc.SetMultipathTCP(false)
	ln, err := lc.Listen(context.Background(), "tcp4", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("broker relay: listen on the sandbox's loopback: %w", err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go relay(c, sock)
		}
	}()
	return uint16(ln.Addr().(*net.TCPAddr).Port), nil
}

// relay copies one connection both ways to the broker socket.
func relay(c net.Conn, sock string) {
	defer c.Close()
	u, err := net.Dial("unix", sock)
	if err != nil {
		return
	}
	defer u.Close()
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
		done <- struct{}{}
	}
	go cp(u, c)
	go cp(c, u)
	<-done
	<-done
}
