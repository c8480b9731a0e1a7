package main

import (
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/policy"
)

func TestSessionEnv(t *testing.T) {
	t.Setenv("CORRAL_TEST_SECRET", "s3cret value")
	t.Setenv("CORRAL_TEST_FORWARDED", "fwd")
	t.Setenv("CORRAL_TEST_AMBIENT", "never")
	a := &app{stderr: io.Discard}
	cfg := policy.Default()
	cfg.Env = map[string]string{"LITERAL": "x"}
	cfg.ForwardEnv = []string{"CORRAL_TEST_FORWARDED", "CORRAL_TEST_UNSET"}
	s := &boxSession{cfg: cfg}
	got, names, err := a.sessionEnv(s, []string{"CORRAL_TEST_SECRET"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"LITERAL": "x", "CORRAL_TEST_FORWARDED": "fwd", "CORRAL_TEST_SECRET": "s3cret value"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("sessionEnv = %v, want %v (nothing ambient, an unset variable is not sent)", got, want)
	}
	if strings.Join(names, ",") != "CORRAL_TEST_FORWARDED,CORRAL_TEST_SECRET,LITERAL" {
		t.Errorf("names %v", names)
	}
	for _, bad := range []string{"", "A=B", "A\nB", "A\x00", "LD_PRELOAD", "PATH"} {
		if _, _, err := a.sessionEnv(s, []string{bad}); err == nil {
			t.Errorf("sessionEnv(--env %q) was accepted", bad)
		}
	}

	// Broker mode adds the proxy settings with the box's secret; no_env_passthrough drops
	// everything from the host.
	s.brokerSecret, s.brokerPort = []byte("0123456789abcdef0123456789abcdef"), 18080
	cfg.NoEnvPassthrough = true
	got, _, err = a.sessionEnv(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got["CORRAL_TEST_FORWARDED"] != "" || got["LITERAL"] != "x" {
		t.Errorf("no_env_passthrough: %v", got)
	}
	if got["https_proxy"] != "http://corral:0123456789abcdef0123456789abcdef@192.168.5.2:18080" {
		t.Errorf("https_proxy = %q", got["https_proxy"])
	}
}
