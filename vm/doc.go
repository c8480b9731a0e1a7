// Package vm owns the box: the Lima instance template (built from Lima's own Go types and checked
// by Lima's validator), the lifecycle through limactl, instance state, and SSH sessions
// (golang.org/x/crypto/ssh) with environment forwarding and a PTY.
//
// It makes no policy decisions: it is given the effective configuration and renders it.
//
// Decisions recorded here (measurements in docs/benchmarks-history.md "## vm"):
//
//   - Base image: the lima-init variant of the recipe (a ~110-line shell stand-in for
//     cloud-init). Each boot is 12-18 s faster under TCG (the recipe measured READY in 43-45 s
//     against 55-63 s with cloud-init) and every box creation, restart and end-to-end group pays
//     that. The price: it reads Lima v1.2.x's cidata layout, which is pinned with limactl; a
//     cloud image (the trusted `image` key) still gets stock cloud-init. lima-init also starts
//     Lima's guest agent before boot.sh: without that, on a loaded TCG host Lima v1.2.2's host
//     agent can lose the agent socket for good and limactl start fails ("guest agent does not
//     seem to be running"); that was seen here at a load average of 9.
//   - Linux mount type: 9p (MountTypeLinux says why; virtiofs only with a Rust virtiofsd).
//   - KVM: ProbeKVM boots a kernel under -accel kvm; when it does not panic within 15 s the
//     box runs under TCG (QEMU_SYSTEM_X86_64 = TCGQemu, cpuType max) and the user is told.
//   - Guard check: CheckGuards refuses a session when a guard fails, and when the guard check
//     is missing in broker or offline mode or whenever guest scripts were rendered. A full-mode
//     box with an empty bundle (no git shadow: clone mode; no provision scripts) has no check:
//     the session runs and `git corral` prints a notice saying so on every session.
//   - One package, three concerns (issue #18 asked; decided after the session flow moved out of
//     main): the Lima lifecycle (Manager, Ensure, template, instance state, snapshots, idle),
//     the SSH client with its gate, guard report, connection holder and warm shells (Client,
//     Dial, ServeMux, Guest), and golden bases (Golden*, the saved state and its resume). They
//     stay one package because they share their core rather than only a name: a golden base is
//     built and resumed through the same Manager, instance directory and QEMU environment as
//     any box, and its readiness is the same SSH client's; the holder and warm shells are that
//     client's transport. Split, each would export the Manager's and the client's internals to
//     the others, and the session flow would import three packages to do what it does with one.
//     Files keep the concerns apart (golden_*.go, mux.go and warm.go, the rest); a split is
//     worth it when one of them gains callers that need none of the others.
package vm
