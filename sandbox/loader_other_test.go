//go:build !linux

package sandbox

import "testing"

// The loader table (loader_test.go) runs only on Linux, where the sandbox runs; TestHostile's
// file is shared with the platforms the light tier is only rendered for.

type loaderFixture struct{}

func (f *fixture) loaderFiles(t *testing.T) loaderFixture { return loaderFixture{} }

func loaderCases(loaderFixture) []hostileCase { return nil }
