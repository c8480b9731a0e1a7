package vm

// This file keeps one SSH connection per box open between commands, the way OpenSSH's
// ControlMaster does for Lima's own ssh.config. A new SSH connection into a TCG guest costs
// seconds (sshd's fork and re-exec, key exchange and PAM's session setup, all emulated); a new
// session channel on an open connection costs a fraction of that. The holder ("git corral
// connection serve") dials the box once and serves SSH on a unix socket only this user can
// reach; each command's client opens its session channels there and the holder relays them
// onto its connection, on a warm shell when one can take the session (warm.go). Rules:
//   - The socket lives in a 0700 directory, is 0600, and every accepted peer must have this
//     process's uid (SO_PEERCRED where the platform has it): it grants what Lima's key grants.
//   - The holder's host key is made fresh at each start and pinned through a file beside the
//     socket; a client that cannot verify it dials the box directly.
//   - Only "session" channels are relayed, and stream-local channels to the few guest sockets
//     the holder was started with (the guard daemon's), only from the client side: nothing the
//     guest opens (agent or X11 forwarding, port forwards) crosses the holder, and no other
//     forwarding is relayed.
//   - The holder ends when its connection to the box ends (the box stopped: keepalive or EOF),
//     when no client has been connected for the idle time, or when told to; one holder per box
//     (a lock file held for its lifetime).
//   - Every session still runs the guest guard check first: the holder reuses a connection,
//     never a verdict.

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"github.com/git-corral/git-corral/home"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/git-corral/git-corral/internal/atomicfile"
)

// MuxPaths are the files of one box's connection holder.
type MuxPaths struct {
	Dir string // 0700
}

// Socket is the unix socket clients dial.
func (p MuxPaths) Socket() string { return filepath.Join(p.Dir, "ssh.sock") }

// HostKey holds the holder's public host key, for clients to pin.
func (p MuxPaths) HostKey() string { return filepath.Join(p.Dir, "ssh.pub") }

// Lock is held by the running holder.
func (p MuxPaths) Lock() string { return filepath.Join(p.Dir, "ssh.lock") }

// maxSocketPath is the longest unix socket path every supported platform accepts.
const maxSocketPath = 100

// ErrNoMux is wrapped by DialMux when no holder answers; the caller dials the box directly.
var ErrNoMux = errors.New("no connection holder")

// DialMux connects to the box's connection holder and returns a Client whose sessions run on
// the holder's connection.
func DialMux(ctx context.Context, p MuxPaths) (*Client, error) {
	if len(p.Socket()) > maxSocketPath {
		return nil, fmt.Errorf("%w: socket path %s is too long", ErrNoMux, p.Socket())
	}
	b, err := os.ReadFile(p.HostKey())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoMux, err)
	}
	pub, _, _, _, err := ssh.ParseAuthorizedKey(b)
	if err != nil {
		return nil, fmt.Errorf("%w: host key %s: %v", ErrNoMux, p.HostKey(), err)
	}
	d := net.Dialer{Timeout: 2 * time.Second}
	conn, err := d.DialContext(ctx, "unix", p.Socket())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoMux, err)
	}
	_ = conn.SetDeadline(time.Now().Add(dialTimeout))
	cfg := &ssh.ClientConfig{User: "corral", HostKeyCallback: ssh.FixedHostKey(pub), HostKeyAlgorithms: []string{pub.Type()}}
	sc, chans, reqs, err := ssh.NewClientConn(conn, "mux", cfg)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("%w: handshake: %v", ErrNoMux, err)
	}
	_ = conn.SetDeadline(time.Time{})
	c := &Client{ssh: ssh.NewClient(sc, chans, reqs), addr: "connection holder " + p.Socket(), done: make(chan struct{})}
	go c.keepalive(keepAliveInterval, keepAliveMax)
	return c, nil
}

// MuxOptions configure a connection holder.
type MuxOptions struct {
	Idle time.Duration // end after this long without a client
	// Sockets are the guest sockets stream-local channels (direct-streamlocal@openssh.com)
	// may reach; no other is relayed.
	Sockets []string
	// WarmShell keeps one login shell started in the box, waiting for a command (warm.go).
	WarmShell bool
}

