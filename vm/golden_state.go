package vm

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/lima-vm/lima/pkg/limayaml"

	"github.com/git-corral/git-corral/internal/atomicfile"
	"github.com/git-corral/git-corral/provision"
)

// A golden state is the golden build box's memory, saved at the end of its boot, next to its disk. Under
// software emulation a box's boot (kernel, systemd, Lima's and git corral's per-boot scripts) is
// most of the time to a ready box, and a disk base cannot skip it; a new box that resumes the
// build box's memory skips all of it.
//
// How it fits together:
//
//   - The build box has the same QEMU devices as the boxes that will resume it: one 9p mount
//     (mount0) at the project's path, whose host side is an empty directory of git corral's, and
//     a VM generation ID device (-device vmgenid, added by the QEMU wrapper below).
//   - Its last provision script (stateSealScript) seals the disk as for a disk-only base,
//     unmounts the build mount (QEMU refuses to save a VM whose 9p export is mounted, REPORT.md
//     quirk 7), notes the cidata disc's identity, prints a ready line with a nonce on the serial
//     console, and waits — inside Lima's boot.sh, before it has written /run/lima-boot-done.
//   - The host sees the line in serial.log, stops the VM and saves it through QMP ("migrate" to
//     a file, qmpSaveState), then ends QEMU; the disk is flattened as for a disk-only base, so
//     disk and memory are from the same instant.
//   - A new box gets its disk overlays from the base and, at its first start only, QEMU runs
//     with "-incoming" from the state. The guest goes on where the build box stopped: the waiting
//     script sees a different cidata disc (each box's own, with its hostname, mounts and
//     scripts), and does for the new box what a boot would have done differently: the clock from
//     the RTC, the new cidata (hostname, keys, the project's 9p mount through lima-init), in a
//     full box Lima's DNS NAT to this box's host resolver (a new port at every start), the
//     project mount's nosuid, and every provision script of the new box that is not one of the
//     recipe's (the git shadow, the repository's own), which already ran in this memory. Then
//     boot.sh finishes and writes /run/lima-boot-done for this box, and Lima says READY.
//   - The guest kernel reseeds its random number generator when the VM generation ID changes
//     (Linux ≥ 5.18), so boxes resumed from one state do not share a random stream. They do
//     share what the build box's boot made in memory: boot id, the running services' machine id
//     (the file gets a fresh one), SSH host keys (also with a disk-only base); SECURITY.md says so.
//   - Only a box made by the same Lima as the build box resumes (resumable), and the state
//     fixes the CPUs and memory, which are in the base's key.
//   - If QEMU cannot resume (another QEMU, memory or device set), the box boots from the disk
//     base instead (disk-only golden), with fresh overlays.

// Files of a golden state and of a box's first resume.
const (
	// GoldenStateFile is the saved memory of the build box, in the golden directory.
	GoldenStateFile = "golden.state"
	// resumeFile, in a box's instance directory, says that its next start resumes a golden state.
	resumeFile = "corral-resume.json"
	// qemuWrapperFile is the QEMU wrapper under $CORRAL_HOME/libexec.
	qemuWrapperFile = "qemu-system-x86_64"
)

// stateReadyLine and stateFailedLine start the serial console lines of the build box's seal.
const (
	stateReadyLine       = "corral-golden-state: ready "
	stateFailedLine      = "corral-golden-state: failed "
	stateUnsupportedLine = "corral-golden-state: unsupported "
)

// qemuWrapper is Lima's QEMU for golden build boxes and boxes resumed from a golden state. Lima
// runs it for its probes too (-version, "-M none -netdev help"); only the VM itself (the one run
// with -pidfile) gets the extra arguments. The state path reaches QEMU's exec: migration command
// through the environment, so no path is ever parsed by a shell.
const qemuWrapper = `#!/bin/sh
# git corral: QEMU for golden build boxes and boxes resumed from a golden state (vm/golden_state.go).
case " $* " in
*" -pidfile "*)
	# A box that mounts nothing resuming a state built with a checkout's devices (the project,
	# the agent store and state): those devices, in the build box's place (Lima adds its -virtfs
	# last), each behind the same empty read-only directory.
	if [ -n "${CORRAL_QEMU_EMPTY_MOUNT:-}" ]; then
		i=0
		while [ "$i" -lt "${CORRAL_QEMU_EMPTY_MOUNTS:-1}" ]; do
			set -- "$@" -virtfs "local,mount_tag=mount$i,path=$CORRAL_QEMU_EMPTY_MOUNT,security_model=none,readonly=on"
			i=$((i + 1))
		done
	fi
	if [ "${CORRAL_QEMU_VMGENID:-}" = 1 ]; then
		set -- "$@" -device vmgenid -global migration.store-global-state=off
	fi
	if [ -n "${CORRAL_QEMU_STATE:-}" ]; then
		set -- "$@" -incoming 'exec:cat -- "$CORRAL_QEMU_STATE"'
	fi
	;;
esac
exec qemu-system-x86_64 "$@"
`

