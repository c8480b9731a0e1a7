package vm

// This file runs commands in a box over SSH (golang.org/x/crypto/ssh). Rules:
//   - Authentication uses only the key file of the Endpoint (Lima's own key); never ~/.ssh keys,
//     never the SSH agent. The agent is forwarded into a session only when SessionOptions
//     names its socket (agent.go).
//   - The host key is trusted on first use and pinned in Endpoint.HostKeyFile (written
//     atomically); a different key later is refused with ErrHostKeyChanged. No pin file path:
//     no connection.
//   - The command is one string on the wire, each argument single-quoted for a POSIX shell (the
//     guest user's login shell, bash under Lima), so no argument can start a second command.
//   - Environment values travel inside the SSH channel ("env" requests, which the guest sshd must
//     accept with AcceptEnv), never on a command line and never in an error or log. A refused
//     variable fails the session, naming the variable only.
//   - Exit codes: the guest's own status N is returned as (N, ExitStatus(N)); a guest command
//     killed by signal S is 128+S; a timeout is 124 (after TERM, a 2 s grace, then KILL); a
//     session that failed outside the guest command (connection refused or lost, keepalive
//     unanswered, setup refused, context cancelled) is 255, like ssh(1).

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/git-corral/git-corral/internal/lazyre"
	"github.com/git-corral/git-corral/internal/shellquote"
	"io"
	"net"
	"os"
	"os/signal"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/term"

	"github.com/git-corral/git-corral/internal/visible"
)

// SessionOptions says what to run in the box and how.
type SessionOptions struct {
	Argv    []string          // command and arguments; empty: the user's login shell
	Dir     string            // absolute guest directory to cd into first; empty: home
	Env     map[string]string // variables set through the SSH channel (values never logged)
	TTY     bool              // request a PTY; raw mode and resizes when Stdin is a terminal
	Stdin   io.Reader         // nil: the guest command reads EOF (see Run about terminals)
	Stdout  io.Writer         // nil: discarded
	Stderr  io.Writer         // nil: discarded
	Timeout time.Duration     // 0: none; else TERM, grace, KILL and exit code 124
	// AgentSocket, when set, forwards the host's SSH agent listening there into this session
	// (agent.go); "" forwards nothing, whatever SSH_AUTH_SOCK says.
	AgentSocket string
	// InbandGuard, when set, is the shell command that runs the guest's session check in this
	// session before the command (provision.InbandGuardPrefix; inband.go): Run returns an
	// *InbandGuardError when it failed (the command did not run) and ErrNoInbandReport with the
	// guest's exit status when it did not report; in both cases no byte of Stdin was read.
	// Not with TTY.
	InbandGuard string
	// Gate, when set, holds the command in the guest until the gate is opened (gate.go): the
	// session starts at once, the command runs only after Gate.Open, and Run returns
	// ErrGateRefused after Gate.Refuse. Not with TTY, InbandGuard or AgentSocket.
	Gate *Gate
	// Prelude, when its Script is set, runs in the session's own shell after the cd to Dir and
	// before the command (prelude.go).
	Prelude Prelude
}

// ExitStatus is returned as the error of a session whose guest command exited non-zero, so the
// CLI passes it through.
type ExitStatus int

// Error says which status the guest command exited with.
func (e ExitStatus) Error() string { return fmt.Sprintf("guest command exited with status %d", int(e)) }

// GuestStatus returns the status for git corral to exit with.
func (e ExitStatus) GuestStatus() int { return int(e) }

// statusError is an exit status with a better message than ExitStatus's own (a timeout, a
// signal); errors.As finds the ExitStatus through Unwrap.
type statusError struct {
	msg    string
	status ExitStatus
}

func (e *statusError) Error() string    { return fmt.Sprintf("%s (exit status %d)", e.msg, int(e.status)) }
func (e *statusError) Unwrap() error    { return e.status }
func (e *statusError) GuestStatus() int { return int(e.status) }

// Exit codes and errors of sessions that did not end with the guest command's own status.
const (
	ExitTimeout        = 124 // Timeout elapsed; the command was stopped
	ExitSessionFailure = 255 // connection, setup or cancellation failure, as ssh(1) uses
)

