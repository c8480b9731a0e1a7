package sandbox

// Seccomp rules: the filter and its rules are package sandbox/internal/seccompfilter's. On
// amd64 its program is assembled at build time into seccomp_program_linux_amd64.go
// (TestSeccompPrecompiled checks the two agree, byte for byte), so that neither the front nor
// the full binary links go-seccomp-bpf: its initialiser builds every architecture's system call
// table (165 KB) at every start, and the assembly gave the same bytes at every run. Other
// architectures assemble it at run time (seccomp_assemble_linux.go).

// SeccompProgram returns the whole filter, the one the command runs under, as raw sock_filter
// records (the format of bubblewrap's --seccomp).
func SeccompProgram() ([]byte, error) {
	return wholeProgram()
}

// SetupSeccompProgram returns the filter bubblewrap loads (--seccomp): the whole filter
// (SeccompProgram) without seccompfilter.SetupAllowed, which the steps load over it before the
// command runs.
func SetupSeccompProgram() ([]byte, error) {
	return setupProgram()
}
