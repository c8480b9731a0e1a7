// Package sshtest runs a real OpenSSH sshd on loopback for tests of SSH clients: a temporary
// host key, a temporary test user that logs in with a generated key, and sshd's log captured.
// It needs root (sshd switches to the user) and /usr/sbin/sshd; tests skip otherwise.
//
// It does not fake SSH: every session in a test goes through the sshd the guest also runs.
package sshtest

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// SSHD is the sshd binary the tests run.
const SSHD = "/usr/sbin/sshd"

// Options configure a Server.
type Options struct {
	AcceptEnv string // sshd AcceptEnv patterns; default "CORRAL_* LANG"
	LogLevel  string // default "VERBOSE"
	Port      int    // 0: a free port
	User      string // "" creates a fresh test user
	HostKey   []byte // PEM private host key; nil: a fresh ed25519 key
	ClientKey []byte // PEM private client key; nil: a fresh ed25519 key
	// ForceCommand, when set, runs instead of the client's command (which it finds in
	// $SSH_ORIGINAL_COMMAND): tests use it to see the exact command string on the wire.
	// sshd then refuses signal requests for the session.
	ForceCommand string
	MaxSessions  int // sshd MaxSessions; 0: sshd's default (10)
	// Extra is appended to sshd_config as it is, after every line above: a rendered
	// configuration under test (a Match block must come last).
	Extra string
}

// Server is a running sshd.
type Server struct {
	Host     string
	Port     int
	User     string
	KeyFile  string // the client's private key (PEM, 0600)
	HostKey  ssh.PublicKey
	Dir      string // sshd_config, keys, authorized_keys (mode 0755 so the user can read)
	Opts     Options
	PID      int
	cmd      *exec.Cmd
	log      *syncBuffer
	waitDone chan struct{}
	stopOnce sync.Once
}

// Skip skips t unless sshd tests can run here.
func Skip(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: sshd must switch to the test user (CI runs as root)")
	}
	if _, err := os.Stat(SSHD); err != nil {
		t.Skipf("needs %s (package openssh-server): %v", SSHD, err)
	}
}

// Start runs sshd with opts and stops it (and deletes the user it created) when t ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	Skip(t)
	if opts.AcceptEnv == "" {
		opts.AcceptEnv = "CORRAL_* LANG"
	}
	if opts.LogLevel == "" {
		opts.LogLevel = "VERBOSE"
	}
	if opts.HostKey == nil {
		opts.HostKey = NewKeyPEM(t)
	}
	if opts.ClientKey == nil {
		opts.ClientKey = NewKeyPEM(t)
	}
	if opts.User == "" {
		opts.User = NewUser(t)
	}
	s := &Server{Host: "127.0.0.1", User: opts.User, Opts: opts}
	s.Dir = tempDir(t)
	s.KeyFile = filepath.Join(s.Dir, "client_key")
	write(t, s.KeyFile, opts.ClientKey, 0o600)
	s.HostKey = publicKey(t, opts.HostKey)
	write(t, filepath.Join(s.Dir, "host_key"), opts.HostKey, 0o600)
	auth := ssh.MarshalAuthorizedKey(publicKey(t, opts.ClientKey))
	write(t, filepath.Join(s.Dir, "authorized_keys"), auth, 0o644)
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil { // sshd's privilege separation dir
		t.Fatal(err)
	}
	var err error
	for try := 0; try < 5; try++ {
		if err = s.start(t, opts.Port); err == nil {
			t.Cleanup(s.Stop)
			return s
		}
		if opts.Port != 0 {
			break
		}
	}
	t.Fatalf("start sshd: %v", err)
	return nil
}

func (s *Server) start(t testing.TB, port int) error {
	if port == 0 {
		port = freePort(t)
	}
	s.Port = port
	cfg := s.config()
	cfgFile := filepath.Join(s.Dir, "sshd_config")
	write(t, cfgFile, []byte(cfg), 0o644)
	s.log = &syncBuffer{}
	s.cmd = exec.Command(SSHD, "-D", "-e", "-f", cfgFile)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	// A session's command can outlive sshd and hold its output pipe: Wait (and so Stop, in a
	// failed test's cleanup) gives up on the pipe after this long instead of waiting for it.
	s.cmd.WaitDelay = 5 * time.Second
	if err := s.cmd.Start(); err != nil {
		return err
	}
	s.PID = s.cmd.Process.Pid
	s.waitDone = make(chan struct{})
	go func() { s.cmd.Wait(); close(s.waitDone) }()
	s.stopOnce = sync.Once{}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.waitDone:
			return fmt.Errorf("sshd exited: %s", s.Log())
		default:
		}
		if banner(s.Addr()) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.Stop()
	return fmt.Errorf("sshd did not answer on %s: %s", s.Addr(), s.Log())
}