var (
	// ErrConnectionLost is wrapped by errors of sessions whose connection broke before the guest
	// command's exit status arrived.
	ErrConnectionLost = errors.New("connection to the box lost")
	// ErrHostKeyChanged is wrapped when the box offers a host key other than the pinned one.
	ErrHostKeyChanged = errors.New("box host key changed")
	// ErrEnvRefused is wrapped when the guest sshd refuses an environment variable.
	ErrEnvRefused = errors.New("guest sshd refused environment variable")
)

// Timing knobs; variables so tests can shorten them.
var (
	dialTimeout       = 10 * time.Second // TCP connect plus SSH handshake
	keepAliveInterval = 15 * time.Second // like ServerAliveInterval
	keepAliveMax      = 3                // like ServerAliveCountMax
	termGrace         = 2 * time.Second  // between TERM and KILL on timeout
)

// Client is one SSH connection to a box; sessions on it may run concurrently.
type Client struct {
	ssh   *ssh.Client
	addr  string
	lost  atomic.Bool // set when keepalive gave up and closed the connection
	done  chan struct{}
	once  sync.Once
	agent agentForward // agent.go
}

// Dial connects to ep, authenticating with ep.IdentityFile only and checking the host key
// against the pin in ep.HostKeyFile (pinning it on first connect).
func Dial(ctx context.Context, ep Endpoint) (*Client, error) {
	addr := net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port))
	if ep.HostKeyFile == "" {
		return nil, fmt.Errorf("connect to box at %s: no host key pin file given", addr)
	}
	signer, err := loadIdentity(ep.IdentityFile)
	if err != nil {
		return nil, err
	}
	pin, err := readHostKeyPin(ep.HostKeyFile)
	if err != nil {
		return nil, err
	}
	var offered ssh.PublicKey
	cfg := &ssh.ClientConfig{
		User: ep.User,
		Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: func(_ string, _ net.Addr, key ssh.PublicKey) error {
			offered = key
			return checkHostKey(ep.HostKeyFile, addr, pin, key)
		},
	}
	if pin != nil {
		cfg.HostKeyAlgorithms = hostKeyAlgorithms(pin.Type())
	}
	sc, err := handshake(ctx, addr, cfg)
	if err != nil {
		return nil, err
	}
	if pin == nil {
		if err := writeHostKeyPin(ep.HostKeyFile, offered); err != nil {
			sc.Close()
			return nil, err
		}
	}
	c := &Client{ssh: sc, addr: addr, done: make(chan struct{})}
	go c.keepalive(keepAliveInterval, keepAliveMax)
	return c, nil
}

// handshake dials addr and runs the SSH handshake, bounded by dialTimeout and ctx.
func handshake(ctx context.Context, addr string, cfg *ssh.ClientConfig) (*ssh.Client, error) {
	d := net.Dialer{Timeout: dialTimeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("connect to box at %s: %w", addr, err)
	}
	_ = conn.SetDeadline(time.Now().Add(dialTimeout))
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	c, chans, reqs, err := ssh.NewClientConn(conn, addr, cfg)
	if !stop() && err == nil { // ctx ended just as the handshake finished: conn is closed
		c.Close()
		return nil, fmt.Errorf("connect to box at %s: %w", addr, ctx.Err())
	}
	if err != nil {
		conn.Close()
		var he *hostKeyError
		if errors.As(err, &he) {
			return nil, he
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("connect to box at %s: %w", addr, ctx.Err())
		}
		return nil, fmt.Errorf("ssh handshake with box at %s: %w", addr, err)
	}
	_ = conn.SetDeadline(time.Time{})
	return ssh.NewClient(c, chans, reqs), nil
}

func loadIdentity(file string) (ssh.Signer, error) {
	if file == "" {
		return nil, errors.New("connect to box: no identity file (Lima's key) given")
	}
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read box identity: %w", err)
	}
	signer, err := ssh.ParsePrivateKey(pem)
	if err != nil {
		return nil, fmt.Errorf("parse box identity %s: %w", file, err)
	}
	return signer, nil
}

