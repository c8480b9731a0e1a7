package session

// An editor's SSH connection (VS Code Remote-SSH, JetBrains Gateway, Zed, plain ssh) reaches the
// box through git corral itself: the ssh_config entry git corral ssh-config writes names
// "git corral --box BOX ssh-proxy" as its ProxyCommand, which opens the box like a session,
// runs the same guard check, writes the audit records, and only then relays the connection to
// the guest's sshd. Lima's own ssh.config skips all of that.
//
// Rules:
//   - Nothing reaches the guest's sshd before the guard check passed: the editor's channel is
//     opened after it, so a refused connection never opens one.
//   - The editor's connection is tunnelled through a direct-tcpip channel of git corral's own
//     connection to the guest's 127.0.0.1:22, so the guest's sshd sees it come from 127.0.0.1
//     and holds it to the editor's limits (provision/sshdconf.go): ssh -L only to a guest port
//     `ports` names, no ssh -R, unix-socket, X11 or tun forwards, an agent only with ssh_agent.
//     The connection holder refuses TCP channels, so the relay dials the box itself.
//   - A refusal is audited as a guard failure and said on stderr (ssh shows the ProxyCommand's
//     stderr); stdout carries only the SSH stream.
//   - The launch record names the connection ("ssh (editor connection)"); the exit record its
//     duration. What runs inside the connection is the editor's: git corral sees only
//     encrypted bytes and cannot audit the commands in it.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/git-corral/git-corral/audit"
	"github.com/git-corral/git-corral/internal/hint"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/vm"
)

// EditorArgv is what the audit log records as the command of an editor's connection.
var EditorArgv = []string{"ssh", "(editor connection)"}

// Relay checks b's guards and audits an editor's SSH connection, then relays st (the SSH
// client's side, ProxyCommand's stdin and stdout) to the guest's sshd until either side ends.
func (b *Box) Relay(ctx context.Context, st Streams) error {
	ep, err := b.endpoint()
	if err != nil {
		return err
	}
	lg := AuditLog(b.Manager.Home)
	rec := AuditRecord(b)
	c, err := b.dial(ctx, ep, true)
	if err != nil {
		return hint.With(err, "'git corral logs' shows what Lima said")
	}
	defer c.Close()
	if _, gerr := b.guardCheck(ctx, c, false, nil); gerr != nil {
		return b.guardFailed(ctx, lg, rec, gerr)
	}
	launch := rec
	launch.Event, launch.Argv = audit.EventLaunch, EditorArgv
	if err := lg.Append(ctx, launch); err != nil {
		return hint.With(fmt.Errorf("refusing to connect unaudited: %w", err), "free space for $CORRAL_HOME/logs, then connect again")
	}
	began := time.Now()
	code, err := relay(ctx, c, b.guestSSHDAddr(), st)
	exit := rec
	exit.Event, exit.ExitCode, exit.DurationMs = audit.EventExit, &code, time.Since(began).Milliseconds()
	lg.Append(context.WithoutCancel(ctx), exit)
	return err
}

// guestSSHDAddr is where b's editor connections are tunnelled to in the guest.
func (b *Box) guestSSHDAddr() string {
	if b.guestSSHD != "" {
		return b.guestSSHD
	}
	return vm.GuestSSHDAddr
}

// relay copies between st and a direct-tcpip channel on c to addr until the guest closes its
// side (or the client its stdin and then the guest its side). code is 0 for a connection that
// ended, 1 for one that could not be made.
func relay(ctx context.Context, c *vm.Client, addr string, st Streams) (int, error) {
	conn, err := c.DialGuestTCP(ctx, addr)
	if err != nil {
		return 1, fmt.Errorf("connect to the box's sshd: %w", err)
	}
	defer conn.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		io.Copy(conn, st.Stdin)
		if cw, ok := conn.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite() // the client is done sending; the guest may still answer
		}
	}()
	_, err = io.Copy(st.Stdout, conn)
	if errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF) {
		err = nil
	}
	return 0, err
}

// Endpoint is the guest sshd's endpoint of the running box b (for ssh-config).
func (b *Box) Endpoint() (vm.Endpoint, error) { return b.endpoint() }

// editorPorts returns the guest ports of cfg's `ports` entries: the only ports an editor's
// connection may forward to (provision.Options.ForwardPorts).
func editorPorts(cfg *policy.Config) ([]int, error) {
	ps, err := policy.ParsePorts(cfg.Ports)
	if err != nil {
		return nil, hint.With(fmt.Errorf("render the guest sshd configuration: %w", err), "fix the ports entry named above in the trusted configuration")
	}
	var out []int
	for _, p := range ps {
		out = append(out, p.Guest)
	}
	return out, nil
}
