package inside

// Noexec rules: Landlock's execute right governs execve only; the kernel maps a file as code
// (mmap or mprotect with PROT_EXEC, which is all the dynamic loader needs to run a program it
// is handed, or a library LD_PRELOAD names) whenever it can be read, unless its mount is noexec.
// So the exec step, before anything of the command runs:
//   - enters a mount namespace of its own (bubblewrap's belongs to a user namespace above the
//     sandbox's, and --disable-userns keeps it so), with CAP_SYS_ADMIN in the sandbox's user
//     namespace, which bubblewrap gives it (--cap-add) and root's steps have anyway;
//   - makes every mount noexec but those at or under an ExecRoot whose nearest enclosing
//     grant is not fs.read, fs.write or /tmp (execMount), and then reads the mount table again
//     and fails unless each of them says noexec;
//   - drops every capability (bounding set, ambient, permitted, effective, inheritable) and
//     checks that none is left;
//   - loads the whole seccomp filter (Spec.Filter), which refuses mount and unshare from then
//     on, over bubblewrap's setup filter (sandbox.SetupSeccompProgram: the same but for unshare,
//     mount and mount_setattr), so that no process in the sandbox ever runs without a filter.
// The init step, which stays outside that namespace, drops its capabilities and loads the whole
// filter as soon as it has started the exec step, before the exec step gets its spec.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
	"kernel.org/pub/linux/libs/security/libcap/psx"
)

// fenceExec runs the exec step's part of the rules above. It locks the calling goroutine to
// its thread for good: the new mount namespace and the dropped capabilities are that thread's,
// and the command is exec'd from it.
func fenceExec(spec Spec) error {
	runtime.LockOSThread()
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("enter a mount namespace of its own for the noexec mounts: %w", err)
	}
	if err := remountNoexec(spec); err != nil {
		return err
	}
	if err := dropCaps(unix.Prctl, capset); err != nil {
		return err
	}
	return loadFilter(spec.Filter)
}

// fenceInit drops the init step's capabilities on every thread and loads the filter.
func fenceInit(filter []byte) error {
	prctl := func(op int, a2, a3, a4, a5 uintptr) error {
		if _, _, e := psx.Syscall6(unix.SYS_PRCTL, uintptr(op), a2, a3, a4, a5, 0); e != 0 {
			return e
		}
		return nil
	}
	set := func(h *unix.CapUserHeader, d *unix.CapUserData) error {
		if _, _, e := psx.Syscall3(unix.SYS_CAPSET, uintptr(unsafe.Pointer(h)), uintptr(unsafe.Pointer(d)), 0); e != 0 {
			return e
		}
		return nil
	}
	if err := dropCaps(prctl, set); err != nil {
		return err
	}
	return loadFilter(filter)
}

// mountEntry is one line of mountinfo: where the mount is and its per-mount options.
type mountEntry struct {
	point string
	opts  []string
}

// remountNoexec makes every mount that execMount does not keep noexec, then checks it.
func remountNoexec(spec Spec) error {
	data := append(append(append([]string{}, spec.Read...), spec.Write...), "/tmp")
	mounts, err := readMounts()
	if err != nil {
		return err
	}
	for _, m := range mounts {
		if execMount(m.point, spec.ExecRoots, data) || hasOpt(m, "noexec") {
			continue
		}
		if err := setNoexec(m); err != nil {
			return fmt.Errorf("make the mount %q noexec: %w", m.point, err)
		}
	}
	if mounts, err = readMounts(); err != nil {
		return err
	}
	for _, m := range mounts {
		if !execMount(m.point, spec.ExecRoots, data) && !hasOpt(m, "noexec") {
			return fmt.Errorf("the mount %q is still executable after the noexec remount", m.point)
		}
	}
	return nil
}

// execMount reports whether the mount at point stays executable: the nearest of execRoots and
// dataRoots at or above it is an exec root (an exec root wins a tie, as exec.allow naming a
// grant itself does). A mount under no root (the sandbox's own /, /proc, /dev, /etc files,
// /run/corral) is noexec.
func execMount(point string, execRoots, dataRoots []string) bool {
	e, d := Nearest(point, execRoots), Nearest(point, dataRoots)
	return e != "" && len(e) >= len(d)
}

func hasOpt(m mountEntry, opt string) bool {
	for _, o := range m.opts {
		if o == opt {
			return true
		}
	}
	return false
}

