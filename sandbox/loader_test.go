//go:build linux

package sandbox

// The loader table (issue 29, point 1): exec.allow must hold against every way an allowed
// program can make the kernel run, or map as code, a file exec.allow does not list. Landlock's
// execute right covers execve (and execveat, /proc/self/fd, #! scripts, a program's
// interpreter); the noexec mounts (inside/noexec_linux.go) cover what Landlock does not see: the
// dynamic loader handed a file, LD_PRELOAD, mmap and mprotect with PROT_EXEC. Its rows run in
// TestHostile (as root, and as nobody through TestUnprivileged), each with its control.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/git-corral/git-corral/sandbox/inside"
)

// loaderFixture are the files of the loader table: an ordinary dynamic program placed in
// fs.read and fs.write, the loader it names, and a shared library of the system.
type loaderFixture struct {
	prog, loader, lib string
}

// hostProg is the dynamic program the table loads (any will do; true has no side effect).
const hostProg = "/usr/bin/true"

// loaderFiles puts a copy of hostProg in the fixture's fs.read and fs.write directories (as
// prog) and finds the loader and libm; the scratch files the probes write are removed after.
func (f *fixture) loaderFiles(t *testing.T) loaderFixture {
	t.Helper()
	lf := loaderFixture{prog: "prog", loader: inside.Interpreter(hostProg)}
	if lf.loader == "" {
		t.Fatalf("%s names no dynamic loader (PT_INTERP): the loader table needs a dynamic program", hostProg)
	}
	libs, _ := filepath.Glob("/usr/lib*/*/libm.so.6")
	if more, _ := filepath.Glob("/usr/lib*/libm.so.6"); len(more) > 0 {
		libs = append(libs, more...)
	}
	if len(libs) == 0 {
		t.Fatal("no libm.so.6 under /usr/lib*: the LD_PRELOAD row needs a system library")
	}
	lf.lib = libs[0]
	for _, d := range []string{f.readDir, f.writeDir} {
		copyFile(t, hostProg, filepath.Join(d, lf.prog))
	}
	t.Cleanup(func() {
		for _, n := range []string{"prog", "lib.so", "ld.so"} {
			os.Remove(f.scratch(n))
		}
	})
	return lf
}

// scratch is a /tmp path unique to this fixture (a control on the host writes it there).
func (f *fixture) scratch(name string) string { return f.scratchCopy() + "-" + name }

