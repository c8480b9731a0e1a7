package session

// This file says a notice once per box: a notice about something that stays the same from one
// session to the next (the host's git has no identity for git_identity = "host") is news the
// first time and noise on every command after (issue #30). Each notice said is recorded as the
// sha256 of its text, one line, in home.BoxNotices; the record goes with the box
// (vm.Manager.Delete). A record that cannot be read or written never hides a notice: the notice
// is said again.

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"syscall"
)

// noticeOnce says msg unless it was said before for this box.
func (b *Box) noticeOnce(msg string) {
	if b.Manager == nil || b.Name == "" {
		b.req.notice(msg)
		return
	}
	sum := sha256.Sum256([]byte(msg))
	key := hex.EncodeToString(sum[:16])
	path := b.Manager.Home.BoxNotices(b.Name)
	if f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if sc.Text() == key {
				f.Close()
				return
			}
		}
		f.Close()
	}
	b.req.notice(msg)
	if err := b.Manager.Home.MkdirAll(b.Manager.Home.Boxes()); err != nil {
		return
	}
	// One write of a whole line with O_APPEND: two sessions at once add two whole lines.
	if f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o600); err == nil {
		_, _ = f.Write([]byte(key + "\n"))
		f.Close()
	}
}
