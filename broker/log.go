package broker

// Egress log rules: one JSON object per attempt, with names only (host, port, address, rule),
// never a path, header or payload byte. Each line is encoded by encoding/json, so a hostile host
// name carrying newlines or quotes stays inside its string, and written with one write(2) on an
// O_APPEND descriptor while holding an exclusive flock, so that lines from several writers never
// interleave or tear. When the file would pass its size cap it is renamed to FILE.1 (replacing
// the previous one) and a new file is started.
//
// When a line is written: a refusal's line before the refusal is answered; an allowed tunnel's
// one line when the tunnel ends, with its byte counts, so writing it is never on the connect
// path, and a tunnel still open (or cut off by the broker's own death) has no line yet.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Entry is one line of the egress log. JSON keys are lowerCamel, as everywhere in git corral.
type Entry struct {
	Time time.Time `json:"time"`
	Box  string    `json:"box"`
	// Method is the request method (CONNECT for tunnels); for API routes, the routed method.
	Method string `json:"method"`
	// Host is the requested host, normalised, or the raw authority (truncated) when malformed.
	Host string `json:"host"`
	Port int    `json:"port,omitempty"`
	// Addr is the address dialled, or the refused address that decided a denial.
	Addr string `json:"addr,omitempty"`
	// Decision is "allow" or "deny".
	Decision string `json:"decision"`
	// Rule is the allow-list entry that allowed it; Reason says why it was refused.
	Rule   string `json:"rule,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Status is the HTTP status the broker answered (or the upstream's, for plain HTTP).
	Status     int     `json:"status"`
	BytesUp    int64   `json:"bytesUp"`
	BytesDown  int64   `json:"bytesDown"`
	DurationMs float64 `json:"durationMs"`
	// Route and Path are set for API broker requests only.
	Route string `json:"route,omitempty"`
	Path  string `json:"path,omitempty"`
	// Forge is the class of a request on a forge's API route (forge.go): read, merge, push,
	// protection or write; override or unreadable for a request refused before it had one.
	Forge string `json:"forge,omitempty"`
	// Refs are the refs of a push on a git route, each with its verdict.
	Refs []RefDecision `json:"refs,omitempty"`
}

// Decisions.
const (
	Allow = "allow"
	Deny  = "deny"
)

// DefaultLogMax is the size at which the egress log is rotated.
const DefaultLogMax = 16 << 20

// Log appends entries to an egress log file.
type Log struct {
	path string
	max  int64
	mu   sync.Mutex
	f    *os.File
	// dev and ino identify the file l.f holds, read once when it is opened: an inode never
	// changes, so each line needs one stat(2) of the path to learn whether the path still names
	// it (and, when it does, its size) rather than an fstat(2) of l.f as well.
	dev, ino uint64
}

// OpenLog opens (creating with mode 0600) the egress log at path; max <= 0 means DefaultLogMax.
func OpenLog(ctx context.Context, path string, max int64) (*Log, error) {
	if max <= 0 {
		max = DefaultLogMax
	}
	l := &Log{path: path, max: max}
	if err := l.reopen(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *Log) reopen() error {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("open egress log %s: %w", l.path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return fmt.Errorf("stat egress log %s: %w", l.path, err)
	}
	if l.f != nil {
		l.f.Close()
	}
	l.f, l.dev, l.ino = f, uint64(st.Dev), uint64(st.Ino)
	return nil
}

// Write appends e as one line.
func (l *Log) Write(e Entry) error {
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode egress log entry: %w", err)
	}
	line = append(line, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	size, err := l.lock()
	if err != nil {
		return err
	}
	defer func() { unix.Flock(int(l.f.Fd()), unix.LOCK_UN) }() // l.f may change on rotation
	if err := l.rotateIfFull(size, int64(len(line))); err != nil {
		return err
	}
	if _, err := l.f.Write(line); err != nil {
		return fmt.Errorf("append egress log %s: %w", l.path, err)
	}
	return nil
}

// lock takes the file lock, reopening first when another writer rotated the file away, and
// returns the file's size.
func (l *Log) lock() (int64, error) {
	for range 3 {
		if err := unix.Flock(int(l.f.Fd()), unix.LOCK_EX); err != nil {
			return 0, fmt.Errorf("lock egress log %s: %w", l.path, err)
		}
		var named unix.Stat_t
		if unix.Stat(l.path, &named) == nil && uint64(named.Ino) == l.ino && uint64(named.Dev) == l.dev {
			return named.Size, nil // the same inode as l.f, so the same size
		}
		unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
		if err := l.reopen(); err != nil {
			return 0, err
		}
	}
	return 0, fmt.Errorf("lock egress log %s: the file keeps being replaced", l.path)
}

// rotateIfFull renames a full log to FILE.1 and starts a new one, still under the lock.
func (l *Log) rotateIfFull(size, n int64) error {
	if size == 0 || size+n <= l.max {
		return nil
	}
	if err := os.Rename(l.path, l.path+".1"); err != nil {
		return fmt.Errorf("rotate egress log %s: %w", l.path, err)
	}
	old := l.f
	l.f = nil
	if err := l.reopen(); err != nil {
		l.f = old
		return err
	}
	unix.Flock(int(l.f.Fd()), unix.LOCK_EX)
	unix.Flock(int(old.Fd()), unix.LOCK_UN)
	old.Close()
	return nil
}

// Close closes the file.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}
