package inside

// Exec step rules: a fresh process inside the sandbox makes every mount but the programs'
// noexec in a mount namespace of its own, drops every capability and loads the seccomp filter
// (noexec_linux.go), sets the rlimits, enters the Landlock domain and execs the command; if any
// of that fails, the command does not run. The Landlock domain grants:
//   - listing directories anywhere in the sandbox's view (names, not contents);
//   - reading the system library and data directories and /etc, but not the program
//     directories (bin, sbin, libexec), so that the dynamic loader cannot be handed a program
//     that exec.allow does not list;
//   - reading and writing /dev/null, zero, full, random, urandom;
//   - reading fs.read, reading and writing fs.write and the scratch /tmp (no execution there,
//     and, as they are noexec mounts, no mapping as code either);
//   - reading and executing exec.allow, the command, and the dynamic loaders they name;
//   - on ABI 4 and later, TCP connect only to the broker relay's port and no TCP bind; on ABI 6
//     and later, no signals to and no abstract sockets of processes outside the domain.
// Landlock also stops ptrace (and /proc/PID/mem, environ) of any process outside the domain.

import (
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/git-corral/git-corral/internal/inherit"
)

// MinLandlockABI is the oldest Landlock ABI the sandbox uses (3: truncation is controlled).
const MinLandlockABI = 3

// Access right sets of the domain.
const (
	accRead  = landlock.AccessFSSet(ll.AccessFSReadFile | ll.AccessFSReadDir)
	accExec  = landlock.AccessFSSet(ll.AccessFSReadFile | ll.AccessFSExecute)
	accWrite = accRead | landlock.AccessFSSet(ll.AccessFSWriteFile|ll.AccessFSRemoveDir|
		ll.AccessFSRemoveFile|ll.AccessFSMakeDir|ll.AccessFSMakeReg|ll.AccessFSMakeSock|
		ll.AccessFSMakeFifo|ll.AccessFSMakeSym|ll.AccessFSRefer|ll.AccessFSTruncate)
	accDev = landlock.AccessFSSet(ll.AccessFSReadFile | ll.AccessFSWriteFile)
	// accFile are the rights Landlock accepts on a rule for a file (not a directory).
	accFile = landlock.AccessFSSet(ll.AccessFSReadFile | ll.AccessFSWriteFile | ll.AccessFSExecute |
		ll.AccessFSTruncate | ll.AccessFSIoctlDev)
)

// programDirs are never readable as files unless exec.allow lists what is in them.
var programDirs = map[string]bool{"bin": true, "sbin": true, "games": true, "libexec": true, "local": true}

// execStep runs the exec step and does not return unless it fails.
func execStep() int {
	var spec Spec
	f := os.NewFile(SpecFD, "spec")
	if err := json.NewDecoder(f).Decode(&spec); err != nil {
		return fail("read the spec: %v", err)
	}
	f.Close()
	env := os.Environ()
	if spec.Direct {
		// Started by bubblewrap itself: no init step set the environment or reads the report.
		unix.CloseOnExec(ReportFD)
		env = spec.Env
	}
	err := prepareExec(spec)
	if spec.Direct {
		rep := Report{Started: true}
		if err != nil {
			rep = Report{Status: SetupFailed, Error: err.Error()}
		}
		json.NewEncoder(os.NewFile(ReportFD, "report")).Encode(rep)
	}
	if err != nil {
		return fail("%v", err)
	}
	if spec.Limits.Memory > 0 {
		err = execLimited(spec.Argv, env, uint64(spec.Limits.Memory))
	} else {
		err = syscall.Exec(spec.Argv[0], spec.Argv, env)
	}
	code := 126
	if os.IsNotExist(err) {
		code = 127
	}
	fmt.Fprintf(os.Stderr, "corral: sandbox: exec %s: %v (a program, and a script's interpreter, must be in exec.allow)\n", spec.Argv[0], err)
	return code
}

// prepareExec makes every mount but the programs' noexec, drops every capability, loads the
// seccomp filter (fenceExec), joins the pids cgroup, sets the rlimits, enters the Landlock
// domain and marks every descriptor but the standard three close-on-exec, so that the command
// gets none of the sandbox's own and none its caller left open (package inherit).
func prepareExec(spec Spec) error {
	if err := fenceExec(spec); err != nil {
		return err
	}
	if spec.Cgroup {
		fd := ExecCgroupFD
		if spec.Direct {
			fd = CgroupFD // from bubblewrap itself
		}
		if err := joinCgroup(fd); err != nil {
			return err
		}
	}
	if err := setRlimits(spec.Limits); err != nil {
		return err
	}
	if err := restrict(spec); err != nil {
		return err
	}
	return inherit.CloseOnExec(3)
}

// fail reports a setup failure from inside the sandbox: status 1, never the command.
func fail(format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "corral: error: sandbox: %s\n", fmt.Sprintf(format, args...))
	return SetupFailed
}