// setNoexec adds noexec to the mount at m.point and changes nothing else; before mount_setattr
// (Linux 5.12) it remounts with the flags it has, which the kernel requires of a mount locked
// by a less privileged user namespace.
func setNoexec(m mountEntry) error {
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOEXEC}
	err := unix.MountSetattr(unix.AT_FDCWD, m.point, unix.AT_SYMLINK_NOFOLLOW, &attr)
	if !errors.Is(err, unix.ENOSYS) {
		return err
	}
	flags := uintptr(unix.MS_REMOUNT | unix.MS_BIND | unix.MS_NOEXEC)
	for _, o := range m.opts {
		flags |= map[string]uintptr{"ro": unix.MS_RDONLY, "nosuid": unix.MS_NOSUID, "nodev": unix.MS_NODEV,
			"noatime": unix.MS_NOATIME, "nodiratime": unix.MS_NODIRATIME, "relatime": unix.MS_RELATIME,
			"strictatime": unix.MS_STRICTATIME}[o]
	}
	return unix.Mount("", m.point, "", flags, "")
}

// readMounts reads this thread's mount table (its namespace may not be the process's).
func readMounts() ([]mountEntry, error) {
	f, err := os.Open("/proc/thread-self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read the sandbox's mounts: %w", err)
	}
	defer f.Close()
	return parseMountinfo(f)
}

// parseMountinfo reads mountinfo(5): the mount point is the fifth field (octal escapes for
// space, tab, newline and backslash), the per-mount options the sixth.
func parseMountinfo(r io.Reader) ([]mountEntry, error) {
	var out []mountEntry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 {
			return nil, fmt.Errorf("mountinfo line %q: fewer than 6 fields", sc.Text())
		}
		point, err := unescapeMountinfo(f[4])
		if err != nil {
			return nil, err
		}
		out = append(out, mountEntry{point: point, opts: strings.Split(f[5], ",")})
	}
	return out, sc.Err()
}

func unescapeMountinfo(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i+4 > len(s) {
			return "", fmt.Errorf("mountinfo path %q: cut escape", s)
		}
		n, err := strconv.ParseUint(s[i+1:i+4], 8, 8)
		if err != nil {
			return "", fmt.Errorf("mountinfo path %q: bad escape: %w", s, err)
		}
		b.WriteByte(byte(n))
		i += 3
	}
	return b.String(), nil
}

// dropCaps empties every capability set of the thread (of every thread, with psx calls) and
// checks the result with capget: the bounding set first (it needs CAP_SETPCAP), then ambient,
// then permitted, effective and inheritable.
func dropCaps(prctl func(int, uintptr, uintptr, uintptr, uintptr) error, set func(*unix.CapUserHeader, *unix.CapUserData) error) error {
	last := lastCap()
	for c := 0; c <= last; c++ {
		if err := prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	if err := prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear the ambient capabilities: %w", err)
	}
	var data [2]unix.CapUserData
	if err := set(&unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}, &data[0]); err != nil {
		return fmt.Errorf("drop every capability: %w", err)
	}
	if left := capsLeft(last); left != "" {
		return fmt.Errorf("capabilities left after dropping them all: %s", left)
	}
	return nil
}

func capset(h *unix.CapUserHeader, d *unix.CapUserData) error { return unix.Capset(h, d) }

// lastCap is the kernel's highest capability number.
func lastCap() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if n, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil {
		return n
	}
	return 63
}

// capsLeft describes the capabilities the calling thread still has, "" when none.
func capsLeft(last int) string {
	var data [2]unix.CapUserData
	if err := unix.Capget(&unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}, &data[0]); err != nil {
		return "capget: " + err.Error()
	}
	var left []string
	for _, d := range data {
		if d.Effective|d.Permitted|d.Inheritable != 0 {
			left = append(left, fmt.Sprintf("%#x/%#x/%#x", d.Effective, d.Permitted, d.Inheritable))
		}
	}
	for c := 0; c <= last; c++ {
		if in, _ := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0); in != 0 {
			left = append(left, "bounding "+strconv.Itoa(c))
		}
		if in, _ := unix.PrctlRetInt(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_IS_SET, uintptr(c), 0, 0); in != 0 {
			left = append(left, "ambient "+strconv.Itoa(c))
		}
	}
	return strings.Join(left, ", ")
}

// loadFilter installs the seccomp program (raw sock_filter records, as sandbox.SeccompProgram
// makes them) on every thread of the process, with no_new_privs, as bubblewrap's --seccomp would.
func loadFilter(prog []byte) error {
	if len(prog) == 0 || len(prog)%8 != 0 {
		return fmt.Errorf("seccomp filter of %d bytes: not whole sock_filter records", len(prog))
	}
	insns := make([]unix.SockFilter, len(prog)/8)
	if err := binary.Read(bytes.NewReader(prog), binary.NativeEndian, insns); err != nil {
		return fmt.Errorf("seccomp filter: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(insns)), Filter: &insns[0]}
	r, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	if e != 0 {
		return fmt.Errorf("load the seccomp filter: %w", e)
	}
	if r != 0 {
		return fmt.Errorf("load the seccomp filter: thread %d could not take it", r)
	}
	runtime.KeepAlive(insns)
	return nil
}
