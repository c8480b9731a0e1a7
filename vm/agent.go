package vm

// This file forwards the host's SSH agent into a session, only when the session asks for it
// (ssh_agent, a trusted-only setting). Rules:
//   - The connection accepts the guest's agent channels only while at least one session that
//     asked for forwarding runs; any other time (the guard check, sessions without it) a channel
//     the guest opens is rejected, so a guest cannot reach the agent outside the session the
//     user allowed.
//   - Each accepted channel is its own connection to the host agent's socket; git corral never
//     reads keys or signs anything itself.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// agentChannelType is the channel OpenSSH's sshd opens back to the client for each use of a
// forwarded agent.
const agentChannelType = "auth-agent@openssh.com"

// agentForward is a connection's agent forwarding state.
type agentForward struct {
	mu      sync.Mutex
	serving bool   // the channel handler is registered
	sock    string // the host agent's socket
	active  int    // sessions that asked for forwarding and still run
}

// startAgent lets the guest use the host agent at sock until the returned stop is called, and
// asks the guest sshd to forward it into sess (RequestAgentForwarding).
func (c *Client) startAgent(ctx context.Context, sess *ssh.Session, sock string) (stop func(), err error) {
	d := net.Dialer{Timeout: 5 * time.Second}
	probe, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		return nil, fmt.Errorf("forward the SSH agent: connect to the host agent at %s: %w", sock, err)
	}
	probe.Close()
	a := &c.agent
	a.mu.Lock()
	if !a.serving {
		chans := c.ssh.HandleChannelOpen(agentChannelType)
		if chans == nil {
			a.mu.Unlock()
			return nil, errors.New("forward the SSH agent: the connection already handles agent channels")
		}
		a.serving = true
		go c.serveAgent(chans)
	}
	if a.active > 0 && a.sock != sock {
		a.mu.Unlock()
		return nil, fmt.Errorf("forward the SSH agent: another session forwards the agent at %s", a.sock)
	}
	a.sock = sock
	a.active++
	a.mu.Unlock()
	stop = func() {
		a.mu.Lock()
		a.active--
		a.mu.Unlock()
	}
	if err := agent.RequestAgentForwarding(sess); err != nil {
		stop()
		return nil, fmt.Errorf("forward the SSH agent: the guest sshd refused: %w", err)
	}
	return stop, nil
}

// serveAgent accepts agent channels while a forwarding session runs and rejects them otherwise.
func (c *Client) serveAgent(chans <-chan ssh.NewChannel) {
	for nc := range chans {
		c.agent.mu.Lock()
		sock, on := c.agent.sock, c.agent.active > 0
		c.agent.mu.Unlock()
		if !on {
			_ = nc.Reject(ssh.Prohibited, "no session forwards the agent")
			continue
		}
		go proxyAgent(nc, sock)
	}
}

// proxyAgent copies one agent channel to a new connection to the host agent at sock.
func proxyAgent(nc ssh.NewChannel, sock string) {
	conn, err := net.DialTimeout("unix", sock, 5*time.Second)
	if err != nil {
		_ = nc.Reject(ssh.ConnectionFailed, "host agent unreachable")
		return
	}
	ch, reqs, err := nc.Accept()
	if err != nil {
		conn.Close()
		return
	}
	go ssh.DiscardRequests(reqs)
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(conn, ch); done <- struct{}{} }()
	go func() { _, _ = io.Copy(ch, conn); done <- struct{}{} }()
	<-done
	ch.Close()
	conn.Close()
}
