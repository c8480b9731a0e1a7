// Package crossbuild holds only a test: it proves that git corral builds, and that go vet
// passes, for every host the product promises (Linux and macOS, amd64 and arm64). The host
// specific code lives behind build constraints in small _linux and _darwin files of the packages
// that own it (broker/tcpidle_*.go, diff/stat_*.go, gitshadow/statkey_*.go); this test keeps a
// change made on Linux from breaking the macOS build unnoticed.
//
// Every target is built with CGO_ENABLED=0: the binary drives Lima through limactl and links
// only Lima's YAML and store packages, not its vz driver (which needs cgo and is built into
// limactl itself).
package crossbuild
