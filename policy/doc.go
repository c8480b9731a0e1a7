// Package policy owns git corral's configuration: the layers (built-in defaults < global
// $CORRAL_HOME/config.toml < the repository's .corral.toml < the trusted per-project file
// $CORRAL_HOME/projects/<box>.toml < command-line flags), the trust class of every key, the
// profiles, path confinement, and the effective configuration with the origin of every value.
//
// The repository layer is written by whoever controls the repository, so it is classified on
// its key paths as written, before any decoding, and may only tighten what the trusted layers
// allow. Policy does not read git and does not start anything.
//
// Files: config.go (the Config contract), keys.go (the one key table: class, kind, docs),
// profiles.go, read.go (safe file reading), parse.go (key definitions with lines, as written),
// classify.go (trust classes and shapes), validate.go (values and path confinement),
// tighten.go (what only the repository is subject to), load.go (layers and origins),
// flags.go, violation.go (the error listing every violation), table.go (SECURITY.md's trust
// table, templates, settings listing).
//
// Use:
//
//	eff, err := policy.Load(ctx, policy.LoadOptions{Home: h, TopLevel: p.TopLevel, Box: p.Box})
//	var vs *policy.Violations
//	if errors.As(err, &vs) { /* vs.List names every refused setting */ }
//	cfg := eff.Config
package policy
