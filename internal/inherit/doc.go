// Package inherit keeps the descriptors a process inherited from reaching the programs it
// starts.
//
// A shell hands a program every descriptor it opened without close-on-exec ('git corral
// sandbox -- CMD 9<~/.ssh/key' opens the key as descriptor 9 of git corral), and Go's os/exec
// passes every descriptor that lacks close-on-exec on to the child, as exec(2) does: only the
// descriptors Go itself opens carry the flag. So a descriptor git corral inherited would reach
// bubblewrap and the sandboxed command, limactl and through it the hostagent and QEMU, the
// broker and watch daemons, npm. Landlock checks a path when it is opened, never a read of a
// descriptor already open, so the sandbox's file rules do not stop it.
//
// It owns one rule: every descriptor from 3 up is marked close-on-exec (CloseOnExec), by
// git corral at its start and by the sandbox's inside steps before anything is executed; a
// child then gets only its standard streams and what its starter hands it explicitly
// (os/exec's ExtraFiles, which clears the flag on the child's copy).
//
// It does not own which descriptors a child is handed (each starter decides, e.g. the sandbox's
// spec and report pipes), nor the standard streams.
package inherit
