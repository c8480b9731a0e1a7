// Package netbroker is the light tier's network broker: package broker, started on the host for
// one sandboxed run (sandbox.Broker). The full binary passes it to the sandbox; the front on
// PATH does not link it (its net/http and TLS are most of a start of the front) and hands a
// run whose manifest grants network access to the full binary.
//
// It owns starting and stopping the broker of one run. It does not own the broker's rules
// (package broker), the socket's directory or its bind into the sandbox (package sandbox).
//
// Rules:
//   - It imports neither package sandbox (whose tests use it) nor anything the front links
//     only for it: cmd/git-corral-front TestFrontLinksNoNetwork keeps it out of the front.
package netbroker

import (
	"context"
	"fmt"
	"net"

	"github.com/git-corral/git-corral/broker"
)

// Broker starts package broker for a sandboxed run. The zero value resolves and dials as the
// host does.
type Broker struct {
	// Resolver and Dial are the broker's, for tests; nil means the host's.
	Resolver broker.Resolver
	Dial     broker.DialFunc
}

// CheckAllowList checks allow as the broker reads it (broker.ParseAllowList).
func (Broker) CheckAllowList(allow []string) error {
	_, err := broker.ParseAllowList(allow)
	return err
}

// Start starts a broker of the box "sandbox" for allow on a Unix socket at sock, logging its
// decisions to logPath; stop ends it and closes the log.
func (b Broker) Start(ctx context.Context, allow []string, logPath, sock string) (string, func(), error) {
	blog, err := broker.OpenLog(ctx, logPath, 0)
	if err != nil {
		return "", nil, err
	}
	secret := broker.NewSecret()
	bk, err := broker.New(broker.Config{Box: "sandbox", Allow: allow, Secret: []byte(secret),
		Log: blog, Resolver: b.Resolver, Dial: b.Dial})
	if err != nil {
		blog.Close()
		return "", nil, err
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "unix", sock)
	if err != nil {
		blog.Close()
		return "", nil, fmt.Errorf("broker socket: %w", err)
	}
	bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	served := make(chan struct{})
	go func() { bk.Serve(bctx, ln); close(served) }()
	return secret, func() { cancel(); <-served; blog.Close() }, nil
}
