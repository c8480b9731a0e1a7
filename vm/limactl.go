package vm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// DefaultLimaPrefix is where git corral's setup installs its pinned Lima build
// (bin/limactl and share/lima/lima-guestagent.*).
const DefaultLimaPrefix = "/usr/local/lib/git-corral/lima"

// ErrNoLimactl is returned when no limactl can be found.
var ErrNoLimactl = errors.New("limactl not found")

// FindLimactl returns the limactl git corral uses: $CORRAL_LIMACTL, then
// $CORRAL_LIMA_PREFIX/bin/limactl, then DefaultLimaPrefix, then PATH.
func FindLimactl(getenv func(string) string) (string, error) {
	if p := getenv("CORRAL_LIMACTL"); p != "" {
		if !isExecutable(p) {
			return "", fmt.Errorf("%w: CORRAL_LIMACTL=%q is not an executable file", ErrNoLimactl, p)
		}
		return p, nil
	}
	prefix := getenv("CORRAL_LIMA_PREFIX")
	if prefix == "" {
		prefix = DefaultLimaPrefix
	}
	if p := filepath.Join(prefix, "bin", "limactl"); isExecutable(p) {
		return p, nil
	}
	if p, err := exec.LookPath("limactl"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%w in %s/bin or on PATH (build it with 'make lima')", ErrNoLimactl, prefix)
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// LimactlVersion runs limactl --version and returns the version it prints.
func LimactlVersion(ctx context.Context, limactl string) (string, error) {
	out, err := exec.CommandContext(ctx, limactl, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", limactl, err)
	}
	return parseLimactlVersion(string(out))
}

// parseLimactlVersion reads "limactl version 1.2.2".
func parseLimactlVersion(out string) (string, error) {
	f := strings.Fields(out)
	if len(f) >= 3 && f[0] == "limactl" && f[1] == "version" {
		return f[2], nil
	}
	return "", fmt.Errorf("unexpected limactl --version output %q", strings.TrimSpace(out))
}
