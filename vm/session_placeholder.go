package vm

// This file is a stand-in for the SSH session client (vm/session.go + vm/sshconfig.go, written on
// branch vm-session over golang.org/x/crypto/ssh). It implements the same API with the ssh
// binary so the lifecycle branch builds and its end-to-end suite runs before that merge. The lead
// deletes this file when merging vm-session. Environment values never go on a command line: they
// travel on ssh's stdin into a 0600 file in the guest that the command's shell sources and
// removes.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Endpoint is where and how to reach a box over SSH.
type Endpoint struct {
	Host         string
	Port         int
	User         string
	IdentityFile string
	HostKeyFile  string // TOFU pin file

	sshConfig, sshHost string // stand-in only: the ssh -F file and Host entry
}

// EndpointFromSSHConfig reads host's entry from Lima's <instance>/ssh.config.
func EndpointFromSSHConfig(path, host string) (Endpoint, error) {
	f, err := os.Open(path)
	if err != nil {
		return Endpoint{}, fmt.Errorf("read ssh config %s: %w", path, err)
	}
	defer f.Close()
	ep := Endpoint{sshConfig: path, sshHost: host}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		v = strings.Trim(strings.TrimSpace(v), `"`)
		switch strings.ToLower(k) {
		case "host":
			in = v == host
		case "hostname":
			if in {
				ep.Host = v
			}
		case "port":
			if in {
				ep.Port, _ = strconv.Atoi(v)
			}
		case "user":
			if in {
				ep.User = v
			}
		case "identityfile":
			if in && ep.IdentityFile == "" {
				ep.IdentityFile = v
			}
		}
	}
	if ep.Host == "" || ep.Port == 0 || ep.User == "" {
		return Endpoint{}, fmt.Errorf("read ssh config %s: no complete Host %q entry", path, host)
	}
	return ep, sc.Err()
}

// SessionOptions describes one session.
type SessionOptions struct {
	Argv           []string // empty: login shell
	Dir            string
	Env            map[string]string
	TTY            bool
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Timeout        time.Duration
}

// Client is a connection to a box.
type Client struct{ ep Endpoint }

// ExitStatus is the error returned for a nonzero guest exit status.
type ExitStatus int

// GuestStatus is the guest command's exit status.
func (e ExitStatus) GuestStatus() int { return int(e) }

func (e ExitStatus) Error() string { return fmt.Sprintf("guest command exited with status %d", int(e)) }

// Dial connects to ep (the stand-in checks the endpoint and runs nothing).
func Dial(ctx context.Context, ep Endpoint) (*Client, error) {
	if ep.sshConfig == "" {
		return nil, errors.New("dial box: the ssh stand-in needs an endpoint from EndpointFromSSHConfig")
	}
	return &Client{ep: ep}, ctx.Err()
}

// Close ends the connection.
func (c *Client) Close() error { return nil }

func (c *Client) ssh(ctx context.Context, tty bool, remote string) *exec.Cmd {
	t := "-T"
	if tty {
		t = "-t"
	}
	return exec.CommandContext(ctx, "ssh", "-F", c.ep.sshConfig, "-o", "BatchMode=yes", "-o", "LogLevel=ERROR", t, c.ep.sshHost, "--", remote)
}

// Output runs argv and returns its standard output and exit status.
func (c *Client) Output(ctx context.Context, argv []string) ([]byte, int, error) {
	var out, errb bytes.Buffer
	cmd := c.ssh(ctx, false, shellJoin(argv))
	cmd.Stdout, cmd.Stderr = &out, &errb
	code, err := exitCode(cmd.Run())
	if err != nil {
		return nil, -1, fmt.Errorf("ssh %s: %w: %s", c.ep.sshHost, err, strings.TrimSpace(errb.String()))
	}
	return out.Bytes(), code, nil
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Run runs a session; it returns 124 when opts.Timeout runs out.
func (c *Client) Run(ctx context.Context, opts SessionOptions) (int, error) {
	envPath := ""
	if len(opts.Env) > 0 {
		p, err := c.pushEnv(ctx, opts.Env)
		if err != nil {
			return -1, err
		}
		envPath = p
	}
	argv := opts.Argv
	if opts.Timeout > 0 {
		// The guest's timeout(1) sends TERM, then KILL 2 s later, and exits 124. Killing only the
		// local ssh would leave the command running (and, through the ssh mux, our stdout open).
		if len(argv) == 0 {
			argv = []string{"sh", "-c", `exec "${SHELL:-/bin/sh}" -l`}
		}
		argv = append([]string{"timeout", "-k", "2s", fmt.Sprintf("%.3fs", opts.Timeout.Seconds())}, argv...)
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.Timeout+30*time.Second)
		defer cancel()
	}
	cmd := c.ssh(ctx, opts.TTY, sessionScript(envPath, opts.Dir, argv))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = opts.Stdin, opts.Stdout, opts.Stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 2 * time.Second
	code, err := exitCode(cmd.Run())
	if ctx.Err() == context.DeadlineExceeded || (opts.Timeout > 0 && code == 124) {
		return 124, ExitStatus(124)
	}
	if err != nil {
		return -1, fmt.Errorf("ssh %s: %w", c.ep.sshHost, err)
	}
	if code != 0 {
		return code, ExitStatus(code)
	}
	return 0, nil
}

// pushEnv writes env as a sourced file in the guest, sent on ssh's stdin, and returns its path.
func (c *Client) pushEnv(ctx context.Context, env map[string]string) (string, error) {
	var b strings.Builder
	names := make([]string, 0, len(env))
	for k := range env {
		if !envName.MatchString(k) {
			return "", fmt.Errorf("session environment: invalid variable name %q", k)
		}
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(&b, "export %s=%s\n", k, shellQuote(env[k]))
	}
	cmd := c.ssh(ctx, false, `umask 077 && f=$(mktemp) && cat >"$f" && printf %s "$f"`)
	cmd.Stdin = strings.NewReader(b.String())
	out, err := cmd.Output()
	if err != nil || !strings.HasPrefix(string(out), "/") {
		return "", fmt.Errorf("session environment: write env file in the guest: %v", err)
	}
	return string(out), nil
}

// sessionScript is the remote shell command: source and remove the env file, cd, exec.
func sessionScript(envPath, dir string, argv []string) string {
	var s strings.Builder
	if envPath != "" {
		fmt.Fprintf(&s, "set -a; . %s; rm -f %s; set +a; ", shellQuote(envPath), shellQuote(envPath))
	}
	if dir != "" {
		fmt.Fprintf(&s, "cd %s || exit 1; ", shellQuote(dir))
	}
	if len(argv) == 0 {
		s.WriteString(`exec "${SHELL:-/bin/sh}" -l`)
	} else {
		s.WriteString("exec " + shellJoin(argv))
	}
	return s.String()
}

func shellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// exitCode turns ssh's result into the remote status; 255 is ssh's own failure.
func exitCode(err error) (int, error) {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ee.ExitCode() == 255 {
			return -1, errors.New("ssh failed (exit 255)")
		}
		return ee.ExitCode(), nil
	}
	if err != nil {
		return -1, err
	}
	return 0, nil
}
