package vm

import (
	"context"
	"fmt"
	"strings"

	"github.com/git-corral/git-corral/provision"
)

// Sealing a golden base. The build box's first boot leaves state on its disk that belongs to that
// box, and a box made from the base must not inherit it:
//
//   - lima-init's fstab entries ("... # lima-init"). systemd mounts fstab at local-fs.target,
//     before lima-init rewrites the entries for the new box, so a stale entry mounts the new box's
//     9p tag mount0 (its project) at the build box's mount point; lima-init's own mount then fails
//     ("mount0 already mounted"), the project is not at its path, the git shadow script fails and
//     the guard check refuses every session ("/run/corral/shadow.expect missing"). The build box
//     mounts nothing any more (buildGolden), and the seal removes such entries as well, together
//     with cloud-init's ("comment=cloudconfig"), should the image use cloud-init.
//   - the machine-id, which every box from the base must generate for itself;
//   - systemd's random seed, which would otherwise be the same in every box;
//   - git shadow state, which is per checkout.
//
// The seal is the build box's last provision script, so it runs as root at the end of its first
// boot in every network mode (in broker and offline modes the box user has no sudo to run it
// with afterwards), and it records the provision scripts that failed before it. After READY the
// host checks, as the box user, that the boot finished, the seal ran and nothing failed.

// goldenSealName names the seal among the build box's provision scripts; it sorts last.
const goldenSealName = "99-golden-seal.sh"

// Files the seal leaves in the build box's /run for the host's check.
const (
	goldenSealedFile   = "/run/corral/golden-sealed"
	goldenFailuresFile = "/run/corral/golden-build-failures"
)

// sealScript returns the shell commands that remove the build box's own state from the disk
// mounted at root ("" for the running build box itself; a directory in tests).
func sealScript(root string) string {
	return strings.Join([]string{
		"set -eu",
		"R=" + shellQuote(root),
		`: >"$R/etc/machine-id"`,
		`rm -f "$R/var/lib/systemd/random-seed"`,
		`if [ -f "$R/etc/fstab" ]; then sed -i -e '/# lima-init$/d' -e '/comment=cloudconfig/d' "$R/etc/fstab"; fi`,
		`rm -rf "$R/var/lib/corral/gitshadow"`,
		"sync",
		"echo 'corral: golden base sealed'",
		"",
	}, "\n")
}

// sealPreamble starts both seals: it records the provision scripts that failed before it.
const sealPreamble = `set -eu
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH
install -d -m 0755 /run/corral
{ journalctl --sync 2>/dev/null || true; journalctl -b -o cat --no-pager 2>/dev/null || true; } |
	{ grep 'WARNING: Failed to execute' || true; } >` + goldenFailuresFile + `
chmod 0644 ` + goldenFailuresFile + `
`

// sealDisk stops the random seed service (which writes the seed again when it stops), seals the
// running box's disk in a subshell and marks the seal done.
var sealDisk = "systemctl stop systemd-random-seed.service 2>/dev/null || true\n(\n" + sealScript("") + ")\n: >" + goldenSealedFile + "\n"

// goldenSealScript is the build box's last provision script: it notes which provision scripts
// failed before it (Lima's boot.sh goes on past a failed one), stops the random seed service
// (which writes the seed again when it stops), seals, and marks the seal done.
func goldenSealScript() provision.Script {
	body := `#!/bin/sh
# git corral: seal the golden build box's disk before it is stopped and flattened (vm/golden_seal.go).
` + sealPreamble + sealDisk
	return provision.Script{Name: goldenSealName, Mode: provision.ModeSystem, Body: body}
}

// goldenBootCheck runs as the build box's user after READY: the boot must have finished
// (lima-init-boot.service active, on lima-init images: READY does not wait for it to exit), the
// seal must have run, and no provision script may have failed.
const goldenBootCheck = `set -u
unit=lima-init-boot.service
if systemctl cat "$unit" >/dev/null 2>&1; then
	i=0
	while [ "$(systemctl show -p ActiveState --value "$unit")" = activating ] && [ "$i" -lt 120 ]; do
		sleep 1
		i=$((i + 1))
	done
	state=$(systemctl show -p ActiveState --value "$unit")
	[ "$state" = active ] || { echo "corral: golden build box: $unit is $state" >&2; cat ` + goldenFailuresFile + ` >&2 2>/dev/null; exit 1; }
fi
[ -f ` + goldenSealedFile + ` ] || { echo "corral: golden build box: the seal did not run" >&2; exit 1; }
if [ -s ` + goldenFailuresFile + ` ]; then
	echo "corral: golden build box: provisioning failed:" >&2
	cat ` + goldenFailuresFile + ` >&2
	exit 1
fi
echo "corral: golden build box provisioned and sealed"
`

// checkGoldenBuild runs goldenBootCheck in the running build box name.
func (m *Manager) checkGoldenBuild(ctx context.Context, name, key string) error {
	if err := m.run(ctx, name, nil, "shell", "--workdir", "/", name, "sh", "-c", goldenBootCheck); err != nil {
		return fmt.Errorf("build golden base %s: the build box was not provisioned and sealed (its log says why): %w", key, err)
	}
	return nil
}