// ServeMux holds up, the box connection, and relays every session a client opens on p.Socket()
// onto it. It returns nil when another holder already serves the box, when no client has been
// connected for o.Idle, or when ctx ends; and an error when the box connection is lost.
func ServeMux(ctx context.Context, up *Client, p MuxPaths, o MuxOptions) error {
	if len(p.Socket()) > maxSocketPath {
		return fmt.Errorf("serve box connection: socket path %s is too long", p.Socket())
	}
	if err := os.MkdirAll(p.Dir, 0o700); err != nil {
		return fmt.Errorf("serve box connection: %w", err)
	}
	if err := os.Chmod(p.Dir, 0o700); err != nil {
		return fmt.Errorf("serve box connection: %w", err)
	}
	unlock, err := lockExclusive(p.Lock())
	if errors.Is(err, errLocked) {
		return nil // another holder serves this box
	}
	if err != nil {
		return fmt.Errorf("serve box connection: %w", err)
	}
	defer unlock()
	ln, signer, err := listenMux(p)
	if err != nil {
		return err
	}
	defer func() {
		ln.Close()
		os.Remove(p.Socket())
		os.Remove(p.HostKey())
	}()
	cfg := &ssh.ServerConfig{NoClientAuth: true}
	cfg.AddHostKey(signer)
	s := &muxServer{up: up, cfg: cfg, idle: o.Idle, active: make(chan int, 1), sockets: map[string]bool{}}
	for _, sock := range o.Sockets {
		s.sockets[sock] = true
	}
	if o.WarmShell {
		s.warm = &warmPool{up: up.ssh}
		s.warm.fill()
	}
	s.active <- 0
	return s.serve(ctx, ln)
}

// listenMux makes a fresh host key, publishes it, then listens: the socket appears (by rename)
// only once the key a client pins is in place.
func listenMux(p MuxPaths) (net.Listener, ssh.Signer, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("serve box connection: host key: %w", err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return nil, nil, fmt.Errorf("serve box connection: host key: %w", err)
	}
	if err := atomicfile.Write(p.HostKey(), ssh.MarshalAuthorizedKey(signer.PublicKey()), 0o600); err != nil {
		return nil, nil, fmt.Errorf("serve box connection: %w", err)
	}
	tmp := fmt.Sprintf("%s.%d", p.Socket(), os.Getpid())
	os.Remove(tmp)
	ln, err := net.Listen("unix", tmp)
	if err != nil {
		return nil, nil, fmt.Errorf("serve box connection: %w", err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	err = os.Chmod(tmp, 0o600)
	if err == nil {
		err = os.Rename(tmp, p.Socket())
	}
	if err != nil {
		ln.Close()
		os.Remove(tmp)
		return nil, nil, fmt.Errorf("serve box connection: %w", err)
	}
	return ln, signer, nil
}

// muxServer is one holder's state.
type muxServer struct {
	up     *Client
	cfg    *ssh.ServerConfig
	idle   time.Duration
	active chan int // number of connected clients; a one-slot channel used as a mutex
	wg     sync.WaitGroup
	// sockets are the guest sockets stream-local channels may reach.
	sockets map[string]bool
	warm    *warmPool // nil: no warm shell
}

func (s *muxServer) serve(ctx context.Context, ln net.Listener) error {
	conns := make(chan net.Conn)
	go func() {
		defer close(conns)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns <- c
		}
	}()
	upDone := make(chan error, 1)
	go func() { upDone <- s.up.ssh.Wait() }()
	timer := time.NewTimer(s.idle)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-upDone:
			return fmt.Errorf("serve box connection: %w: %v", ErrConnectionLost, err)
		case <-timer.C:
			if n := <-s.active; n == 0 {
				s.active <- n
				return nil
			} else {
				s.active <- n
			}
			timer.Reset(s.idle)
		case c, ok := <-conns:
			if !ok {
				return nil
			}
			if !samePeer(c) {
				c.Close()
				continue
			}
			s.add(1)
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer func() { s.add(-1); timer.Reset(s.idle) }()
				s.client(c)
			}()
		}
	}
}

func (s *muxServer) add(d int) { n := <-s.active; s.active <- n + d }

// client serves one local client connection until it closes.
func (s *muxServer) client(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(dialTimeout))
	sc, chans, reqs, err := ssh.NewServerConn(c, s.cfg)
	if err != nil {
		return
	}
	_ = c.SetDeadline(time.Time{})
	defer sc.Close()
	go s.globalRequests(reqs)
	for nc := range chans {
		switch nc.ChannelType() {
		case "session":
		case "direct-streamlocal@openssh.com":
			var m struct {
				SocketPath, Reserved0 string
				Reserved1             uint32
			}
			if err := ssh.Unmarshal(nc.ExtraData(), &m); err != nil || !s.sockets[m.SocketPath] {
				nc.Reject(ssh.Prohibited, "the connection holder forwards only the guard daemon's socket")
				continue
			}
		default:
			nc.Reject(ssh.Prohibited, "the connection holder relays session channels only")
			continue
		}
		if nc.ChannelType() == "session" && s.warm != nil {
			go s.relaySession(nc)
			continue
		}
		go relay(s.up.ssh, nc)
	}
}