// loaderCases are the loader table's rows. The layer each refusal must show: "failed to map
// segment" (the loader's mmap refused on a noexec mount), "operation not permitted" (mmap with
// PROT_EXEC refused: noexec), "permission denied" (execve refused: Landlock), "no
// capability" (every capability dropped); the loader's "cannot open shared object file:
// Permission denied" (the init step's /proc/PID/root: Landlock's ptrace scoping).
func loaderCases(lf loaderFixture) []hostileCase {
	readProg := func(f *fixture) string { return filepath.Join(f.readDir, lf.prog) }
	writeProg := func(f *fixture) string { return filepath.Join(f.writeDir, lf.prog) }
	readOnly := func(f *fixture) *Manifest { return &Manifest{Read: []string{f.readDir}} }
	readExec := func(f *fixture) *Manifest { return &Manifest{Read: []string{f.readDir}, Exec: []string{f.readDir}} }
	writeOnly := func(f *fixture) *Manifest { return &Manifest{Read: []string{f.readDir}, Write: []string{f.writeDir}} }
	writeExec := func(f *fixture) *Manifest {
		return &Manifest{Read: []string{f.readDir}, Write: []string{f.writeDir}, Exec: []string{f.writeDir}}
	}
	withInit := func(m func(*fixture) *Manifest) func(*fixture) *Manifest {
		return func(f *fixture) *Manifest { mm := m(f); mm.Limits.Scratch = 64 << 20; return mm }
	}
	perlExec := `exec @ARGV or die "exec: $!\n"`
	rows := []hostileCase{
		// The dynamic loader run directly on a file exec.allow does not list.
		{name: "loader: a program the command wrote to /tmp", layer: "failed to map segment", deny: readOnly,
			probe: func(f *fixture) []string {
				return []string{"copy-then", readProg(f), f.scratch("prog"), "run", lf.loader, f.scratch("prog")}
			}},
		{name: "loader: a program the command wrote to /tmp, with the init step", layer: "failed to map segment", deny: withInit(readOnly),
			probe: func(f *fixture) []string {
				return []string{"copy-then", readProg(f), f.scratch("prog"), "run", lf.loader, f.scratch("prog")}
			}},
		{name: "loader: a program the command wrote to fs.write", layer: "failed to map segment", deny: writeOnly, grant: writeExec,
			probe: func(f *fixture) []string {
				return []string{"copy-then", readProg(f), f.writeDir + "/written", "run", lf.loader, f.writeDir + "/written"}
			}},
		{name: "loader: a program in fs.read", layer: "failed to map segment", deny: readOnly, grant: readExec,
			probe: func(f *fixture) []string { return []string{"run", lf.loader, readProg(f)} }},
		{name: "loader: a program in fs.read, with the init step", layer: "failed to map segment", deny: withInit(readOnly), grant: withInit(readExec),
			probe: func(f *fixture) []string { return []string{"run", lf.loader, readProg(f)} }},
		// An allowed interpreter that execs the loader with a file (the #! line of a script
		// whose interpreter is allowed reaches the same exec).
		{name: "loader: exec'd by an allowed interpreter with a program in fs.write", layer: "failed to map segment",
			deny: func(f *fixture) *Manifest {
				return &Manifest{Write: []string{f.writeDir}, Exec: []string{"/usr/bin/perl"}}
			},
			grant: func(f *fixture) *Manifest {
				return &Manifest{Write: []string{f.writeDir}, Exec: []string{"/usr/bin/perl", f.writeDir}}
			},
			probe: func(f *fixture) []string {
				return []string{"run", "/usr/bin/perl", "-e", perlExec, lf.loader, writeProg(f)}
			}},
		// Descriptor paths: the loader handed /proc/self/fd/N, and execveat of a descriptor.
		{name: "loader: a program in /tmp by /proc/self/fd", layer: "failed to map segment", deny: readOnly,
			probe: func(f *fixture) []string {
				return []string{"copy-then", readProg(f), f.scratch("prog"), "fd-loader", lf.loader, f.scratch("prog")}
			}},
		// The init step stays in bubblewrap's mount namespace, where /tmp is not noexec.
		{name: "loader: a program in /tmp through the init step's mount namespace", layer: "cannot open shared object file: Permission denied", deny: withInit(readOnly),
			probe: func(f *fixture) []string {
				return []string{"copy-then", readProg(f), f.scratch("prog"), "parent-root-loader", lf.loader, f.scratch("prog")}
			}},
		{name: "execveat: a program in fs.write by descriptor", layer: "permission denied", deny: writeOnly, grant: writeExec,
			probe: func(f *fixture) []string { return []string{"execveat", writeProg(f)} }},
		// A copy of the loader: executed directly, it is a file in fs.write like any other.
		{name: "a copy of the loader in fs.write", layer: "permission denied", deny: writeOnly,
			grant: func(f *fixture) *Manifest {
				return &Manifest{Read: []string{f.readDir}, Write: []string{f.writeDir}, Exec: []string{f.writeDir, f.readDir}}
			},
			probe: func(f *fixture) []string {
				return []string{"copy-then", lf.loader, f.writeDir + "/ld.so", "run", f.writeDir + "/ld.so", hostProgIn(f)}
			}},
		// A library: LD_PRELOAD (and dlopen, the same mmap) of a file the command wrote.
		{name: "LD_PRELOAD: a library the command wrote to /tmp", layer: "failed to map segment", deny: readExec,
			probe: func(f *fixture) []string {
				return []string{"copy-then", lf.lib, f.scratch("lib.so"), "preload", f.scratch("lib.so"), readProg(f)}
			}},
		// mmap and mprotect with PROT_EXEC, which is all a loader needs.
		{name: "mmap PROT_EXEC: a file the command wrote to /tmp", layer: "mmap PROT_EXEC: operation not permitted", deny: readOnly,
			probe: func(f *fixture) []string {
				return []string{"copy-then", readProg(f), f.scratch("prog"), "map-exec", f.scratch("prog")}
			}},
		{name: "mmap PROT_EXEC: a file in fs.read", layer: "mmap PROT_EXEC: operation not permitted", deny: readOnly, grant: readExec,
			probe: func(f *fixture) []string { return []string{"map-exec", readProg(f)} }},
		// The remount needs CAP_SYS_ADMIN inside; nothing of it may reach the command.
		{name: "capabilities: the command's", layer: "no capability", probe: func(*fixture) []string { return []string{"caps", "self"} }},
		{name: "capabilities: the command's, with the init step", layer: "no capability", deny: withInit(func(*fixture) *Manifest { return &Manifest{} }),
			probe: func(*fixture) []string { return []string{"caps", "self"} }},
		{name: "capabilities: the init step's", layer: "no capability", deny: withInit(func(*fixture) *Manifest { return &Manifest{} }),
			probe: func(*fixture) []string { return []string{"caps", "parent"} }},
		// The setup filter bubblewrap loads keeps its own PID 1 filtered too.
		{name: "seccomp: bubblewrap's PID 1 without a filter", layer: "seccomp mode 2", probe: func(*fixture) []string { return []string{"unfiltered", "1"} }},
	}
	// The loader itself may run in every sandboxed run (as it does for any dynamic program in
	// exec.allow), so that what refuses each row is the layer named, not execve of the loader.
	for i := range rows {
		rows[i].deny = allowLoader(rows[i].deny, lf.loader)
		if rows[i].grant != nil {
			rows[i].grant = allowLoader(rows[i].grant, lf.loader)
		}
	}
	return rows
}

