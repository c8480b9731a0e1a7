//go:build !linux

package inside

import "errors"

// execLimited needs Linux's prlimit and execve; the sandbox's exec step runs only there.
func execLimited(argv, env []string, memory uint64) error {
	return errors.New("the memory limit needs Linux")
}