// qemuEnv is the environment for a limactl start through the wrapper: the VM generation ID
// always, and the state to resume when state is set.
func (m *Manager) qemuEnv(state string) ([]string, error) {
	dir := m.Home.Libexec()
	if err := m.Home.MkdirAll(dir); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, qemuWrapperFile)
	if b, err := os.ReadFile(path); err != nil || string(b) != qemuWrapper {
		if err := atomicfile.Write(path, []byte(qemuWrapper), 0o755); err != nil {
			return nil, fmt.Errorf("write QEMU wrapper: %w", err)
		}
	}
	if strings.ContainsAny(path+state, "\x00\n\r") {
		return nil, fmt.Errorf("QEMU wrapper or state path contains a newline: %q %q", path, state)
	}
	q := shellQuote(path)
	if m.TCG {
		q += strings.TrimPrefix(TCGQemu, "qemu-system-x86_64")
	}
	env := []string{"QEMU_SYSTEM_X86_64=" + q, "CORRAL_QEMU_VMGENID=1"}
	if state != "" {
		env = append(env, "CORRAL_QEMU_STATE="+state)
	}
	return env, nil
}

// stateCapable reports whether a box rendered as r can share a golden state: QEMU with the
// project on 9p and no extra or git mount (the device set of the build box), and no cover
// script (Rendered.Cover). A box that mounts nothing of the host (clone mode) can too: at the
// resume, QEMU gets the build box's project device back with an empty, read-only directory of
// git corral's behind it, and the agent devices likewise (emptyMountDevices), none of which the
// guest mounts.
func stateCapable(r Rendered, noProjectMount bool) bool {
	return r.MountType == limayaml.NINEP && runtime.GOOS == "linux" && r.ExtraMounts == 0 && r.GitMounts == 0 && !r.Cover
}

// emptyMountDevices is how many 9p devices a box that mounts nothing gets at its resume: those
// of the checkout's box the base was built for (the project, the agent store, the agent state).
const emptyMountDevices = 3

// buildMountPoint is where a golden build box made for a box that mounts nothing (clone mode)
// mounts its empty directory: not the clone's own path, which its checkout takes in the box.
const buildMountPoint = "/mnt/corral-golden-build"

