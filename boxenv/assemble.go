package boxenv

// The rules of the box environment:
//   - Nothing ambient: only variables a trusted layer names reach the box.
//   - env_from_host fails closed: when the host variable is unset the session does not start,
//     so a broader variable can never slip in under the guest name.
//   - With no_env_passthrough nothing is taken from the host environment at all (forward_env,
//     env_from_host and git_tokens are dropped, each reported by name); literal env values stay.
//   - Names are validated ([A-Za-z_][A-Za-z0-9_]*) and values may not hold NUL; names the guest
//     relies on (PATH, HOME, USER, SHELL, LD_*, …) cannot be set from the host.

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/git-corral/git-corral/internal/lazyre"
)

// DefaultForward is the forward_env default: the agents' own authentication variables.
var DefaultForward = []string{
	"ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "OPENAI_API_KEY", "GEMINI_API_KEY",
	"GOOGLE_API_KEY", "OPENROUTER_API_KEY",
}

// TokenEnvPrefix names the variables that carry git_tokens into the box; the guest credential
// helper reads CORRAL_GIT_TOKEN_<n> for the host in CORRAL_GIT_TOKEN_<n>_HOST.
const TokenEnvPrefix = "CORRAL_GIT_TOKEN_"

// Sources are the trusted settings the environment is built from.
type Sources struct {
	// ForwardEnv lists host variables passed under their own names; unset ones are skipped.
	ForwardEnv []string
	// EnvFromHost maps a guest name to the host variable that must supply it.
	EnvFromHost map[string]string
	// Env holds literal values.
	Env map[string]string
	// EnvFile is a KEY=value file (trusted layers only); "" for none.
	EnvFile string
	// GitTokens maps a host name to the host variable holding its token.
	GitTokens map[string]string
	// NoPassthrough takes nothing from the host environment.
	NoPassthrough bool
}

// Env is the assembled environment.
type Env struct {
	// Values maps each variable to its value; only the SSH channel may see it.
	Values map[string]string
	// Dropped names each variable left out, with the reason, for the user and the audit log.
	Dropped []string
}

// Names returns the variable names, sorted: what logs and the audit record carry.
func (e Env) Names() []string {
	names := make([]string, 0, len(e.Values))
	for k := range e.Values {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// ErrUnsetHostVariable is wrapped by Assemble when env_from_host names an unset host variable.
var ErrUnsetHostVariable = errors.New("host variable is unset")

var validName = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*$`)

// reserved are guest variables the host must not override: they would change what runs or
// where, not just what the agent knows.
var reserved = map[string]bool{
	"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "SHELL": true, "PWD": true,
	"IFS": true, "ENV": true, "BASH_ENV": true, "PROMPT_COMMAND": true, "SSH_AUTH_SOCK": true,
	"GIT_DIR": true, "GIT_WORK_TREE": true, "GIT_CONFIG": true, "GIT_CONFIG_GLOBAL": true,
	"GIT_CONFIG_SYSTEM": true, "GIT_EXEC_PATH": true,
}

// CheckName refuses names that are malformed or reserved.
func CheckName(name string) error {
	if !validName.MatchString(name) {
		return fmt.Errorf("variable name %q is not of the form [A-Za-z_][A-Za-z0-9_]*", name)
	}
	if reserved[name] || strings.HasPrefix(name, "LD_") || strings.HasPrefix(name, "GIT_CONFIG_") ||
		strings.HasPrefix(name, "BASH_FUNC_") || strings.HasPrefix(name, TokenEnvPrefix) {
		return fmt.Errorf("variable %q is reserved in the box and cannot be set from the host", name)
	}
	return nil
}

// Assemble builds the environment from src, reading host variables with lookup and the env
// file with readFile (os.ReadFile-like, with the file checks done by ReadEnvFile).
func Assemble(src Sources, lookup func(string) (string, bool)) (Env, error) {
	e := Env{Values: map[string]string{}}
	var errs []error
	set := func(name, value, from string) {
		if err := CheckName(name); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", from, err))
			return
		}
		if strings.ContainsRune(value, 0) {
			errs = append(errs, fmt.Errorf("%s: value of %s holds a NUL byte", from, name))
			return
		}
		e.Values[name] = value
	}
	if src.NoPassthrough {
		for _, n := range src.ForwardEnv {
			e.Dropped = append(e.Dropped, n+" (forward_env; no_env_passthrough)")
		}
		for g := range src.EnvFromHost {
			e.Dropped = append(e.Dropped, g+" (env_from_host; no_env_passthrough)")
		}
		for h := range src.GitTokens {
			e.Dropped = append(e.Dropped, "git token for "+h+" (no_env_passthrough)")
		}
	} else {
		for _, n := range src.ForwardEnv {
			if v, ok := lookup(n); ok {
				set(n, v, "forward_env")
			}
		}
		for _, g := range sortedKeys(src.EnvFromHost) {
			h := src.EnvFromHost[g]
			v, ok := lookup(h)
			if !ok {
				errs = append(errs, fmt.Errorf("env_from_host %s=%s: %w: %s", g, h, ErrUnsetHostVariable, h))
				continue
			}
			set(g, v, "env_from_host "+g+"="+h)
		}
		errs = append(errs, addTokens(&e, src.GitTokens, lookup)...)
	}
	if src.EnvFile != "" {
		vals, err := ReadEnvFile(src.EnvFile)
		if err != nil {
			errs = append(errs, err)
		}
		for _, k := range sortedKeys(vals) {
			set(k, vals[k], "env_file "+src.EnvFile)
		}
	}
	for _, k := range sortedKeys(src.Env) {
		set(k, src.Env[k], "env")
	}
	sort.Strings(e.Dropped)
	if err := errors.Join(errs...); err != nil {
		return Env{}, err
	}
	return e, nil
}

// addTokens passes each git token as CORRAL_GIT_TOKEN_<n> with its host in
// CORRAL_GIT_TOKEN_<n>_HOST, for the guest credential helper.
func addTokens(e *Env, tokens map[string]string, lookup func(string) (string, bool)) []error {
	var errs []error
	for i, host := range sortedKeys(tokens) {
		if err := CheckHost(host); err != nil {
			errs = append(errs, fmt.Errorf("git_tokens: %w", err))
			continue
		}
		v, ok := lookup(tokens[host])
		if !ok || v == "" {
			errs = append(errs, fmt.Errorf("git_tokens %q = %s: %w: %s", host, tokens[host], ErrUnsetHostVariable, tokens[host]))
			continue
		}
		if strings.ContainsAny(v, "\x00\n\r") {
			errs = append(errs, fmt.Errorf("git_tokens %q: the token in %s holds a newline or NUL", host, tokens[host]))
			continue
		}
		n := fmt.Sprintf("%s%d", TokenEnvPrefix, i)
		e.Values[n] = v
		e.Values[n+"_HOST"] = host
	}
	return errs
}

var validHost = lazyre.New(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*(:[0-9]{1,5})?$`)

// CheckHost accepts a lower-case DNS host name with an optional port: what git puts in the
// credential protocol's host field for https URLs.
func CheckHost(host string) error {
	if !validHost.MatchString(host) {
		return fmt.Errorf("host %q is not a lower-case host name (with an optional :port)", host)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
