// Package inside is the light tier's inside: the init and exec steps that 'git corral sandbox'
// runs inside bubblewrap, from the spec the host side (package sandbox) sends down a pipe.
//
// It owns:
//   - the wire between the host and the steps (spec.go): the Spec, the Report, the descriptor
//     numbers and the path of the binary inside;
//   - the init step (initstep.go): the broker relay, the exec step's start, the report of how
//     the command ended;
//   - the exec step (execstep.go): noexec mounts, capabilities and the seccomp filter
//     (noexec_linux.go), the pids cgroup, the rlimits (execlimit_linux.go for memory) and
//     Landlock, then exec of the command.
//
// It does not own the manifest, the plan, bubblewrap's argv, the seccomp filter's policy or its
// assembly (package sandbox: the filter arrives here as raw sock_filter records in Spec.Filter),
// the broker, the log, or the command line.
//
// Rules:
//   - This package is all that cmd/git-corral-sandbox links beside the standard library,
//     golang.org/x/sys/unix, go-landlock (with libcap's psx) and internal/inherit, and it is
//     built without cgo: every sandboxed command pays for one or two starts of it, so what it
//     links is its start-up cost. cmd/git-corral-sandbox's TestHelperDependencies pins the list;
//     a package that needs the manifest, TOML, the broker or policy belongs in package sandbox,
//     on the host side.
//   - Fail closed: a step that cannot apply a layer exits with SetupFailed before the command
//     runs, and says why on stderr (and in the report).
package inside
