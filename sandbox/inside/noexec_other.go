//go:build !linux

package inside

import (
	"errors"
	"runtime"
)

// fenceExec and fenceInit are Linux's: the light tier's inside steps run only there.
func fenceExec(spec Spec) error {
	return errors.New("the noexec mounts need Linux, not " + runtime.GOOS)
}
func fenceInit(filter []byte) error {
	return errors.New("the seccomp filter needs Linux, not " + runtime.GOOS)
}
