package vm

import (
	"context"
	"fmt"
	"strings"
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

// goldenBootCheck refuses to seal a base whose first-boot provisioning failed: lima-init runs
// Lima's boot scripts and the provision scripts in lima-init-boot.service, which READY does not
// wait to see exit. (Images with cloud-init have no such unit and are not checked here.)
const goldenBootCheck = `set -eu
if systemctl cat lima-init-boot.service >/dev/null 2>&1; then
	i=0
	while [ "$(systemctl show -p ActiveState --value lima-init-boot.service)" = activating ] && [ "$i" -lt 120 ]; do
		sleep 1
		i=$((i + 1))
	done
	state=$(systemctl show -p ActiveState --value lima-init-boot.service)
	if [ "$state" != active ]; then
		echo "corral: the golden build box's provisioning did not succeed (lima-init-boot.service is $state):" >&2
		journalctl -b -u lima-init-boot.service --no-pager 2>/dev/null | grep -E 'WARNING|corral|gitshadow' | tail -n 10 >&2 || true
		exit 1
	fi
fi
# The seed is written again when its service stops: stop it first, then remove it.
systemctl stop systemd-random-seed.service 2>/dev/null || true
`

// sealScript returns the shell script that removes the build box's own state from the disk
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

// sealGolden runs the boot check and the seal as root in the running build box name.
func (m *Manager) sealGolden(ctx context.Context, name, key string) error {
	script := goldenBootCheck + sealScript("")
	if err := m.run(ctx, name, nil, "shell", "--workdir", "/", name, "sudo", "sh", "-c", script); err != nil {
		return fmt.Errorf("build golden base %s: seal the build box: %w", key, err)
	}
	return nil
}
