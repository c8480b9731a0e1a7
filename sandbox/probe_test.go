//go:build linux

package sandbox

// The test binary is also git corral's inside steps (argv "sandbox --stage NAME", as the real
// binary is) and the probe the hostile table runs inside the sandbox (argv "probe KIND ARGS").
// A probe exits 0 when the access worked and 3 when it was refused, printing what happened.

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) {
	if len(os.Args) >= 4 && os.Args[1] == "sandbox" && os.Args[2] == "--stage" {
		os.Exit(Stage(os.Args[3]))
	}
	if len(os.Args) >= 3 && os.Args[1] == "probe" {
		os.Exit(probe(os.Args[2], os.Args[3:]))
	}
	os.Exit(m.Run())
}

// probe runs one access and reports it.
func probe(kind string, args []string) int {
	err := probeErr(kind, args)
	if err != nil {
		fmt.Printf("probe %s: refused: %v\n", kind, err)
		return 3
	}
	fmt.Printf("probe %s: ok\n", kind)
	return 0
}

func probeErr(kind string, args []string) error {
	arg := func(i int) string {
		if i < len(args) {
			return args[i]
		}
		return ""
	}
	switch kind {
	case "read":
		_, err := os.ReadFile(arg(0))
		return err
	case "parent-environ":
		_, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", os.Getppid()))
		return err
	case "copyexec": // copy the program arg0 to arg1 and execute the copy
		data, err := os.ReadFile(arg(0))
		if err != nil {
			return err
		}
		if err := os.WriteFile(arg(1), data, 0o755); err != nil {
			return err
		}
		return exec.Command(arg(1), "probe", "sleep", "0").Run()
	case "write":
		return os.WriteFile(arg(0), []byte("probe\n"), 0o644)
	case "hardlink": // link arg0 to arg1, then write through the link
		if err := os.Link(arg(0), arg(1)); err != nil {
			return err
		}
		return os.WriteFile(arg(1), []byte("probe\n"), 0o644)
	case "exec":
		return exec.Command(arg(0), args[1:]...).Run()
	case "memfd":
		return memfdExec(arg(0))
	case "ptrace-parent":
		return unix.PtraceSeize(os.Getppid())
	case "seccomp-ioctl": // under the sandbox's filter (arg0 "filter") or none, ioctl(/dev/null, arg1)
		if arg(0) == "filter" {
			pol := seccompPolicy()
			if err := seccomp.LoadFilter(seccomp.Filter{NoNewPrivs: true, Flag: seccomp.FilterFlagTSync, Policy: pol}); err != nil {
				return fmt.Errorf("load filter: %w", err)
			}
		}
		req, _ := strconv.ParseUint(arg(1), 0, 64)
		null, err := os.Open("/dev/null")
		if err != nil {
			return err
		}
		c := byte('x')
		_, _, e := unix.Syscall(unix.SYS_IOCTL, null.Fd(), uintptr(req), uintptr(unsafe.Pointer(&c)))
		return e
	case "sandboxed-tiocsti":
		return sandboxedTIOCSTI(arg(0))
	case "tiocsti":
		c := byte('x')
		_, _, e := unix.Syscall(unix.SYS_IOCTL, 0, unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
		if e != 0 {
			return e
		}
		return nil
	case "connect", "udp":
		network := map[string]string{"connect": "tcp", "udp": "udp"}[kind]
		c, err := net.DialTimeout(network, arg(0), time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		if kind == "udp" {
			c.SetDeadline(time.Now().Add(time.Second))
			c.Write([]byte("ping"))
			_, err = c.Read(make([]byte, 16))
		}
		return err
	case "http":
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(arg(0))
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	case "newns": // a new user and mount namespace, where a bind mount would be possible
		cmd := exec.Command("/proc/self/exe", "probe", "sleep", "0")
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWUSER | unix.CLONE_NEWNS,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}}}
		return cmd.Run()
	case "serve": // accept TCP connections on arg0 until killed
		ln, err := net.Listen("tcp4", arg(0))
		if err != nil {
			return err
		}
		fmt.Println("listening")
		for {
			c, err := ln.Accept()
			if err != nil {
				return err
			}
			c.Close()
		}
	case "sleep":
		d, _ := time.ParseDuration(arg(0))
		time.Sleep(d)
		return nil
	case "env":
		if v, ok := os.LookupEnv(arg(0)); ok {
			fmt.Printf("%s=%s\n", arg(0), v)
			return nil
		}
		return fmt.Errorf("%s not set", arg(0))
	}
	if err, ok := loaderProbe(kind, args); ok {
		return err
	}
	return limitProbe(kind, arg(0))
}

// limitProbe runs the resource probes: each tries to use more than its argument allows.
func limitProbe(kind, arg string) error {
	n, _ := strconv.Atoi(arg)
	switch kind {
	case "fork": // start up to n sleeping children
		for i := range n {
			cmd := exec.Command("/proc/self/exe", "probe", "sleep", "5s")
			if err := cmd.Start(); err != nil {
				return fmt.Errorf("child %d: %w", i+1, err)
			}
		}
		return nil
	case "balloon": // touch n MiB
		keep := make([][]byte, 0, n)
		for range n {
			b := make([]byte, 1<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			keep = append(keep, b)
		}
		fmt.Println(len(keep), "MiB touched")
		return nil
	case "fill": // write n MiB to /tmp
		f, err := os.Create("/tmp/fill")
		if err != nil {
			return err
		}
		defer f.Close()
		buf := make([]byte, 1<<20)
		for range n {
			if _, err := f.Write(buf); err != nil {
				return err
			}
		}
		return nil
	case "spin": // use n seconds of CPU
		end := time.Now().Add(time.Duration(n) * time.Second)
		for time.Now().Before(end) {
		}
		return nil
	case "print": // write n KiB to stdout
		line := make([]byte, 1024)
		for i := range line {
			line[i] = 'x'
		}
		for range n {
			os.Stdout.Write(line)
		}
		return nil
	}
	return fmt.Errorf("unknown probe %q", kind)
}

// memfdExec copies the program at path into anonymous memory and executes it from there.
func memfdExec(path string) error {
	fd, err := unix.MemfdCreate("probe", 0)
	if err != nil {
		return fmt.Errorf("memfd_create: %w", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if _, err := unix.Write(fd, data); err != nil {
		return err
	}
	cmd := exec.Command(fmt.Sprintf("/proc/self/fd/%d", fd), "probe", "sleep", "0")
	cmd.ExtraFiles = nil
	return cmd.Run()
}