// globalRequests answers the client's keepalives for as long as the box connection is up.
func (s *muxServer) globalRequests(reqs <-chan *ssh.Request) {
	for r := range reqs {
		if r.WantReply {
			r.Reply(r.Type == "keepalive@openssh.com", nil)
		}
	}
}

// relay opens the same channel on the box connection and copies data, stderr and requests both
// ways until the box side closes it; the client's side is closed only after every byte of
// output was written, so the client's exit status never overtakes its output.
func relay(up *ssh.Client, nc ssh.NewChannel) {
	uch, ureqs, err := up.OpenChannel(nc.ChannelType(), nc.ExtraData())
	if err != nil {
		var oe *ssh.OpenChannelError
		if errors.As(err, &oe) {
			nc.Reject(oe.Reason, oe.Message)
		} else {
			nc.Reject(ssh.ConnectionFailed, err.Error())
		}
		return
	}
	dch, dreqs, err := nc.Accept()
	if err != nil {
		uch.Close()
		return
	}
	pipeChannel(uch, upRequests(ureqs), dch, dreqs)
}

// upRequests forwards the box side's channel requests (exit-status…) to the client side; the
// returned channel is closed when the box side has no more.
func upRequests(ureqs <-chan *ssh.Request) func(ssh.Channel) <-chan struct{} {
	return func(dch ssh.Channel) <-chan struct{} {
		done := make(chan struct{})
		go func() { forwardRequests(ureqs, dch); close(done) }()
		return done
	}
}

// pipeChannel copies data, stderr and requests between the box side uch and the client side
// dch until the box side closes. upReqs starts forwarding the box side's requests to dch.
func pipeChannel(uch ssh.Channel, upReqs func(ssh.Channel) <-chan struct{}, dch ssh.Channel, dreqs <-chan *ssh.Request) {
	var out sync.WaitGroup
	out.Add(2)
	go func() { io.Copy(uch, dch); uch.CloseWrite() }()
	go func() { defer out.Done(); io.Copy(dch, uch) }()
	go func() { defer out.Done(); io.Copy(dch.Stderr(), uch.Stderr()) }()
	// inFlight is held while a client request waits for the box's reply: a command that ends at
	// once (true, exit 7) closes the box's side before the reply to its own "exec" reaches the
	// client, and closing the client's side then would fail the client's exec.
	var inFlight sync.Mutex
	go func() {
		for r := range dreqs {
			inFlight.Lock()
			ok, err := uch.SendRequest(r.Type, r.WantReply, r.Payload)
			if r.WantReply {
				r.Reply(ok && err == nil, nil)
			}
			inFlight.Unlock()
		}
		uch.Close() // the client went away: end the guest session as sshd would
	}()
	reqsDone := upReqs(dch)
	// EOF once every byte of the box's output is written, as sshd sends it: a stream-local
	// peer (the guard daemon) that closes its socket is waited for by sshd until the client's
	// EOF, so the client must see this EOF before the box closes the channel.
	out.Wait()
	inFlight.Lock()
	dch.CloseWrite()
	inFlight.Unlock()
	<-reqsDone
	inFlight.Lock()
	dch.Close()
	inFlight.Unlock()
	uch.Close()
}

// forwardRequests passes every channel request from in to out, in order, with its reply.
func forwardRequests(in <-chan *ssh.Request, out ssh.Channel) {
	for r := range in {
		ok, err := out.SendRequest(r.Type, r.WantReply, r.Payload)
		if r.WantReply {
			r.Reply(ok && err == nil, nil)
		}
	}
}

// samePeer reports whether the process on the other end of c runs as this user. Where the
// platform cannot tell, the socket's 0700 directory is the only gate.
func samePeer(c net.Conn) bool {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return false
	}
	uid, known, err := peerUID(uc)
	if err != nil {
		return false
	}
	return !known || uid == os.Getuid()
}

var errLocked = errors.New("locked")

// lockExclusive takes a non-blocking exclusive flock on path for the caller's lifetime.
func lockExclusive(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errLocked
		}
		return nil, err
	}
	return func() { f.Close() }, nil
}

// HolderPaths is where box's connection holder keeps its socket, host key and lock.
func HolderPaths(h home.Home, box string) MuxPaths { return MuxPaths{Dir: h.Run(box)} }
