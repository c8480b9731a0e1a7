package sandbox

// Broker rules: a run whose manifest grants network access (network.allow) reaches it only
// through the broker (package broker), started on the host for that run alone. Package sandbox
// does not link the broker: the front on PATH links sandbox, and the broker brings net/http,
// TLS and x509 with it, whose size and initialisers every start of the front would pay for
// (issue #30, point 6). The caller passes it in (Options.Broker, ParseManifest's b: package
// sandbox/netbroker); without it, a manifest that grants network access is refused with
// ErrNeedsBroker before anything runs, and the front hands that run to the full binary.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Broker is the network broker of a run whose manifest grants network access.
type Broker interface {
	// CheckAllowList checks network.allow as the broker reads it, naming every bad entry.
	CheckAllowList(allow []string) error
	// Start serves allow on a new Unix socket at sock and logs each decision to the sandbox
	// log at logPath; it returns the run's proxy secret and a stop that ends the broker.
	Start(ctx context.Context, allow []string, logPath, sock string) (secret string, stop func(), err error)
}

// ErrNeedsBroker is the error of a manifest that grants network access, read or run without a
// Broker.
var ErrNeedsBroker = errors.New("the manifest grants network access (network.allow), which needs the broker")

// startBroker starts the run's broker on a Unix socket in a private directory that the plan
// binds into the sandbox; its decisions go to the sandbox log.
func startBroker(ctx context.Context, o Options, h *Host) (func(), error) {
	if o.Broker == nil {
		return nil, ErrNeedsBroker
	}
	dir, err := os.MkdirTemp("", "corral-sandbox-")
	if err != nil {
		return nil, fmt.Errorf("broker socket directory: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(LogPath(o.CorralHome)), 0o700); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("create log directory: %w", err)
	}
	secret, stop, err := o.Broker.Start(ctx, o.Manifest.Network, LogPath(o.CorralHome), filepath.Join(dir, brokerSock))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	h.Secret, h.BrokerDir = secret, dir
	return func() { stop(); os.RemoveAll(dir) }, nil
}