// keepalive sends a keepalive request every interval and closes the connection when maxMissed
// replies in a row did not arrive within an interval, so a hung box ends the session.
func (c *Client) keepalive(interval time.Duration, maxMissed int) {
	t := time.NewTicker(interval)
	defer t.Stop()
	missed := 0
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		reply := make(chan error, 1)
		go func() {
			_, _, err := c.ssh.SendRequest("keepalive@openssh.com", true, nil)
			reply <- err
		}()
		select {
		case <-c.done:
			return
		case err := <-reply:
			if err != nil {
				return // connection already closed
			}
			missed = 0
		case <-time.After(interval):
			if missed++; missed >= maxMissed {
				c.lost.Store(true)
				c.ssh.Close()
				return
			}
		}
	}
}

// Alive reports whether the box still answers on the connection: one keepalive request and its
// reply (any reply: OpenSSH answers the unknown request with a failure), within the time given.
func (c *Client) Alive(ctx context.Context, within time.Duration) error {
	reply := make(chan error, 1)
	go func() {
		_, _, err := c.ssh.SendRequest("keepalive@openssh.com", true, nil)
		reply <- err
	}()
	t := time.NewTimer(within)
	defer t.Stop()
	select {
	case err := <-reply:
		if err != nil {
			return c.connErr("check the connection", err)
		}
		return nil
	case <-c.done:
		return c.connErr("check the connection", net.ErrClosed)
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return fmt.Errorf("connection to box at %s: no answer within %v", c.addr, within)
	}
}

