package vm

import (
	"context"
	"os/exec"
	"time"

	"github.com/lima-vm/lima/pkg/limayaml"
)

// MountTypeLinux chooses how the project is mounted in a QEMU box on Linux.
//
// Measured on this machine kind (docs/benchmarks-history.md, vm): writing 200 small files on the
// mount took 0.92-0.95 s over 9p and 3.29 s over reverse-sshfs; a box reached READY as fast or
// faster with 9p; 9p needs no sftp-server and no ssh connection per mount. 9p's one drawback
// here (no live snapshot of a running box) does not matter to git corral. virtiofs would be
// faster still, but Lima v1.2.2 on Linux needs the Rust virtiofsd (it refuses QEMU's C
// virtiofsd, which needs root), so it is used only when a virtiofsd that answers --version is
// found.
func MountTypeLinux(ctx context.Context) string {
	for _, p := range []string{"/usr/libexec/virtiofsd", "/usr/lib/virtiofsd"} {
		if rustVirtiofsd(ctx, p) {
			return limayaml.VIRTIOFS
		}
	}
	if p, err := exec.LookPath("virtiofsd"); err == nil && rustVirtiofsd(ctx, p) {
		return limayaml.VIRTIOFS
	}
	return limayaml.NINEP
}

// rustVirtiofsd reports whether path is a virtiofsd that Lima accepts (only the Rust one
// answers --version).
func rustVirtiofsd(ctx context.Context, path string) bool {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, path, "--version").Run() == nil
}
