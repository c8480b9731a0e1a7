//go:build !linux

package casefs

import (
	"context"
	"errors"
)

// Server is one mounted case-insensitive view of a backing directory. The FUSE server is
// written for Linux (renameat2, MNT_DETACH); elsewhere Mount fails, so that the tests that use
// it still compile (and go vet runs) for every host the binary is built for.
type Server struct {
	// Backing is the directory served; Mountpoint is where it is mounted.
	Backing, Mountpoint string
}

// errNotLinux is returned by Mount on other systems.
var errNotLinux = errors.New("casefs: the case-insensitive FUSE view needs Linux")

// Mount fails: see Server.
func Mount(ctx context.Context, backing, mountpoint string) (*Server, error) { return nil, errNotLinux }

// Unmount does nothing: nothing was mounted.
func (s *Server) Unmount() error { return nil }