// Close closes the connection and every session on it.
func (c *Client) Close() error {
	err := net.ErrClosed
	c.once.Do(func() {
		close(c.done)
		err = c.ssh.Close()
	})
	if c.lost.Load() || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// Output runs argv in the box and returns its stdout and exit status. The guest's status,
// zero or not (128+N when killed by signal N), is data here, not an error: err is set only when
// the command could not run or its status was not received (exit code 255 then), so a caller
// such as the guard check can read a failing command's report. Stderr is discarded.
func (c *Client) Output(ctx context.Context, argv []string) ([]byte, int, error) {
	if len(argv) == 0 {
		return nil, ExitSessionFailure, errors.New("run in box: empty command")
	}
	var stdout bytes.Buffer
	code, err := c.Run(ctx, SessionOptions{Argv: argv, Stdout: &stdout})
	var es ExitStatus
	if errors.As(err, &es) { // without a Timeout, every ExitStatus is the guest's own
		err = nil
	}
	return stdout.Bytes(), code, err
}

// Run runs one session in the box and returns the exit code git corral should exit with; err
// is nil only when that code is 0. While it runs, SIGINT, SIGTERM and SIGHUP sent to git corral
// are forwarded to the guest command instead of ending git corral.
//
// A Stdin that is still open when the guest command ends (a terminal) keeps being read by a
// goroutine until its next read returns, and that input is lost: run at most one session
// with the terminal as Stdin per process, after any Output calls.
func (c *Client) Run(ctx context.Context, opts SessionOptions) (int, error) {
	cmd, err := remoteCommand(opts.Argv, opts.Dir, opts.Prelude)
	if err != nil {
		return ExitSessionFailure, err
	}
	var gate *inbandGate
	if opts.InbandGuard != "" {
		if opts.TTY {
			return ExitSessionFailure, errors.New("run in box: the in-band session check needs a session without a terminal")
		}
		cmd = opts.InbandGuard + " && " + cmd
		gate = newInbandGate(opts.Stderr)
		opts.Stderr = gate
		if opts.Stdin != nil {
			opts.Stdin = gatedStdin{g: gate, r: opts.Stdin}
		}
	}
	if opts.Gate != nil {
		if opts.TTY || opts.InbandGuard != "" || opts.AgentSocket != "" {
			return ExitSessionFailure, errors.New("run in box: a gated session has no terminal, in-band check or agent")
		}
		cmd = GatePrefix + cmd
		opts.Stdin = &gateStdin{g: opts.Gate, r: opts.Stdin}
		opts.Stdout = gateWriter{g: opts.Gate, w: opts.Stdout}
		opts.Stderr = gateWriter{g: opts.Gate, w: opts.Stderr}
	}
	if err := checkEnv(opts.Env); err != nil {
		return ExitSessionFailure, err
	}
	sess, err := c.ssh.NewSession()
	if err != nil {
		return ExitSessionFailure, c.connErr("open session", err)
	}
	defer sess.Close()
	if err := setenv(sess, opts.Env); err != nil {
		return ExitSessionFailure, c.connErr("set guest environment", err)
	}
	if opts.AgentSocket != "" {
		stopAgent, err := c.startAgent(ctx, sess, opts.AgentSocket)
		if err != nil {
			return ExitSessionFailure, c.connErr("forward agent", err)
		}
		defer stopAgent()
	}
	sess.Stdin, sess.Stdout, sess.Stderr = opts.Stdin, opts.Stdout, opts.Stderr
	if opts.TTY {
		restore, err := startTTY(sess, opts)
		if err != nil {
			return ExitSessionFailure, c.connErr("request terminal", err)
		}
		defer restore()
	}
	stopSignals := forwardSignals(sess)
	defer stopSignals()
	if err := sess.Start(cmd); err != nil {
		return ExitSessionFailure, c.connErr("start guest command", err)
	}
	done := make(chan error, 1)
	go func() { done <- sess.Wait() }()
	code, err := c.wait(ctx, sess, done, opts.Timeout, opts.Gate)
	if gate != nil {
		switch gerr := gate.finish(); {
		case gerr == nil || (err != nil && !errors.As(err, new(ExitStatus))):
		case errors.Is(gerr, ErrNoInbandReport):
			return code, gerr // the guest's status says why: see provision.InbandNoCheckExit
		default:
			return ExitSessionFailure, gerr
		}
	}
	return code, err
}

// wait waits for the session to end, the timeout to elapse or ctx to be cancelled.
func (c *Client) wait(ctx context.Context, sess *ssh.Session, done <-chan error, timeout time.Duration, gate *Gate) (int, error) {
	if gate != nil { // the timeout counts from the go-ahead
		select {
		case err := <-done: // ended before the decision: the shell did not wait
			gate.Refuse()
			if _, err := c.exitCode(err); err != nil && !errors.As(err, new(ExitStatus)) {
				return ExitSessionFailure, err
			}
			return ExitSessionFailure, fmt.Errorf("session in box at %s: the guest's shell ended before the command could be let run", c.addr)
		case <-gate.done():
		case <-ctx.Done():
			gate.Refuse()
		}
		if !gate.wait() {
			sess.Close()
			if ctx.Err() != nil {
				return ExitSessionFailure, fmt.Errorf("session in box at %s: %w", c.addr, ctx.Err())
			}
			return ExitSessionFailure, ErrGateRefused
		}
	}
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	select {
	case err := <-done:
		return c.exitCode(err)
	case <-expired:
		terminate(sess, done)
		return ExitTimeout, &statusError{fmt.Sprintf("guest command timed out after %s and was stopped (TERM, then KILL)", timeout), ExitTimeout}
	case <-ctx.Done():
		terminate(sess, done)
		return ExitSessionFailure, fmt.Errorf("session in box at %s: %w", c.addr, ctx.Err())
	}
}

// terminate sends TERM to the guest command's process group, then KILL after termGrace, and
// closes the channel.
func terminate(sess *ssh.Session, done <-chan error) {
	_ = sess.Signal(ssh.SIGTERM)
	select {
	case <-done:
		return
	case <-time.After(termGrace):
	}
	_ = sess.Signal(ssh.SIGKILL)
	select {
	case <-done:
	case <-time.After(termGrace):
	}
	sess.Close()
}

// exitCode maps the result of ssh.Session.Wait to the exit code and error Run returns.
func (c *Client) exitCode(err error) (int, error) {
	var ee *ssh.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ee) && ee.Signal() != "":
		n := ee.ExitStatus()
		if num, ok := signalNumbers[ee.Signal()]; ok {
			n = 128 + num
		}
		return n, &statusError{fmt.Sprintf("guest command killed by signal %s", visible.String(ee.Signal())), ExitStatus(n)}
	case errors.As(err, &ee):
		return ee.ExitStatus(), ExitStatus(ee.ExitStatus())
	default:
		return ExitSessionFailure, c.connErr("wait for guest command", err)
	}
}