func allowLoader(m func(*fixture) *Manifest, loader string) func(*fixture) *Manifest {
	if m == nil {
		return func(*fixture) *Manifest { return &Manifest{Exec: []string{loader}} }
	}
	return func(f *fixture) *Manifest { mm := m(f); mm.Exec = append(mm.Exec, loader); return mm }
}

// hostProgIn is the fs.read copy of hostProg, which every loader row's control may run.
func hostProgIn(f *fixture) string { return filepath.Join(f.readDir, "prog") }

// TestLoaderGranted is the other half of the loader table, as root and as nobody: what
// exec.allow grants still runs when it lies inside a noexec grant, and what SECURITY.md says
// the light tier does not cover still happens (so that the manual stays true).
func TestLoaderGranted(t *testing.T) {
	f := newFixture(t)
	lf := f.loaderFiles(t)
	must(t, os.MkdirAll(f.writeDir+"/bin", 0o755))
	must(t, os.MkdirAll(f.readDir+"/bin", 0o755))
	copyFile(t, hostProg, f.readDir+"/bin/prog")
	cases := []struct {
		name  string
		m     *Manifest
		argv  []string
		probe []string
	}{
		{name: "the command itself inside fs.write", m: &Manifest{Write: []string{f.writeDir}},
			argv: []string{filepath.Join(f.writeDir, lf.prog)}},
		{name: "the command itself inside fs.read", m: &Manifest{Read: []string{f.readDir}},
			argv: []string{filepath.Join(f.readDir, lf.prog)}},
		{name: "exec.allow inside fs.read", m: &Manifest{Read: []string{f.readDir}, Exec: []string{f.readDir + "/bin"}},
			probe: []string{"run", f.readDir + "/bin/prog"}},
		{name: "exec.allow inside fs.write, written and run", m: &Manifest{Read: []string{f.readDir}, Write: []string{f.writeDir}, Exec: []string{f.writeDir + "/bin"}},
			probe: []string{"copy-then", hostProgIn(f), f.writeDir + "/bin/new", "run", f.writeDir + "/bin/new"}},
		{name: "exec.allow inside fs.write, with the init step", m: &Manifest{Read: []string{f.readDir}, Write: []string{f.writeDir}, Exec: []string{f.writeDir + "/bin"},
			Limits: Limits{Scratch: 64 << 20}},
			probe: []string{"copy-then", hostProgIn(f), f.writeDir + "/bin/new", "run", f.writeDir + "/bin/new"}},
		{name: "an allowed program's libraries", m: &Manifest{Exec: []string{hostProg}}, probe: []string{"run", hostProg}},
		// Not covered: anonymous executable memory (JITs need it), and the loader run on a file
		// of the system library directories (libc.so.6 is itself a program).
		{name: "not covered: anonymous executable memory", probe: []string{"anon-exec"}},
		{name: "not covered: the loader on a file of the system libraries", probe: []string{"run", lf.loader, libc(t)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			o := f.options(c.m, &out, c.probe...)
			if c.argv != nil {
				o.Argv = c.argv
			}
			res, err := Run(t.Context(), o)
			if err != nil || res.Status != 0 {
				t.Errorf("status %+v, %v, want 0:\n%s", res, err, out.String())
			}
		})
	}
}

// libc is the C library the host's true loads: a file of the system library directories.
func libc(t *testing.T) string {
	libs, _ := filepath.Glob("/usr/lib*/*/libc.so.6")
	if len(libs) == 0 {
		t.Fatal("no libc.so.6 under /usr/lib*/*")
	}
	return libs[0]
}

