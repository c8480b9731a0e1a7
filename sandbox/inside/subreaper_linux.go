package inside

import "golang.org/x/sys/unix"

// becomeSubreaper makes the init step the reaper of every process the command leaves behind, so
// that it can wait for them and report how the command ended.
func becomeSubreaper() { unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) }
