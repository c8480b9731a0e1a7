package audit

// The rules of the audit log:
//   - One JSON object per line, appended whole: the line is built in memory and written with a
//     single write(2) on an O_APPEND descriptor while holding an exclusive flock, so concurrent
//     writers (several git corral processes) never interleave.
//   - A write that fails part-way (a full disk) is cut back to the length the file had before
//     it, so no partial line is ever left; the error reaches the caller, and a session that cannot
//     be audited does not start.
//   - A writer killed by SIGKILL in the middle of a large write(2) can leave the start of its line
//     (the kernel stops copying at a page boundary when a fatal signal is pending). The next
//     writer, holding the lock, finds the file not ending in a newline and cuts that fragment off
//     before appending, and readers never count an unterminated last line as a record.
//   - Names only: records carry variable names, never values. Nothing in this package accepts a
//     secret value.
//   - When the file passes MaxBytes it is rotated to <path>.1 (one generation) under the same lock.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// DefaultMaxBytes is the size at which the log rotates.
const DefaultMaxBytes = 16 << 20

// Event names what happened.
type Event string

// The events the product records. EventStart is a session command (start, run, shell) that
// begins, recorded before any box is booted; EventLaunch is its guest command starting.
const (
	EventCreate        Event = "create"
	EventStart         Event = "start"
	EventLaunch        Event = "launch"
	EventExit          Event = "exit"
	EventStop          Event = "stop"
	EventDelete        Event = "delete"
	EventImageBuild    Event = "image-build"
	EventApprove       Event = "approve"
	EventShadowRestore Event = "shadow-restore"
	EventGuardFailure  Event = "guard-failure"
)

// Record is one line of sessions.jsonl.
type Record struct {
	Time       time.Time `json:"time"`
	Event      Event     `json:"event"`
	Box        string    `json:"box,omitempty"`
	Project    string    `json:"project,omitempty"`
	Argv       []string  `json:"argv,omitempty"`
	EnvNames   []string  `json:"envNames,omitempty"`
	Network    string    `json:"network,omitempty"`
	Profile    string    `json:"profile,omitempty"`
	ExitCode   *int      `json:"exitCode,omitempty"`
	DurationMs int64     `json:"durationMs,omitempty"`
	Detail     string    `json:"detail,omitempty"`
	// SSHAgent is true when the host's SSH agent is (to be) forwarded into the session.
	SSHAgent bool `json:"sshAgent,omitempty"`
	// PolicyDigest, on a start record, is the digest of the policy the session started under,
	// stored as $CORRAL_HOME/logs/policies/<hex>.json (policy.Snapshot).
	PolicyDigest string `json:"policyDigest,omitempty"`
	PID          int    `json:"pid"`
}

// Log appends records to one JSONL file.
type Log struct {
	// Path is the log file.
	Path string
	// MaxBytes rotates the file when it grows past it; 0 means DefaultMaxBytes.
	MaxBytes int64
}

// Append writes rec as one whole line. Time and PID are filled in when zero.
func (l *Log) Append(ctx context.Context, rec Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if rec.Time.IsZero() {
		rec.Time = time.Now().UTC()
	}
	if rec.PID == 0 {
		rec.PID = os.Getpid()
	}
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("audit: encode %s record: %w", rec.Event, err)
	}
	return l.appendLine(append(line, '\n'))
}

// appendLine writes line under the lock, rotating first when the file is too large.
func (l *Log) appendLine(line []byte) error {
	if err := os.MkdirAll(filepath.Dir(l.Path), 0o700); err != nil {
		return fmt.Errorf("audit: create log directory: %w", err)
	}
	f, err := openLocked(l.Path)
	if err != nil {
		return err
	}
	defer f.Close() // closing releases the flock
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("audit: stat %s: %w", l.Path, err)
	}
	max := l.MaxBytes
	if max <= 0 {
		max = DefaultMaxBytes
	}
	if fi.Size() > 0 && fi.Size()+int64(len(line)) > max {
		if err := os.Rename(l.Path, l.Path+".1"); err != nil {
			return fmt.Errorf("audit: rotate %s: %w", l.Path, err)
		}
		f.Close()
		if f, err = openLocked(l.Path); err != nil {
			return err
		}
		defer f.Close()
		fi = nil
	}
	var before int64
	if fi != nil {
		if before, err = dropPartialTail(f, fi.Size()); err != nil {
			return fmt.Errorf("audit: repair %s: %w", l.Path, err)
		}
	}
	n, err := f.Write(line)
	if err == nil && n == len(line) {
		return nil
	}
	// Cut a partial line back off so that readers never see half a record.
	if terr := f.Truncate(before); terr != nil {
		err = errors.Join(err, fmt.Errorf("cut back partial line: %w", terr))
	}
	if err == nil {
		err = fmt.Errorf("short write (%d of %d bytes)", n, len(line))
	}
	return fmt.Errorf("audit: append to %s: %w", l.Path, err)
}

// openLocked opens path for appending (owner-only, no symlink) and takes an exclusive flock.
func openLocked(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit: open %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("audit: lock %s: %w", path, err)
	}
	// The file may have been rotated away between open and lock: reopen if so.
	fi, err1 := f.Stat()
	pi, err2 := os.Lstat(path)
	if err1 == nil && err2 == nil && !os.SameFile(fi, pi) {
		f.Close()
		return openLocked(path)
	}
	return f, nil
}

// dropPartialTail cuts an unterminated last line (left by a killed writer) off f, whose size is
// size, and returns the new size. The caller holds the lock.
func dropPartialTail(f *os.File, size int64) (int64, error) {
	if size == 0 {
		return 0, nil
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, size-1); err != nil {
		return size, err
	}
	if last[0] == '\n' {
		return size, nil
	}
	// Walk back to the previous newline, a block at a time.
	const block = 64 << 10
	end := size
	for end > 0 {
		start := max(end-block, 0)
		buf := make([]byte, end-start)
		if _, err := f.ReadAt(buf, start); err != nil {
			return size, err
		}
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
			keep := start + int64(i) + 1
			return keep, f.Truncate(keep)
		}
		end = start
	}
	return 0, f.Truncate(0)
}