// connErr wraps an error of the SSH connection, marking a lost connection as ErrConnectionLost.
func (c *Client) connErr(op string, err error) error {
	var missing *ssh.ExitMissingError
	switch {
	case c.lost.Load():
		return fmt.Errorf("%s in box at %s: %w (no keepalive reply for %s)", op, c.addr, ErrConnectionLost, time.Duration(keepAliveMax)*keepAliveInterval)
	case errors.Is(err, io.EOF), errors.As(err, &missing), errors.Is(err, net.ErrClosed):
		return fmt.Errorf("%s in box at %s: %w", op, c.addr, ErrConnectionLost)
	}
	return fmt.Errorf("%s in box at %s: %w", op, c.addr, err)
}

// signalNumbers are the Linux numbers of the signals RFC 4254 names, for 128+N exit codes.
var signalNumbers = map[string]int{
	"HUP": 1, "INT": 2, "QUIT": 3, "ILL": 4, "ABRT": 6, "FPE": 8, "KILL": 9, "USR1": 10,
	"SEGV": 11, "USR2": 12, "PIPE": 13, "ALRM": 14, "TERM": 15,
}

// forwardSignals forwards SIGINT, SIGTERM and SIGHUP that git corral receives to the guest
// command (OpenSSH delivers them to its process group) until the returned stop is called.
func forwardSignals(sess *ssh.Session) (stop func()) {
	ch := make(chan os.Signal, 4)
	quit := make(chan struct{})
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		for {
			select {
			case <-quit:
				return
			case s := <-ch:
				_ = sess.Signal(sshSignal(s))
			}
		}
	}()
	return func() {
		signal.Stop(ch)
		close(quit)
	}
}

func sshSignal(s os.Signal) ssh.Signal {
	switch s {
	case syscall.SIGINT:
		return ssh.SIGINT
	case syscall.SIGHUP:
		return ssh.SIGHUP
	}
	return ssh.SIGTERM
}

