package dashboard

import (
	"os"
	"sync"
	"time"

	"github.com/git-corral/git-corral/broker"
)

// The dashboard reads every box's egress log on every poll, and a log may hold 16 MiB plus its
// rotated predecessor. egressCache keeps what the last read returned and reads again only when
// the current or the rotated file changed size or modification time (the broker appends, and
// rotation renames), so an idle dashboard costs a few stats per box per poll.

// fileStamp is what says a log file changed: its size and modification time, for the current
// log and the rotated one.
type fileStamp struct {
	size, size1   int64
	mtime, mtime1 time.Time
}

type cachedLog struct {
	stamp   fileStamp
	entries []broker.Entry
	err     error
}

type egressCache struct {
	mu   sync.Mutex
	logs map[string]cachedLog
}

func stampOf(path string) fileStamp {
	var s fileStamp
	if fi, err := os.Stat(path); err == nil {
		s.size, s.mtime = fi.Size(), fi.ModTime()
	}
	if fi, err := os.Stat(path + ".1"); err == nil {
		s.size1, s.mtime1 = fi.Size(), fi.ModTime()
	}
	return s
}

// read returns the log's entries, reading them with readLog only when the files changed. An
// error is not cached: the next poll tries again.
func (c *egressCache) read(path string, readLog func(string) ([]broker.Entry, int, error)) ([]broker.Entry, error) {
	stamp := stampOf(path)
	c.mu.Lock()
	defer c.mu.Unlock()
	if got, ok := c.logs[path]; ok && got.stamp == stamp && got.err == nil {
		return got.entries, nil
	}
	entries, _, err := readLog(path)
	if c.logs == nil {
		c.logs = map[string]cachedLog{}
	}
	c.logs[path] = cachedLog{stamp: stamp, entries: entries, err: err}
	return entries, err
}
