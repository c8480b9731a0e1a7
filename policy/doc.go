// Package policy owns git corral's configuration: the layers (built-in defaults < global
// $CORRAL_HOME/config.toml < the repository's .corral.toml < the trusted per-project file
// $CORRAL_HOME/projects/<box>.toml < command-line flags), the trust class of every key, the
// profiles, path confinement, and the effective configuration with the origin of every value.
//
// The repository layer is written by whoever controls the repository, so it is classified on
// its key paths as written, before any decoding, and may only tighten what the trusted layers
// allow. Policy does not read git and does not start anything.
package policy
