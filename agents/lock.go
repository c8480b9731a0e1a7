package agents

// This file serialises changes to the store: two sessions starting at once, or a session and
// `agents verify`, must not build, delete or rename the same entry at the same time.

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// lock takes the store's exclusive lock ($CORRAL_HOME/agents/store.lock), saying on progress
// when it has to wait, and returns its release.
func (s *Store) lock(progress io.Writer) (func(), error) {
	if err := os.MkdirAll(Dir(s.home), 0o755); err != nil {
		return nil, fmt.Errorf("lock agent store: %w", err)
	}
	name := filepath.Join(Dir(s.home), "store.lock")
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock agent store: %w", err)
	}
	fd := int(f.Fd())
	if err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		say(progress, "waiting for another git corral using the agent store (%s)", name)
		if err := syscall.Flock(fd, syscall.LOCK_EX); err != nil {
			f.Close()
			return nil, fmt.Errorf("lock agent store %q: %w", name, err)
		}
	}
	return func() { syscall.Flock(fd, syscall.LOCK_UN); f.Close() }, nil
}
