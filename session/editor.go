package session

// An editor's SSH connection (VS Code Remote-SSH, JetBrains Gateway, Zed, plain ssh) reaches the
// box through git corral itself: the ssh_config entry git corral ssh-config writes names
// "git corral --box BOX ssh-proxy" as its ProxyCommand, which opens the box like a session,
// runs the same guard check, writes the audit records, and only then relays the connection to
// the guest's sshd. Lima's own ssh.config skips all of that.
//
// Rules:
//   - Nothing reaches the guest's sshd before the guard check passed: the relay's TCP
//     connection is dialled after it, so a refused connection never opens one.
//   - A refusal is audited as a guard failure and said on stderr (ssh shows the ProxyCommand's
//     stderr); stdout carries only the SSH stream.
//   - The launch record names the connection ("ssh (editor connection)"); the exit record its
//     duration. What runs inside the connection is the editor's: git corral sees only
//     encrypted bytes and cannot audit or filter the commands or port forwards in it.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/git-corral/git-corral/audit"
	"github.com/git-corral/git-corral/internal/hint"
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
	_, gerr := b.guardCheck(ctx, c, false, nil)
	c.Close()
	if gerr != nil {
		return b.guardFailed(ctx, lg, rec, gerr)
	}
	launch := rec
	launch.Event, launch.Argv = audit.EventLaunch, EditorArgv
	if err := lg.Append(ctx, launch); err != nil {
		return hint.With(fmt.Errorf("refusing to connect unaudited: %w", err), "free space for $CORRAL_HOME/logs, then connect again")
	}
	began := time.Now()
	code, err := relay(ctx, net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port)), st)
	exit := rec
	exit.Event, exit.ExitCode, exit.DurationMs = audit.EventExit, &code, time.Since(began).Milliseconds()
	lg.Append(context.WithoutCancel(ctx), exit)
	return err
}

// relay copies between st and a TCP connection to addr until the guest closes its side (or the
// client its stdin and then the guest its side). code is 0 for a connection that ended, 1 for
// one that could not be made.
func relay(ctx context.Context, addr string, st Streams) (int, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 1, fmt.Errorf("connect to the box's sshd at %s: %w", addr, err)
	}
	defer conn.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		io.Copy(conn, st.Stdin)
		if tc, ok := conn.(*net.TCPConn); ok {
			tc.CloseWrite() // the client is done sending; the guest may still answer
		}
	}()
	_, err = io.Copy(st.Stdout, conn)
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return 0, err
}

// Endpoint is the guest sshd's endpoint of the running box b (for ssh-config).
func (b *Box) Endpoint() (vm.Endpoint, error) { return b.endpoint() }
