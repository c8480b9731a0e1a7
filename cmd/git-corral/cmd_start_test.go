package main

import (
	"strings"
	"testing"

	"github.com/git-corral/git-corral/policy"
)

func TestSessionEnv(t *testing.T) {
	t.Setenv("CORRAL_TEST_SECRET", "s3cret value")
	t.Setenv("CORRAL_TEST_FORWARDED", "fwd")
	a := &app{}
	cfg := policy.Default()
	cfg.Env = map[string]string{"LITERAL": "x"}
	cfg.ForwardEnv = []string{"CORRAL_TEST_FORWARDED", "CORRAL_TEST_UNSET"}
	got, err := a.sessionEnv(cfg, []string{"CORRAL_TEST_SECRET"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"LITERAL": "x", "CORRAL_TEST_FORWARDED": "fwd", "CORRAL_TEST_SECRET": "s3cret value"}
	if len(got) != len(want) {
		t.Fatalf("sessionEnv = %v, want %v (an unset variable is not sent)", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	for _, bad := range []string{"", "A=B", "A\nB", "A\x00"} {
		if _, err := a.sessionEnv(cfg, []string{bad}); err == nil || !strings.Contains(err.Error(), "not a variable name") {
			t.Errorf("sessionEnv(%q) = %v, want a refusal", bad, err)
		}
	}
}
