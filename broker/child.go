package broker

// A box's broker runs as a detached child of git corral (`git corral broker serve`), started
// with the box and stopped with it, so that it outlives the session that booted the box but not
// the box. Its port is chosen once per box and kept, because the guest's firewall allows exactly
// that port on the gateway; its secret reaches it in a file only the user can read, never argv.
// API routes, whose credentials must not touch the disk either, reach it through an inherited
// pipe (fd 3) that it reads to the end before it listens: nothing is left behind to remove when
// it ends (it is detached, so no parent is there to clean up), and a crash leaves no file. Its
// argv carries only an HMAC of the routes under the proxy secret, so that a session can tell a
// running child with other routes (a rotated key) and restart it.

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ChildOptions describes the broker child of one box.
type ChildOptions struct {
	// Exe is the git-corral binary to run.
	Exe string
	// Box names the box; it selects the egress log.
	Box string
	// Port is the loopback port to listen on.
	Port int
	// Allow is the allow-list from the trusted layers.
	Allow []string
	// SecretFile holds the proxy secret (mode 0600).
	SecretFile string
	// EgressLog is the decision log.
	EgressLog string
	// DiagLog receives the child's own diagnostics (stdout and stderr).
	DiagLog string
	// Env is the child's environment (nil: inherited).
	Env []string
	// APIRoutes are the API broker routes, credentials included; they reach the child through
	// an inherited pipe, never argv or a file.
	APIRoutes []APIRoute
	// RoutesDigest identifies APIRoutes without revealing them (RoutesDigest).
	RoutesDigest string
}

// routesFD is the child's descriptor of the routes pipe (the first of ExtraFiles).
const routesFD = "/dev/fd/3"

// childArgs is the argv of the broker child (without the program name).
func childArgs(o ChildOptions) []string {
	args := []string{"--box", o.Box, "broker", "serve",
		"--listen", "127.0.0.1:" + strconv.Itoa(o.Port),
		"--secret-file", o.SecretFile, "--log", o.EgressLog}
	if len(o.Allow) > 0 {
		args = append(args, "--allow", JoinAllow(o.Allow))
	}
	if len(o.APIRoutes) > 0 {
		args = append(args, "--api-routes", routesFD, "--api-routes-digest", o.RoutesDigest)
	}
	return args
}

// FreePort asks the kernel for a free loopback port.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port for the broker: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// StartChild starts the broker detached (its own session, so a terminal's ^C does not reach it)
// and waits until it accepts connections on its port. It returns the child's PID.
func StartChild(ctx context.Context, o ChildOptions) (int, error) {
	for _, a := range o.Allow {
		if strings.ContainsAny(a, ",\n\r\x00") {
			return 0, fmt.Errorf("start broker: allow-list entry %q holds a comma or control character", a)
		}
	}
	diag, err := os.OpenFile(o.DiagLog, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return 0, fmt.Errorf("start broker: %w", err)
	}
	defer diag.Close()
	cmd := exec.Command(o.Exe, childArgs(o)...)
	cmd.Stdout, cmd.Stderr, cmd.Env = diag, diag, o.Env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := startWithRoutes(cmd, o.APIRoutes); err != nil {
		return 0, fmt.Errorf("start broker: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	addr := "127.0.0.1:" + strconv.Itoa(o.Port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return cmd.Process.Pid, nil
		}
		select {
		case werr := <-exited:
			return 0, fmt.Errorf("broker exited before listening on %s (%v); see %s", addr, werr, o.DiagLog)
		case <-ctx.Done():
			cmd.Process.Kill()
			return 0, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			return 0, fmt.Errorf("broker did not listen on %s within 10s; see %s", addr, o.DiagLog)
		}
	}
}

// startWithRoutes starts cmd, handing it routes on fd 3 when there are any. The write happens
// in the background: the child reads the whole pipe before it listens, so StartChild's wait
// for the port also waits for the routes.
func startWithRoutes(cmd *exec.Cmd, routes []APIRoute) error {
	if len(routes) == 0 {
		return cmd.Start()
	}
	data, err := json.Marshal(routes)
	if err != nil {
		return err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd.ExtraFiles = []*os.File{r}
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return err
	}
	go func() {
		w.Write(data)
		w.Close()
	}()
	return nil
}

// RoutesDigest returns an HMAC-SHA256 of routes under the box's proxy secret: safe on argv,
// where other local users can read it, and different whenever a route or credential changes.
func RoutesDigest(secret []byte, routes []APIRoute) string {
	if len(routes) == 0 {
		return ""
	}
	data, _ := json.Marshal(routes)
	m := hmac.New(sha256.New, secret)
	m.Write(data)
	return hex.EncodeToString(m.Sum(nil))[:32]
}

// ChildRoutesDigest returns the --api-routes-digest a running broker child was started with
// ("" when it has no routes or is not running).
func ChildRoutesDigest(pid int) string { return childFlag(pid, "--api-routes-digest") }

// ChildAllow returns the allow-list a running broker child was started with, as StartChild
// passes it (the entries joined by commas; "" when it has none or is not running).
func ChildAllow(pid int) string { return childFlag(pid, "--allow") }

// JoinAllow is the allow-list as StartChild passes it, for comparing with ChildAllow.
func JoinAllow(allow []string) string { return strings.Join(allow, ",") }

// childFlag returns the value of flag on a running broker child's command line.
func childFlag(pid int, flag string) string {
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return ""
	}
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag {
			return args[i+1]
		}
	}
	return ""
}

// ChildRunning reports whether pid is a live broker of box: the PID alone is not trusted,
// because it may have been reused by an unrelated process.
func ChildRunning(pid int, box string) bool {
	if pid <= 0 {
		return false
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	return isBrokerArgv(args, box)
}

func isBrokerArgv(args []string, box string) bool {
	var sawBox, sawServe bool
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--box" && args[i+1] == box {
			sawBox = true
		}
		if args[i] == "broker" && args[i+1] == "serve" {
			sawServe = true
		}
	}
	return sawBox && sawServe
}

// StopChild ends a box's broker: TERM, then KILL after a grace period.
func StopChild(pid int, box string) error {
	if !ChildRunning(pid, box) {
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop broker %d: %w", pid, err)
	}
	for i := 0; i < 40 && ChildRunning(pid, box); i++ {
		time.Sleep(50 * time.Millisecond)
	}
	if ChildRunning(pid, box) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	return nil
}
