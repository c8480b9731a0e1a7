// Package sandboxguest is a clone.Guest for tests: it runs the guest-side commands for real, on
// this machine, in a sandbox directory and (when run as root) as an unprivileged user, so that
// tests of delivery and fetch-back exercise the box's own git without a VM. It is a fake only at
// the process boundary: the commands and their git are real.
package sandboxguest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
)

// Guest runs commands in Dir with a minimal environment: HOME=Dir/home, PATH=/usr/bin:/bin,
// git's system and global config ignored, a fixed identity.
type Guest struct {
	// Dir is the sandbox; guest paths given to clone live under it.
	Dir string
	// UID and GID run the commands when the caller is root (0 means "do not switch").
	UID, GID uint32

	mu     sync.Mutex
	stderr bytes.Buffer
}

// New makes a sandbox directory outside any 0700 test dir and, when running as root, hands it
// to the user "nobody" so that guest commands cannot write anywhere the host keeps state.
func New() (*Guest, error) {
	dir, err := os.MkdirTemp("", "corral-guest-")
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	g := &Guest{Dir: dir}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			return nil, fmt.Errorf("sandbox guest: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		g.UID, g.GID = uint32(uid), uint32(gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
	}
	if err := g.mkdir(filepath.Join(dir, "home")); err != nil {
		return nil, err
	}
	return g, nil
}

func (g *Guest) mkdir(p string) error {
	if err := os.MkdirAll(p, 0o755); err != nil {
		return err
	}
	if g.UID != 0 {
		return os.Chown(p, int(g.UID), int(g.GID))
	}
	return nil
}

// Path is a path inside the sandbox.
func (g *Guest) Path(rel string) string { return filepath.Join(g.Dir, rel) }

// Stderr returns everything the guest commands wrote to stderr so far.
func (g *Guest) Stderr() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stderr.String()
}

// Close removes the sandbox.
func (g *Guest) Close() error { return os.RemoveAll(g.Dir) }

// Exec implements clone.Guest.
func (g *Guest) Exec(ctx context.Context, argv []string, stdin io.Reader, stdout io.Writer) (int, error) {
	if len(argv) == 0 {
		return -1, errors.New("sandbox guest: empty argv")
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = g.Dir
	cmd.Env = []string{
		"HOME=" + filepath.Join(g.Dir, "home"), "PATH=/usr/bin:/bin", "LANG=C",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=Box", "GIT_AUTHOR_EMAIL=box@corral.invalid",
		"GIT_COMMITTER_NAME=Box", "GIT_COMMITTER_EMAIL=box@corral.invalid",
		"GIT_AUTHOR_DATE=2026-01-02T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-02T00:00:00Z",
	}
	cmd.Stdin, cmd.Stdout = stdin, stdout
	cmd.Stderr = lockedWriter{g}
	if g.UID != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: g.UID, Gid: g.GID}}
	}
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	if err != nil {
		return -1, err
	}
	return 0, nil
}

type lockedWriter struct{ g *Guest }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.g.mu.Lock()
	defer w.g.mu.Unlock()
	return w.g.stderr.Write(p)
}