// loaderProbe runs the loader table's probes; ok is false for a kind it does not know.
func loaderProbe(kind string, args []string) (err error, ok bool) {
	switch kind {
	case "copy-then": // copy args[0] to args[1] (mode 0755), then run the probe args[2:]
		if len(args) < 3 {
			return fmt.Errorf("copy-then SRC DST PROBE..."), true
		}
		data, err := os.ReadFile(args[0])
		if err != nil {
			return err, true
		}
		if err := os.WriteFile(args[1], data, 0o755); err != nil {
			return err, true
		}
		return probeErr(args[2], args[3:]), true
	case "run": // run args, its output in the error
		return runOut(exec.Command(args[0], args[1:]...)), true
	case "fd-loader": // hand the loader args[0] the file args[1] as /proc/self/fd/3
		fd, err := os.Open(args[1])
		if err != nil {
			return err, true
		}
		cmd := exec.Command(args[0], "/proc/self/fd/3")
		cmd.ExtraFiles = []*os.File{fd}
		return runOut(cmd), true
	case "parent-root-loader": // hand the loader args[0] the file args[1] as the parent sees it
		return runOut(exec.Command(args[0], fmt.Sprintf("/proc/%d/root%s", os.Getppid(), args[1]))), true
	case "execveat": // become the program args[0] by execveat of a descriptor
		return execveat(args[0]), true
	case "preload": // run args[1] with LD_PRELOAD=args[0]; the loader only warns when it fails
		cmd := exec.Command(args[1])
		cmd.Env = append(os.Environ(), "LD_PRELOAD="+args[0])
		out, err := cmd.CombinedOutput()
		if err == nil && bytes.Contains(out, []byte("cannot be preloaded")) {
			err = fmt.Errorf("not preloaded")
		}
		if err != nil {
			return fmt.Errorf("%w: %s", err, bytes.TrimSpace(out)), true
		}
		return nil, true
	case "map-exec":
		return mapExec(args[0]), true
	case "anon-exec": // anonymous memory mapped executable, as a JIT maps it
		b, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE|unix.PROT_EXEC, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return fmt.Errorf("anonymous mmap PROT_EXEC: %w", err), true
		}
		return unix.Munmap(b), true
	case "unfiltered": // works when process args[0] runs without a seccomp filter
		b, err := os.ReadFile("/proc/" + args[0] + "/status")
		if err != nil {
			return err, true
		}
		for _, line := range strings.Split(string(b), "\n") {
			if mode, ok := strings.CutPrefix(line, "Seccomp:\t"); ok && mode != "0" {
				return fmt.Errorf("seccomp mode %s", mode), true
			}
		}
		return nil, true
	case "caps": // works when the process (self) or its parent (parent) holds any capability
		pid := "self"
		if args[0] == "parent" {
			pid = strconv.Itoa(os.Getppid())
		}
		return holdsCaps(pid), true
	}
	return nil, false
}

func runOut(cmd *exec.Cmd) error {
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// execveat replaces the probe with the program at path through execveat(fd, "", AT_EMPTY_PATH);
// it returns only when that is refused.
func execveat(path string) error {
	fd, err := unix.Open(path, unix.O_RDONLY, 0)
	if err != nil {
		return err
	}
	empty, _ := syscall.BytePtrFromString("")
	argv, _ := syscall.SlicePtrFromStrings([]string{path})
	envv, _ := syscall.SlicePtrFromStrings([]string{})
	_, _, e := unix.Syscall6(unix.SYS_EXECVEAT, uintptr(fd), uintptr(unsafe.Pointer(empty)),
		uintptr(unsafe.Pointer(&argv[0])), uintptr(unsafe.Pointer(&envv[0])), unix.AT_EMPTY_PATH, 0)
	return fmt.Errorf("execveat: %w", e)
}

// mapExec maps the file at path as code, directly and through mprotect; either working is
// enough for a loader.
func mapExec(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	b, errMap := unix.Mmap(int(f.Fd()), 0, 4096, unix.PROT_READ|unix.PROT_EXEC, unix.MAP_PRIVATE)
	if errMap == nil {
		return unix.Munmap(b)
	}
	b, err = unix.Mmap(int(f.Fd()), 0, 4096, unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		return fmt.Errorf("mmap PROT_EXEC: %w; mmap PROT_READ: %v", errMap, err)
	}
	defer unix.Munmap(b)
	if err := unix.Mprotect(b, unix.PROT_READ|unix.PROT_EXEC); err != nil {
		return fmt.Errorf("mmap PROT_EXEC: %w; mprotect PROT_EXEC: %v", errMap, err)
	}
	return nil
}

// holdsCaps reports the capability sets of /proc/PID/status; an error when all are empty.
func holdsCaps(pid string) error {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return err
	}
	var sets []string
	held := false
	for _, line := range strings.Split(string(b), "\n") {
		name, val, ok := strings.Cut(line, ":\t")
		if !ok || !strings.HasPrefix(name, "Cap") {
			continue
		}
		sets = append(sets, name+"="+val)
		if n, _ := strconv.ParseUint(val, 16, 64); n != 0 {
			held = true
		}
	}
	if len(sets) == 0 {
		return fmt.Errorf("no Cap lines in /proc/%s/status", pid)
	}
	if !held {
		return fmt.Errorf("no capability: %s", strings.Join(sets, " "))
	}
	fmt.Println(strings.Join(sets, " "))
	return nil
}
