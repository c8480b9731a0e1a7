// Package lazyre holds regular expressions that are compiled at their first use, not when the
// program starts.
//
// Why: every git corral command pays for every package-level initialiser of every package
// the binary links, whatever the command does. A pattern with a counted repetition such as
// `[a-z0-9-]{0,62}` compiles to one instruction per repetition (the parser expands it), so the
// few validation patterns of policy, provision, session, clone, diff and vm cost thousands of
// allocations and several milliseconds at every start (`GODEBUG=inittrace=1 git-corral
// version`, docs/benchmarks-history.md "## sandbox"), for commands such as `version` and `sandbox`
// that never match one.
//
// Owns: the deferred compile and the few methods the project calls. Does not own: the
// patterns, which stay beside the code that uses them. Rules: a pattern is a constant, so a
// bad one is a programming error and panics at every use (regexp.MustCompile panicked at
// start), so the tests of the code that uses a pattern find it.
package lazyre
