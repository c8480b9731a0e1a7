// Package sandbox is the light tier: it runs one command on the host, without a VM, inside
// bubblewrap namespaces, a Landlock domain, a seccomp filter and resource limits, from a manifest
// that grants file reads and writes, programs, environment names and broker destinations.
//
// It owns:
//   - the manifest (manifest.go): TOML with strict keys, every value checked, each error naming
//     the file and the key as written;
//   - the plan (plan.go): the manifest and the host's layout turned into bubblewrap's argv and
//     the spec the inside steps follow, by pure functions;
//   - what the two steps inside the sandbox are told (the Spec, package inside) and how their
//     report is read; the steps themselves are package sandbox/inside (the init step, which
//     relays the broker and reports how the command ended; the exec step: noexec mounts,
//     capabilities and seccomp, limits and Landlock, then exec of the command), a package of
//     their own so that the helper that runs them links none of this package's host side;
//   - the seccomp filter (seccomp.go), the host side of a run (run.go), its log line (log.go),
//     the default limits (defaults.go), the host's watch of a direct run (hostwatch.go), root's
//     pids cgroup (cgroup.go) and the macOS Seatbelt rendering of a manifest (seatbelt.go, not
//     yet run by the command).
//
// The inside steps run in cmd/git-corral-sandbox, a small static binary installed beside
// git-corral (InsideBinary) that links package inside alone, or in git corral itself ('git
// corral sandbox --stage NAME').
//
// It does not own the broker (package broker decides every destination and writes its own log
// lines; the caller passes it in, sandbox/netbroker, so that this package does not link it:
// broker.go), the log file's locking (package audit), the repository's [sandbox] table (package
// policy classifies it and narrows a manifest by it; package front applies that, so that the
// inside helper does not import policy) or the command line (package front, run by
// cmd/git-corral and by the front on PATH, cmd/git-corral-front).
//
// Rules:
//   - Deny by default: nothing of $HOME, the project or $CORRAL_HOME is visible unless the
//     manifest grants it; no network but loopback; no program executed but the command and
//     exec.allow; no host variable but env.pass; no descriptor but the standard three; and
//     the default limits (DefaultLimits) where the manifest sets none.
//   - Fail closed: a layer that cannot be applied (bubblewrap missing, Landlock absent or too
//     old, a seccomp filter refused, a grant that does not exist) stops the run before the
//     command starts; the command never runs with less than the manifest promised.
//   - Secrets never on argv or in the log: the broker's per-run secret reaches the inside
//     through a pipe, and the log records names and paths, never values.
//
// Decisions:
//   - Landlock is applied inside, after bubblewrap has built the mounts (a Landlock domain
//     forbids mount(2)), by a fresh re-execution that then execs the command, so the rlimits
//     are set in a process that has nothing else to do.
//   - The init step stays outside the Landlock domain, as the command's parent: Landlock's
//     ptrace and signal scoping then keep the command from reaching it, and it can report
//     whether the scratch disk filled.
//   - A run with no broker and no limit set in its manifest whose attribution needs the init
//     step's report (limits.pids, cpu, memory, an explicit scratch) goes without the init step
//     (Direct): bubblewrap starts the exec step itself, which saves the start of one process;
//     the status is then bubblewrap's (128+N for signal N, without the signal's name in the
//     log), a full default scratch /tmp is not named as the limit, and the exec step writes to
//     the report pipe only to say it got as far as exec (or why it did not), so that
//     bubblewrap's own failure is never taken for the command's status. The default limits
//     keep this path: the exec step sets them as rlimits, and the host watches the sandbox's
//     /proc for the evidence that names pids and memory (hostwatch.go).
//   - Inherited descriptors are marked close-on-exec (package inherit) by git corral at its
//     start, again by Run before bubblewrap starts, and by each inside step, so neither
//     bubblewrap, the steps nor the command holds one; marking, not closing, keeps the
//     steps' own pipes usable until they are done with them.
//   - seccomp is a filter assembled by github.com/elastic/go-seccomp-bpf. The exec step first
//     makes every mount but the programs' noexec (Landlock's execute right does not cover the
//     dynamic loader mapping a file it was handed), which needs CAP_SYS_ADMIN and unshare and
//     mount_setattr, calls the filter refuses. So bubblewrap loads the filter without those
//     (--seccomp FD, SetupSeccompProgram) and gives the steps CAP_SYS_ADMIN and CAP_SETPCAP;
//     the exec step remounts, drops every capability and loads the whole filter over it before
//     anything of the command runs, and the init step drops its capabilities and loads the
//     whole filter before the exec step gets its spec (inside/noexec_linux.go). No process in the
//     sandbox runs without a filter.
package sandbox
