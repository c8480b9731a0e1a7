package vm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Lock takes the box's lock ($CORRAL_HOME/boxes/<box>.lock, flock), so that two git corral
// processes never create, start, stop or delete one box at the same time. It waits until the
// lock is free or ctx ends, calling waiting once if it has to wait. The lock is released by
// calling unlock, or by the kernel when the process dies.
func (m *Manager) Lock(ctx context.Context, box string, waiting func()) (unlock func(), err error) {
	dir := m.Home.Boxes()
	if err := m.Home.MkdirAll(dir); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, box+".lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open box lock %s: %w", path, err)
	}
	told := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock box %s: %w", path, err)
		}
		if !told && waiting != nil {
			waiting()
			told = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("lock box %q: %w", box, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