// setRlimits applies the per-process limits but memory (execLimited).
func setRlimits(l Limits) error {
	set := func(name string, res int, v uint64) error {
		if err := unix.Setrlimit(res, &unix.Rlimit{Cur: v, Max: v}); err != nil {
			return fmt.Errorf("set %s limit to %d: %w", name, v, err)
		}
		return nil
	}
	if err := set("core", unix.RLIMIT_CORE, 0); err != nil {
		return err
	}
	if l.CPU > 0 {
		s := uint64(max(1, l.CPU.Round(1e9).Seconds()))
		if err := unix.Setrlimit(unix.RLIMIT_CPU, &unix.Rlimit{Cur: s, Max: s + 1}); err != nil {
			return fmt.Errorf("set cpu limit to %ds: %w", s, err)
		}
	}
	if l.Pids > 0 {
		// RLIMIT_NPROC counts every task of this user in the sandbox's own user namespace:
		// bubblewrap's init and the init step's threads are added so that the command gets pids.
		if err := set("pids", unix.RLIMIT_NPROC, uint64(l.Pids+otherTasks())); err != nil {
			return err
		}
	}
	return nil
}

// otherTasks counts the sandbox's tasks that are not this process's threads.
func otherTasks() int {
	procs, _ := filepath.Glob("/proc/[0-9]*/task/[0-9]*")
	self := "/proc/" + strconv.Itoa(os.Getpid()) + "/"
	n := 0
	for _, p := range procs {
		if len(p) < len(self) || p[:len(self)] != self {
			n++
		}
	}
	return n
}

// LandlockABI returns the kernel's Landlock ABI version, 0 when it has none.
func LandlockABI() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
}

// restrict enters the Landlock domain of spec.
func restrict(spec Spec) error {
	abi := LandlockABI()
	if abi < MinLandlockABI {
		if spec.NoLandlock {
			return nil
		}
		return fmt.Errorf("landlock ABI %d, at least %d needed", abi, MinLandlockABI)
	}
	rules := []landlock.Rule{
		landlock.PathAccess(landlock.AccessFSSet(ll.AccessFSReadDir), "/"),
		landlock.PathAccess(accRead, systemReadDirs()...),
		landlock.PathAccess(accDev, "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom").IgnoreIfMissing(),
		landlock.PathAccess(accWrite, "/tmp"),
	}
	rules = append(rules, grantRules(accRead, spec.Read)...)
	rules = append(rules, grantRules(accWrite, spec.Write)...)
	rules = append(rules, execRules(spec.Exec)...)
	if spec.RelayPort != 0 {
		rules = append(rules, landlock.ConnectTCP(spec.RelayPort))
	}
	if err := landlock.V7.BestEffort().Restrict(rules...); err != nil {
		return fmt.Errorf("enter the landlock domain: %w", err)
	}
	return nil
}

// grantRules grants acc on each path; a path that is not a directory gets only the rights of acc
// that apply to files, because Landlock refuses a directory right on a file's rule (fs.read and
// fs.write take files as well as directories).
func grantRules(acc landlock.AccessFSSet, paths []string) []landlock.Rule {
	var dirs, files []string
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			files = append(files, p)
		} else {
			dirs = append(dirs, p)
		}
	}
	var rules []landlock.Rule
	if len(dirs) > 0 {
		rules = append(rules, landlock.PathAccess(acc, dirs...))
	}
	if len(files) > 0 {
		rules = append(rules, landlock.PathAccess(acc&accFile, files...))
	}
	return rules
}

// systemReadDirs are the system directories readable as files: /etc, /proc, and every child of
// /usr (and of /usr/local) that is not a program directory.
func systemReadDirs() []string {
	dirs := []string{"/etc", "/proc"}
	for _, parent := range []string{"/usr", "/usr/local"} {
		ents, _ := os.ReadDir(parent)
		for _, e := range ents {
			if !programDirs[e.Name()] {
				dirs = append(dirs, filepath.Join(parent, e.Name()))
			}
		}
	}
	for _, l := range []string{"/lib", "/lib32", "/lib64", "/libx32"} {
		if fi, err := os.Lstat(l); err == nil && fi.IsDir() {
			dirs = append(dirs, l)
		}
	}
	return dirs
}

// execRules grants reading and executing each exec path and the dynamic loaders they name.
func execRules(paths []string) []landlock.Rule {
	var rules []landlock.Rule
	loaders := map[string]bool{}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		if fi.IsDir() {
			rules = append(rules, landlock.PathAccess(accExec|landlock.AccessFSSet(ll.AccessFSReadDir), p))
			loaders["/lib64/ld-linux-x86-64.so.2"] = true
			continue
		}
		rules = append(rules, landlock.PathAccess(accExec, p))
		if l := Interpreter(p); l != "" {
			loaders[l] = true
		}
	}
	for l := range loaders {
		rules = append(rules, landlock.PathAccess(accExec, l).IgnoreIfMissing())
	}
	return rules
}

// Interpreter returns the ELF interpreter (dynamic loader) of the program at path, or "".
func Interpreter(path string) string {
	f, err := elf.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err == nil && len(b) > 1 {
				return string(b[:len(b)-1])
			}
		}
	}
	return ""
}

// joinCgroup moves the calling process (the exec step) into the cgroup whose cgroup.procs is
// open on fd.
func joinCgroup(fd int) error {
	f := os.NewFile(uintptr(fd), "cgroup.procs")
	defer f.Close()
	if _, err := f.WriteString("0"); err != nil {
		return fmt.Errorf("join the pids cgroup: %w", err)
	}
	return nil
}
