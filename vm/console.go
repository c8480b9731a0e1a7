package vm

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lima-vm/lima/pkg/store"

	"github.com/git-corral/git-corral/internal/visible"
)

// A box whose first boot fails is deleted (creating.go), and its serial console logs with it:
// the one record of what the guest did when it never answered on SSH. Before the deletion, the
// end of each console log goes into the box's log, which outlives the box ('git corral logs').

// consoleLogs are the guest console logs QEMU writes in the instance directory (Lima's
// filenames): the first serial port, which the kernel and git corral's boot lines use, and the
// virtio console.
var consoleLogs = []string{"serial.log", "serialv.log"}

const (
	// consoleTailLines is how many of a console log's last lines are kept.
	consoleTailLines = 60
	// consoleTailBytes is how much of a console log's end is read for them.
	consoleTailBytes = 64 << 10
	// consoleLineMax is the longest kept line, in bytes; longer ones are cut with a mark.
	consoleLineMax = 400
)

// keepConsole appends the end of box's console logs to its log. The guest wrote them, so every
// line is made visible (no control character reaches the terminal of 'git corral logs') and
// cut to a bounded length.
func (m *Manager) keepConsole(box string) {
	dir, err := store.InstanceDir(box)
	if err != nil {
		return
	}
	var b strings.Builder
	for _, name := range consoleLogs {
		lines, err := consoleTail(filepath.Join(dir, name), consoleTailLines)
		if err != nil || len(lines) == 0 {
			continue
		}
		fmt.Fprintf(&b, "--- %s the guest console (%s), its last %d lines, kept before the half-created box is removed\n",
			time.Now().UTC().Format(time.RFC3339), name, len(lines))
		for _, l := range lines {
			b.WriteString("console: " + l + "\n")
		}
	}
	if b.Len() == 0 {
		return
	}
	f, err := os.OpenFile(m.LogPath(box), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.WriteString(b.String()) // one write: the block is whole or absent
}

// consoleTail returns the last n lines of the console log at path, each made visible and at
// most consoleLineMax bytes.
func consoleTail(path string, n int) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	off := st.Size() - consoleTailBytes
	partial := off > 0 // the first line read may be the end of a longer one
	if off < 0 {
		off = 0
	}
	buf, err := io.ReadAll(io.NewSectionReader(f, off, st.Size()-off))
	if err != nil {
		return nil, err
	}
	buf = bytes.ReplaceAll(buf, []byte("\r\n"), []byte("\n"))
	lines := strings.Split(strings.TrimRight(string(buf), "\n"), "\n")
	if partial && len(lines) > 1 {
		lines = lines[1:]
	}
	if len(lines) == 1 && lines[0] == "" {
		return nil, nil
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		if len(l) > consoleLineMax {
			l = l[:consoleLineMax] + " [cut]"
		}
		out[i] = visible.String(l)
	}
	return out, nil
}
