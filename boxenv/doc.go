// Package boxenv assembles the environment a session gets inside the box, from the trusted
// layers only: forward_env (host variables passed by name), env_from_host (guest name = host
// name, failing closed when the host variable is unset), env (literal values), env_file (a
// KEY=value file the user owns and nobody else can read) and git_tokens (a credential offered
// by the guest's git credential helper to one host only).
//
// Values leave this package only towards the SSH channel (vm sessions send them with setenv,
// never on a command line); everything that is recorded or printed uses Env.Names.
package boxenv