func (s *Server) config() string {
	return strings.Join([]string{
		"ListenAddress " + s.Addr(),
		"HostKey " + filepath.Join(s.Dir, "host_key"),
		"AuthorizedKeysFile " + filepath.Join(s.Dir, "authorized_keys"),
		"PidFile none",
		"UsePAM no",
		"StrictModes no",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"PubkeyAuthentication yes",
		"PermitRootLogin no",
		"AllowUsers " + s.User,
		"AcceptEnv " + s.Opts.AcceptEnv,
		"LogLevel " + s.Opts.LogLevel,
		"PrintMotd no",
		"PrintLastLog no",
		forceCommand(s.Opts.ForceCommand),
		maxSessions(s.Opts.MaxSessions),
		s.Opts.Extra,
	}, "\n") + "\n"
}

func maxSessions(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("MaxSessions %d", n)
}

func forceCommand(c string) string {
	if c == "" {
		return ""
	}
	return "ForceCommand " + c
}

// Addr is host:port.
func (s *Server) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

// Log returns what sshd logged so far.
func (s *Server) Log() string { return s.log.String() }

// Stop stops sshd by its PID and waits for it.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.waitDone:
		case <-time.After(5 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.waitDone
		}
	})
}

// Restart stops sshd and starts it again on the same port with hostKey (PEM).
func (s *Server) Restart(t testing.TB, hostKey []byte) {
	t.Helper()
	s.Stop()
	s.Opts.HostKey = hostKey
	s.HostKey = publicKey(t, hostKey)
	write(t, filepath.Join(s.Dir, "host_key"), hostKey, 0o600)
	var err error
	for try := 0; try < 20; try++ {
		if err = s.start(t, s.Port); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("restart sshd: %v", err)
}

// ConnectionPIDs returns the PIDs of the per-connection sshd processes (children of the
// listener and their children), excluding the sessions' own commands.
func (s *Server) ConnectionPIDs() []int {
	var out []int
	parents := map[int]bool{s.PID: true}
	for changed := true; changed; {
		changed = false
		for pid, p := range processes() {
			if parents[p.ppid] && !parents[pid] && strings.HasPrefix(p.comm, "sshd") {
				parents[pid] = true
				out = append(out, pid)
				changed = true
			}
		}
	}
	return out
}

type proc struct {
	ppid int
	comm string
}

// processes reads pid → (ppid, comm) from /proc.
func processes() map[int]proc {
	ents, _ := os.ReadDir("/proc")
	m := map[int]proc{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		i, j := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if i < 0 || j < i {
			continue
		}
		f := strings.Fields(string(b[j+1:]))
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		m[pid] = proc{ppid: ppid, comm: string(b[i+1 : j])}
	}
	return m
}

// NewUser creates a test user with a home and bash, not locked (sshd without PAM refuses
// locked accounts), and deletes it when t ends.
func NewUser(t testing.TB) string {
	t.Helper()
	b := make([]byte, 4)
	rand.Read(b)
	name := "crlt" + hex.EncodeToString(b)
	var out []byte
	var err error
	for try := 0; try < 5; try++ { // useradd fails while another process holds /etc/passwd's lock
		if out, err = exec.Command("useradd", "-m", "-s", "/bin/bash", "-p", "*", name).CombinedOutput(); err == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("useradd %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() {
		// Processes left by a failed test would make userdel fail; kill this user's, by PID.
		for _, pid := range UserPIDs(name) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
		if out, err := exec.Command("userdel", "-r", name).CombinedOutput(); err != nil {
			t.Logf("userdel %s: %v: %s", name, err, out)
		}
	})
	return name
}

// UserPIDs returns the PIDs of processes whose real uid is the user's.
func UserPIDs(name string) []int {
	u, err := user.Lookup(name)
	if err != nil {
		return nil
	}
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" && f[1] == u.Uid {
				out = append(out, pid)
			}
		}
	}
	return out
}

// NewKeyPEM returns a fresh ed25519 private key in OpenSSH PEM form.
func NewKeyPEM(t testing.TB) []byte {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	blk, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(blk)
}

func publicKey(t testing.TB, pemKey []byte) ssh.PublicKey {
	t.Helper()
	s, err := ssh.ParsePrivateKey(pemKey)
	if err != nil {
		t.Fatal(err)
	}
	return s.PublicKey()
}

// tempDir is a directory the test user can traverse (t.TempDir is 0700 under root).
func tempDir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("", "corral-sshtest-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func write(t testing.TB, p string, data []byte, perm os.FileMode) {
	t.Helper()
	if err := os.WriteFile(p, data, perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, perm); err != nil {
		t.Fatal(err)
	}
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// banner reports whether addr answers with an SSH identification string.
func banner(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	b := make([]byte, 4)
	n, _ := c.Read(b)
	return string(b[:n]) == "SSH-"
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Answer listens on network/addr (e.g. "tcp", "127.0.0.1:0", or a unix socket path) and answers
// every connection with name, then closes it: the far end of a forward, counted by what the
// client reads. It is closed when the test ends.
func Answer(t testing.TB, network, addr, name string) net.Listener {
	t.Helper()
	l, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, name)
			c.Close()
		}
	}()
	return l
}
