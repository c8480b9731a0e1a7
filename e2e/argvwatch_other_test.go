//go:build !linux

package e2e

import "testing"

// argvWatch needs Linux's process events connector; elsewhere a test that asks for it fails
// rather than passing unwatched.
type argvWatch struct{}

func watchArgv(t *testing.T, secret string) *argvWatch {
	t.Fatal("the host argv watch needs Linux's process events connector")
	return nil
}

func (w *argvWatch) stop(t *testing.T) []string { return nil }
