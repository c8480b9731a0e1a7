package session

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/policy"
)

// envWith is b.env with the --env names of a request.
func envWith(b *Box, names []string) (map[string]string, []string, bool, error) {
	b.req = Request{Env: names}
	return b.env()
}

// TestSessionEnv: the session environment holds only what the trusted layers and --env name,
// never an ambient value, and says whether any value came from the host.
func TestSessionEnv(t *testing.T) {
	t.Setenv("CORRAL_TEST_SECRET", "s3cret value")
	t.Setenv("CORRAL_TEST_FORWARDED", "fwd")
	t.Setenv("CORRAL_TEST_AMBIENT", "never")
	cfg := policy.Default()
	cfg.GitIdentity = "none" // identity_test.go covers the identity variables
	cfg.Env = map[string]string{"LITERAL": "x"}
	cfg.ForwardEnv = []string{"CORRAL_TEST_FORWARDED", "CORRAL_TEST_UNSET"}
	b := &Box{Config: cfg}
	got, names, hostValues, err := envWith(b, []string{"CORRAL_TEST_SECRET"})
	if err != nil || !hostValues {
		t.Fatalf("env: %v, hostValues %v (want true: values from the host take the separate guard check)", err, hostValues)
	}
	want := map[string]string{"LITERAL": "x", "CORRAL_TEST_FORWARDED": "fwd", "CORRAL_TEST_SECRET": "s3cret value"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("env = %v, want %v (nothing ambient, an unset variable is not sent)", got, want)
	}
	if strings.Join(names, ",") != "CORRAL_TEST_FORWARDED,CORRAL_TEST_SECRET,LITERAL" {
		t.Errorf("names %v", names)
	}
	for _, bad := range []string{"", "A=B", "A\nB", "A\x00", "LD_PRELOAD", "PATH"} {
		if _, _, _, err := envWith(b, []string{bad}); err == nil {
			t.Errorf("env(--env %q) was accepted", bad)
		}
	}

	// Broker mode adds the proxy settings with the box's secret; no_env_passthrough drops
	// everything from the host.
	b.BrokerSecret, b.BrokerPort = []byte("0123456789abcdef0123456789abcdef"), 18080
	cfg.NoEnvPassthrough = true
	got, _, hostValues, err = envWith(b, nil)
	if err != nil || !hostValues {
		t.Fatalf("env: %v, hostValues %v (the literal env value)", err, hostValues)
	}
	if got["CORRAL_TEST_FORWARDED"] != "" || got["LITERAL"] != "x" {
		t.Errorf("no_env_passthrough: %v", got)
	}
	if got["https_proxy"] != "http://corral:0123456789abcdef0123456789abcdef@192.168.5.2:18080" {
		t.Errorf("https_proxy = %q", got["https_proxy"])
	}
	// The proxy settings alone are no host values: such a session takes the in-band check.
	cfg.Env = nil
	if got, _, hostValues, err = envWith(b, nil); err != nil || hostValues || got["https_proxy"] == "" {
		t.Errorf("broker mode without host values: %v, hostValues %v, %d variables", err, hostValues, len(got))
	}
}

// TestSessionEnvTrustedSources: env_from_host, env_file and git_tokens each put their host
// values into the session's environment under the box's names; the control, the same host with
// none of the keys set, sends none of them; no_env_passthrough drops what comes from the host's
// environment (env_from_host, git_tokens) and keeps env_file's, a file the trusted layers name
// for the box (boxenv.Assemble); and an env_from_host naming an unset host variable refuses the
// session rather than sending less.
func TestSessionEnvTrustedSources(t *testing.T) {
	t.Setenv("CORRAL_TEST_DEPLOY", "deploy-value")
	t.Setenv("CORRAL_TEST_GH", "gh-token-value")
	file := filepath.Join(t.TempDir(), "box.env")
	must(t, os.WriteFile(file, []byte("FROM_FILE=file-value\n"), 0o600))
	fromKeys := map[string]string{"BOX_DEPLOY": "deploy-value", "FROM_FILE": "file-value",
		"CORRAL_GIT_TOKEN_0": "gh-token-value", "CORRAL_GIT_TOKEN_0_HOST": "github.com"}

	cfg := policy.Default()
	cfg.Network = policy.NetworkFull // git_tokens reach the session's environment only in full mode
	cfg.GitIdentity = "none"
	control, _, hostValues, err := envWith(&Box{Config: cfg}, nil)
	if err != nil || hostValues {
		t.Fatalf("control: %v, hostValues %v", err, hostValues)
	}
	for k := range fromKeys {
		if _, ok := control[k]; ok {
			t.Errorf("control: %s is in the session without any key naming it: %v", k, control)
		}
	}

	cfg.EnvFromHost = map[string]string{"BOX_DEPLOY": "CORRAL_TEST_DEPLOY"}
	cfg.EnvFile = file
	cfg.GitTokens = map[string]string{"github.com": "CORRAL_TEST_GH"}
	got, names, hostValues, err := envWith(&Box{Config: cfg}, nil)
	if err != nil || !hostValues {
		t.Fatalf("env: %v, hostValues %v", err, hostValues)
	}
	if !reflect.DeepEqual(got, fromKeys) {
		t.Errorf("env = %v, want exactly %v", got, fromKeys)
	}
	if strings.Contains(strings.Join(names, ","), "CORRAL_TEST_") {
		t.Errorf("names %v: the host's own variable names must not be sent", names)
	}

	cfg.NoEnvPassthrough = true
	if got, _, _, err := envWith(&Box{Config: cfg}, nil); err != nil || !reflect.DeepEqual(got, map[string]string{"FROM_FILE": "file-value"}) {
		t.Errorf("no_env_passthrough: env %v, %v; want nothing from the host environment, env_file's value kept", got, err)
	}

	cfg.NoEnvPassthrough = false
	cfg.EnvFromHost = map[string]string{"BOX_DEPLOY": "CORRAL_TEST_UNSET_HOST_VAR"}
	if got, _, _, err := envWith(&Box{Config: cfg}, nil); err == nil || !strings.Contains(err.Error(), "CORRAL_TEST_UNSET_HOST_VAR") {
		t.Errorf("env_from_host of an unset host variable: env %v, %v; want a refusal naming it", got, err)
	}
}