var envName = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*$`)

// checkEnv refuses names that are not shell variable names and values with NUL bytes; errors
// name the variable, never the value.
func checkEnv(env map[string]string) error {
	for k, v := range env {
		if !envName.MatchString(k) {
			return fmt.Errorf("environment variable name %q is not a valid name ([A-Za-z_][A-Za-z0-9_]*)", k)
		}
		if strings.ContainsRune(v, 0) {
			return fmt.Errorf("environment variable %s: value contains a NUL byte", k)
		}
	}
	return nil
}

// setenv sends every variable as an "env" request, in name order, and fails on the first one
// the server refuses.
func setenv(sess *ssh.Session, env map[string]string) error {
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		err := sess.Setenv(k, env[k])
		switch {
		case err == nil:
		case errors.Is(err, io.EOF): // the connection broke; x/crypto's refusal is a plain error
			return fmt.Errorf("set %s: %w", k, err)
		default:
			return fmt.Errorf("%w %s (the guest sshd needs it in AcceptEnv)", ErrEnvRefused, k)
		}
	}
	return nil
}

// remoteCommand builds the one command string sent to the guest: every argument quoted by
// shellQuote, after "cd DIR &&" when dir is set and the prelude's block when it has a script,
// with exec before a command that is not a shell builtin; no argv runs the login shell.
func remoteCommand(argv []string, dir string, pre Prelude) (string, error) {
	for i, a := range argv {
		if strings.ContainsRune(a, 0) {
			return "", fmt.Errorf("run in box: argument %d contains a NUL byte", i)
		}
	}
	var b strings.Builder
	if dir != "" {
		if !path.IsAbs(dir) || strings.ContainsRune(dir, 0) {
			return "", fmt.Errorf("run in box: working directory %q is not an absolute path", dir)
		}
		b.WriteString("cd " + shellQuote(dir) + " && ")
	}
	if pre.Script != "" {
		text, err := pre.text()
		if err != nil {
			return "", err
		}
		b.WriteString(text + " && ")
	}
	if len(argv) == 0 {
		b.WriteString(`exec "$SHELL" -l`)
		return b.String(), nil
	}
	if !shellBuiltins()[argv[0]] {
		// What bash -c does by itself for a lone command, and not after a gate or in-band
		// check, or in a warm shell: the command replaces the session's shell, so signals
		// reach it and its own exit status or signal is the session's.
		b.WriteString("exec ")
	}
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(shellQuote(a))
	}
	return b.String(), nil
}

// shellBuiltins are bash's builtins (compgen -b), which exec cannot run. Built at the first
// session, not at start: every git corral command pays for package initialisers.
var shellBuiltins = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, b := range strings.Fields(". : [ alias bg bind break builtin caller cd command compgen complete compopt " +
		"continue declare dirs disown echo enable eval exec exit export false fc fg getopts hash help history jobs " +
		"kill let local logout mapfile popd printf pushd pwd read readarray readonly return set shift shopt source " +
		"suspend test times trap true type typeset ulimit umask unalias unset wait") {
		m[b] = true
	}
	return m
})

// shellQuote quotes s, which the caller has checked holds no NUL (a path, or a value refused
// with a NUL before it gets here), as one shell word: internal/shellquote, the one quoter.
func shellQuote(s string) string { return shellquote.Path(s) }

// startTTY requests a PTY sized like the local terminal with its TERM, puts a terminal Stdin
// in raw mode and forwards window resizes. The returned restore undoes both; Run defers it so
// every exit path restores the terminal.
func startTTY(sess *ssh.Session, opts SessionOptions) (restore func(), err error) {
	inFd, inTerm := terminalFd(opts.Stdin)
	sizeFd, outTerm := terminalFd(opts.Stdout)
	if !outTerm {
		sizeFd = inFd
		if !inTerm {
			sizeFd = -1
		}
	}
	w, h := 80, 24
	if sizeFd >= 0 {
		if cw, ch, err := term.GetSize(sizeFd); err == nil && cw > 0 && ch > 0 {
			w, h = cw, ch
		}
	}
	modes := ssh.TerminalModes{ssh.ECHO: 1, ssh.TTY_OP_ISPEED: 38400, ssh.TTY_OP_OSPEED: 38400}
	if err := sess.RequestPty(cmp.Or(os.Getenv("TERM"), "xterm-256color"), h, w, modes); err != nil {
		return nil, err
	}
	var state *term.State
	if inTerm {
		if state, err = term.MakeRaw(inFd); err != nil {
			return nil, fmt.Errorf("put terminal in raw mode: %w", err)
		}
	}
	stopResize := forwardResizes(sess, sizeFd, w, h)
	return func() {
		stopResize()
		if state != nil {
			_ = term.Restore(inFd, state)
		}
	}, nil
}

// terminalFd returns the descriptor of a stream that is a terminal.
func terminalFd(v any) (int, bool) {
	f, ok := v.(interface{ Fd() uintptr })
	if !ok {
		return -1, false
	}
	fd := int(f.Fd())
	return fd, term.IsTerminal(fd)
}

// forwardResizes sends a window-change request whenever SIGWINCH reports a new size of fd.
func forwardResizes(sess *ssh.Session, fd, w, h int) (stop func()) {
	if fd < 0 {
		return func() {}
	}
	ch := make(chan os.Signal, 1)
	quit := make(chan struct{})
	signal.Notify(ch, syscall.SIGWINCH)
	go func() {
		for {
			select {
			case <-quit:
				return
			case <-ch:
			}
			nw, nh, err := term.GetSize(fd)
			if err != nil || (nw == w && nh == h) {
				continue
			}
			w, h = nw, nh
			_ = sess.WindowChange(h, w)
		}
	}()
	return func() {
		signal.Stop(ch)
		close(quit)
	}
}