// emptyMount is the empty directory behind a clone-mode box's project device at its resume
// (emptyMountDevices): made read-only and checked empty before every use.
func (m *Manager) emptyMount() (string, error) {
	dir := filepath.Join(m.GoldenRoot(), ".empty-mount")
	if err := m.Home.MkdirAll(m.GoldenRoot()); err != nil {
		return "", err
	}
	if err := os.Mkdir(dir, 0o555); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() || fi.Mode().Perm()&0o222 != 0 {
		return "", fmt.Errorf("%s is not a read-only directory (mode %v): remove it, git corral makes it again", dir, fi.Mode())
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	if len(ents) > 0 {
		return "", fmt.Errorf("%s is not empty: remove it, git corral makes it again", dir)
	}
	// QEMU's option syntax takes a comma as the end of the value.
	if strings.ContainsAny(dir, ",\x00\n\r") {
		return "", fmt.Errorf("the empty mount directory %q contains a comma or a newline, which QEMU's -virtfs cannot take", dir)
	}
	return dir, nil
}

// newNonce returns 16 random hex digits.
func newNonce() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// scriptHashes returns the sha256 of every script body, sorted.
func scriptHashes(scripts []provision.Script) []string {
	var out []string
	for _, s := range scripts {
		sum := sha256.Sum256([]byte(s.Body))
		out = append(out, hex.EncodeToString(sum[:]))
	}
	sort.Strings(out)
	return out
}

// cidataPad is a comment in the seal script that makes the build box's cidata disc larger than
// any box's that resumes it: the resumed guest keeps the build disc's capacity, so a larger disc
// would read short (seen on a real box: a repository provision script at the disc's end ran
// cut off, "end of file unexpected"). The resume refuses a disc larger still. 1 MiB: Lima
// refuses a template over 4 MiB (limatmpl's yBytesLimit). A function, not a package-level
// string: built at start, the 1 MiB was the largest cost of every git corral command's start.
func cidataPad() string {
	return strings.Repeat("# corral-cidata-pad "+strings.Repeat("-", 80)+"\n", 1<<20/101)
}

// stateSealScript is the state build box's last provision script; see the package comment above.
// recipe lists the sha256 of the recipe's provision scripts, which have run in the saved memory
// and are not run again at a resume.
func stateSealScript(nonce, projectDir string, recipe []string) provision.Script {
	resume := `#!/bin/sh
# git corral: wait for the resume of this golden state in a new box, then adapt to it
# (vm/golden_state.go). Runs as root inside Lima's boot.sh, from /run.
set -u
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH
NONCE=` + nonce + `
PROJECT_DIR=` + shellQuote(projectDir) + `
RECIPE=' ` + strings.Join(recipe, " ") + ` '
say() { echo "corral-golden-state: $1 $NONCE" >/dev/console; echo "corral: golden state: $1${2:+: $2}"; }
# The host waits for one of: "` + stateReadyLine + nonce + `", "` + stateFailedLine + nonce + `".
for d in "$PROJECT_DIR" ` + AgentStoreGuest + ` ` + AgentStateGuest + `; do
	umount -R "$d" 2>/dev/null || true
	if mountpoint -q "$d"; then
		say failed "the build mount $d cannot be unmounted"
		exit 1
	fi
done
old=$(blkid -p -s UUID -o value /dev/sr0 2>/dev/null) || old=
if [ -z "$old" ]; then
	say failed "the cidata disc has no UUID"
	exit 1
fi
sync
say ready
# The host saves the VM now. What follows runs only in a new box resumed from the state, where
# the cidata disc is that box's own.
while :; do
	sleep 0.3
	blockdev --flushbufs /dev/sr0 2>/dev/null || true
	new=$(blkid -p -s UUID -o value /dev/sr0 2>/dev/null) || new=
	if [ -n "$new" ] && [ "$new" != "$old" ]; then
		break
	fi
done
echo "corral: resumed from a golden state"
# The build box's Lima was polling for boot.sh's end when its state was saved: that loop (a sudo
# every 3 s for up to 30 s) goes on in this memory for a host agent that is gone, and takes CPU
# from this resume. Lima's poll for this box starts only after /run/lima-ssh-ready, below.
pkill -f 'diff -q /run/lima-boot-done' 2>/dev/null || true
hwclock --hctosys 2>/dev/null || echo "corral: WARNING: cannot set the clock from the RTC"
echo "corral: cidata disc $old -> $new, $(blockdev --getsize64 /dev/sr0) bytes"
echo 1 >/sys/class/block/sr0/device/rescan 2>/dev/null || true
umount -l /mnt/lima-cidata 2>/dev/null || true
blockdev --flushbufs /dev/sr0 2>/dev/null || true
# A new mount of /dev/sr0 would get the build box's superblock back, with its cached files:
# boot.sh, which is still running, holds a file of it open. The new disc is read through a loop
# device instead (its own superblock), uncached; lima-init then finds the mount in place.
modprobe loop 2>/dev/null || true
loopdev=$(losetup -r --direct-io=on --sector-size 2048 -f --show /dev/sr0) || { echo "corral: cannot attach the cidata disc to a loop device" >&2; exit 1; }
# The disc keeps the capacity of the build box's disc (a rescan does not change it): a larger
# disc of this box would read short, and a provision script at its end would run cut off. The
# build box's disc is padded (cidataPad) so that this does not happen; a disc larger still
# stops here, before anything of it runs.
vol=$(od -An -tu4 -j 32848 -N4 "$loopdev" | tr -d ' ') || vol=0
need=$((vol * 2048))
have=$(blockdev --getsize64 "$loopdev")
if [ "$need" -eq 0 ] || [ "$have" -lt "$need" ]; then
	echo "corral: the cidata disc reads $have bytes of its $need: this box cannot resume the golden state ('git corral delete --yes', then start with --no-golden)" >&2
	exit 1
fi
install -d -m 0700 /mnt/lima-cidata
mount -o ro,mode=0700,dmode=0700,overriderockperm,exec,uid=0 "$loopdev" /mnt/lima-cidata || { echo "corral: cannot mount the new cidata disc" >&2; exit 1; }
grep -q "$(hostname)" /mnt/lima-cidata/meta-data && { echo "corral: the cidata disc still names the build box" >&2; exit 1; }
echo "corral: cidata $(sed -n 's/^local-hostname: *//p' /mnt/lima-cidata/meta-data), $(blockdev --getsize64 "$loopdev") bytes"
# lima-init early ends its fstab work with "systemctl daemon-reload" so that systemd makes units
# of the new entries. Under software emulation that reload took 2.3 s of a 13 s resume, and
# systemd answers nothing meanwhile (logind cannot open the SSH sessions Lima is waiting on). A
# resumed box needs no such units: lima-init mounts the entries itself ("mount -a"), systemd
# follows live mounts as they appear, and the next boot makes the units from the fstab. Here the
# reload is skipped, through a systemctl on PATH that ignores exactly that one call. (Its
# directory is root's, on the disk: /run is mounted noexec, and a shell that cannot execute a
# file on PATH goes on to the next directory's.)
install -d -m 0755 /var/lib/corral
shim=$(mktemp -d /var/lib/corral/resume.XXXXXX) || { echo "corral: cannot make a directory in /var/lib/corral" >&2; exit 1; }
printf '%s\n' '#!/bin/sh' '[ "$*" = daemon-reload ] && exit 0' 'exec /usr/bin/systemctl "$@"' >"$shim/systemctl"
chmod 0755 "$shim/systemctl"
PATH="$shim:$PATH" /usr/local/sbin/lima-init early || { rm -rf "$shim"; echo "corral: lima-init early failed" >&2; exit 1; }
rm -rf "$shim"
# lima-init rewrote /etc/fstab, the hostname and the keys for this box moments ago: a box killed
# within ext4's writeback delay would boot next with an fstab of NUL bytes and no project.
sync
# This box's project (a base serves every project of its recipe): lima-init's fstab entries.
# A box whose cidata names no mount (clone mode) has none, and no 9p mount at all: QEMU's
# project device is there only for the resume, behind an empty read-only directory. (The
# variable's name is matched without Lima's prefix, as for the DNS port below.)
BOX_DIRS=$(awk '/# lima-init$/ && $3 == "9p" { print $2 }' /etc/fstab)
want=$(sed -n 's/^[A-Z_]*_CIDATA_MOUNTS=\([0-9][0-9]*\)$/\1/p' /mnt/lima-cidata/lima.env)
if [ "$want" = 0 ]; then
	if [ -n "$BOX_DIRS" ] || awk '$3 == "9p" { found = 1 } END { exit !found }' /proc/mounts; then
		echo "corral: this box mounts nothing of the host, and a 9p mount is in its fstab or mounted" >&2
		exit 1
	fi
	echo "corral: this box mounts nothing of the host"
elif [ -z "$want" ] || [ -z "$BOX_DIRS" ]; then
	echo "corral: this box mounts no project (its cidata names '$want' mounts)" >&2
	exit 1
fi
for d in $BOX_DIRS; do
	mountpoint -q "$d" || { echo "corral: the project is not mounted at $d" >&2; exit 1; }
done
# The seal emptied /etc/machine-id for boxes that boot from the base; this box gets its own now
# (the kernel has reseeded its RNG from the new VM generation ID). Running services keep the
# build box's until the box's next boot.
if [ ! -s /etc/machine-id ]; then
	od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >/etc/machine-id.tmp && echo >>/etc/machine-id.tmp && mv -f /etc/machine-id.tmp /etc/machine-id
fi
if [ "$(cat /etc/corral/mode 2>/dev/null)" = full ]; then
	CIDATA=/mnt/lima-cidata
` + resumeDNS + `fi
if [ "$(cat /etc/corral/mode 2>/dev/null)" != full ]; then
	# What 30-privdrop does at a boot for the mount and the sudoers entry lima-init rewrote.
	for d in $BOX_DIRS; do
		mount -o remount,nosuid,nodev "$d"
	done
	rm -f /etc/sudoers.d/90-cloud-init-users /etc/sudoers.d/90-lima-user
fi
code=0
for f in /mnt/lima-cidata/provision.system/*; do
	[ -f "$f" ] || continue
	sum=$(sha256sum <"$f" | cut -d' ' -f1)
	case "$RECIPE" in *" $sum "*) continue ;; esac
	echo "corral: executing $f"
	if ! "$f"; then
		echo "WARNING: Failed to execute $f"
		code=1
	fi
done
sync
# Only now may Lima's readiness probe for the user session go on. Lima polls it, and then
# boot.sh's end (/run/lima-boot-done), each every 3 s; written here, just before boot.sh ends,
# the second poll finds its file at once, and the resume waits for one poll, not two.
cp /mnt/lima-cidata/meta-data /run/lima-ssh-ready
# That poll sleeps 3 s between looks (a "sleep 3" child of its "until" loop, which starts as soon
# as this box's key lets Lima in, mid-resume): the sleep is ended here, so that the poll looks
# again at once instead of up to 3 s later. Only the sleep children of that loop are ended.
for p in $(pgrep -f 'until sudo diff -q /run/lima-ssh-ready' 2>/dev/null); do
	pkill -x -P "$p" sleep 2>/dev/null || true
done
echo "corral: golden state adapted to this box"
exit "$code"
`
	body := `#!/bin/sh
# git corral: seal the golden build box and let the host save its running state (vm/golden_state.go).
` + cidataPad() + `
` + sealPreamble + `if [ -s ` + goldenFailuresFile + ` ]; then
	echo "` + stateFailedLine + nonce + `" >/dev/console
	cat ` + goldenFailuresFile + ` >/dev/console
	exit 1
fi
resumable=1
if [ ! -x /usr/local/sbin/lima-init ] || [ ! -b /dev/sr0 ] || ! command -v blkid >/dev/null || ! command -v hwclock >/dev/null; then
	# Not an image this resume knows: a disk-only base (the build box goes on to READY).
	resumable=0
fi
` + sealDisk + `if [ "$resumable" = 0 ]; then
	echo "` + stateUnsupportedLine + nonce + `" >/dev/console
	exit 0
fi
cat >/run/corral/golden-resume <<'CORRAL_RESUME_EOF'
` + resume + `CORRAL_RESUME_EOF
chmod 0700 /run/corral/golden-resume
exec /bin/sh /run/corral/golden-resume
`
	return provision.Script{Name: goldenSealName, Mode: provision.ModeSystem, Body: body}
}

// resumeDNS is the resume's step for Lima's DNS NAT in a full box, run with CIDATA set to the new
// box's cidata. Lima's host resolver listens on a new port at every start of a box, and the NAT
// the build box's boot made (boot/09-host-dns-setup.sh) points at the build box's port, where
// nothing answers, or something else does: that boot script runs again with this box's
// lima.env. (A locked box has no host resolver, and its lockdown owns the whole ruleset.)
const resumeDNS = `	dns=$CIDATA/boot/09-host-dns-setup.sh
	if [ -f "$dns" ]; then
		# shellcheck disable=SC2163 # export each NAME=VALUE line, as Lima's boot.sh does
		if ! (while read -r line; do [ -n "$line" ] && export "$line"; done <"$CIDATA/lima.env" && sh "$dns" >/dev/null 2>&1); then
			echo "corral: cannot point Lima's DNS NAT at this box's host resolver ($dns failed)" >&2
			exit 1
		fi
		# The variable's name is matched without Lima's prefix: Lima's validator warns on the
		# terminal about any provision script that names its LIMA_ CIDATA variables.
		echo "corral: DNS NAT to this box's host resolver, port $(sed -n 's/^[A-Z_]*_UDP_DNS_LOCAL_PORT=//p' "$CIDATA/lima.env")"
	fi
`

// waitSerial waits for the build box's seal to print its line with nonce on the serial console
// (serial.log), and returns which: stateReadyLine, stateFailedLine or stateUnsupportedLine. It
// gives up when start ends first (the box did not get that far) or ctx ends.
func waitSerial(ctx context.Context, log, nonce string, start <-chan error) (string, error) {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		if b, err := os.ReadFile(log); err == nil {
			for _, l := range []string{stateReadyLine, stateFailedLine, stateUnsupportedLine} {
				if bytes.Contains(b, []byte(l+nonce)) {
					return l, nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case err := <-start:
			if err == nil {
				err = errors.New("the box became ready without its seal's line")
			}
			return "", err
		case <-tick.C:
		}
	}
}

// qmpSaveState stops the VM behind the QMP socket sock, saves it into dest ("migrate" to a
// file) and ends QEMU. The VM is stopped first: a live migration under multi-threaded TCG once
// saved a state whose kernel then spun in the slab allocator on one vCPU (a write the dirty
// tracking missed, most likely); a stopped VM is saved in one consistent pass. Because the build
// box's QEMU runs with migration.store-global-state=off (qemuWrapper), the saved state carries no
// run state, and a QEMU that loads it starts the VM as if it had been running.
func qmpSaveState(ctx context.Context, sock, dest string) error {
	if strings.ContainsAny(dest, "\x00\n\r") {
		return fmt.Errorf("state path %q contains a newline", dest)
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		return fmt.Errorf("QMP: %w", err)
	}
	defer c.Close()
	deadline := time.Now().Add(10 * time.Minute)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = c.SetDeadline(deadline)
	dec := json.NewDecoder(c)
	read := func() (map[string]json.RawMessage, error) {
		for {
			var msg map[string]json.RawMessage
			if err := dec.Decode(&msg); err != nil {
				return nil, err
			}
			if _, ev := msg["event"]; !ev {
				return msg, nil
			}
		}
	}
	exec := func(cmd string, args any) (json.RawMessage, error) {
		req := map[string]any{"execute": cmd}
		if args != nil {
			req["arguments"] = args
		}
		b, _ := json.Marshal(req)
		if _, err := c.Write(append(b, '\n')); err != nil {
			return nil, err
		}
		msg, err := read()
		if err != nil {
			return nil, err
		}
		if e, ok := msg["error"]; ok {
			return nil, fmt.Errorf("QMP %s: %s", cmd, e)
		}
		return msg["return"], nil
	}
	if _, err := read(); err != nil { // greeting
		return fmt.Errorf("QMP: %w", err)
	}
	if _, err := exec("qmp_capabilities", nil); err != nil {
		return err
	}
	if _, err := exec("stop", nil); err != nil {
		return err
	}
	if _, err := exec("migrate", map[string]string{"uri": "exec:cat > " + shellQuote(dest)}); err != nil {
		return err
	}
	for {
		r, err := exec("query-migrate", nil)
		if err != nil {
			return err
		}
		var st struct {
			Status string `json:"status"`
			Error  string `json:"error-desc"`
		}
		_ = json.Unmarshal(r, &st)
		switch st.Status {
		case "completed":
			_, _ = exec("quit", nil)
			return nil
		case "failed", "cancelled":
			return fmt.Errorf("QMP: saving the VM %s: %s", st.Status, st.Error)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// resumePlan is what resumeFile holds: the state to resume and the disk base to fall back on.
type resumePlan struct {
	State  string `json:"state"`
	Golden string `json:"golden"`
	Key    string `json:"key"`
	// NoProjectMount: the box mounts nothing of the host, and QEMU gets empty devices in the
	// place of the build box's mounts for the resume (emptyMountDevices).
	NoProjectMount bool `json:"noProjectMount,omitempty"`
}

// planResume records that box's next start resumes g's state.
func planResume(instDir string, g Golden, noProjectMount bool) error {
	b, err := json.Marshal(resumePlan{State: g.StatePath(), Golden: g.DiskPath(), Key: g.Key, NoProjectMount: noProjectMount})
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(instDir, resumeFile), b, 0o600)
}

// takeResume returns and removes the resume plan of the box in instDir, if any: only a box's
// first start resumes.
func takeResume(instDir string) (resumePlan, bool) {
	p := filepath.Join(instDir, resumeFile)
	b, err := os.ReadFile(p)
	if err != nil {
		return resumePlan{}, false
	}
	_ = os.Remove(p)
	var rp resumePlan
	if json.Unmarshal(b, &rp) != nil || rp.State == "" || rp.Golden == "" {
		return resumePlan{}, false
	}
	return rp, true
}

// overlayDisks (re)creates a box's basedisk and diffdisk as overlays of the golden disk.
func overlayDisks(ctx context.Context, instDir, golden string) error {
	for _, d := range []string{"basedisk", "diffdisk"} {
		path := filepath.Join(instDir, d)
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err := qemuImg(ctx, "create", "-q", "-f", "qcow2", "-F", "qcow2", "-b", golden, path); err != nil {
			return err
		}
	}
	return nil
}

// resumeTimeout bounds a box's resume from a golden state before it boots instead.
const resumeTimeout = "6m"

// startResumed starts a box from the golden state in rp. When QEMU cannot resume it, the box is
// stopped, its disks made again from the base, and it boots from the disk base instead.
func (m *Manager) startResumed(ctx context.Context, box, instDir string, rp resumePlan, p *Progress) error {
	env, err := m.qemuEnv(rp.State)
	if err == nil && rp.NoProjectMount {
		var dir string
		if dir, err = m.emptyMount(); err == nil {
			env = append(env, "CORRAL_QEMU_EMPTY_MOUNT="+dir, fmt.Sprintf("CORRAL_QEMU_EMPTY_MOUNTS=%d", emptyMountDevices))
		}
	}
	if err == nil {
		var path string
		if path, err = m.retryingSSHPath(); err == nil {
			env = append(env, "PATH="+path)
		}
	}
	if err == nil {
		p.Phase("resume golden state")
		// A resume that works is ready in under a minute on a quiet machine, but at a load
		// average of 14 on 2 cores its guest answered SSH after 79 s and was not through its
		// provisioning at 120 s, so the old 2-minute limit threw a working resume away for a
		// boot that then took over 20 minutes. One that hangs still ends here before the boot.
		err = m.runWith(ctx, box, p, env, "start", "--timeout", resumeTimeout, box)
		if err == nil {
			return nil
		}
	}
	m.logf(box, "resuming golden state %s failed (%v); booting from the golden disk", rp.Key, err)
	_ = m.run(context.WithoutCancel(ctx), box, nil, "stop", "--force", box)
	if err := overlayDisks(ctx, instDir, rp.Golden); err != nil {
		return fmt.Errorf("start box %s: make its disks again after a failed resume: %w", box, err)
	}
	p.Phase("boot")
	return m.run(ctx, box, p, "start", "--timeout", "20m", box)
}

// retryingSSHPath returns a PATH whose first directory has an ssh that retries a refused
// connection once a second for 30 s. Lima's host agent runs "ssh" from PATH for its readiness
// probes; its first probe runs as QEMU starts, before QEMU listens, and the next only 10 s later,
// while a resumed guest answers within seconds. Used for a resumed start only.
func (m *Manager) retryingSSHPath() (string, error) {
	sshPath, err := exec.LookPath("ssh")
	if err != nil {
		return "", err
	}
	if sshPath, err = filepath.Abs(sshPath); err != nil {
		return "", err
	}
	if strings.ContainsAny(sshPath, "\x00\n\r") {
		return "", fmt.Errorf("ssh path %q contains a newline", sshPath)
	}
	dir := filepath.Join(m.Home.Libexec(), "resume-bin")
	if err := m.Home.MkdirAll(dir); err != nil {
		return "", err
	}
	body := "#!/bin/sh\n# git corral: ssh for Lima's readiness probes of a box resumed from a golden state (vm/golden_state.go).\nexec " + shellQuote(sshPath) + " -o ConnectionAttempts=30 \"$@\"\n"
	p := filepath.Join(dir, "ssh")
	if b, err := os.ReadFile(p); err != nil || string(b) != body {
		if err := atomicfile.Write(p, []byte(body), 0o755); err != nil {
			return "", err
		}
	}
	return dir + string(filepath.ListSeparator) + os.Getenv("PATH"), nil
}
