package main

import (
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/vm"
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
	got, names, hostValues, err := a.sessionEnv(s, []string{"CORRAL_TEST_SECRET"})
	if err != nil || !hostValues {
		t.Fatalf("sessionEnv: %v, hostValues %v (want true: values from the host take the separate guard check)", err, hostValues)
	}
	want := map[string]string{"LITERAL": "x", "CORRAL_TEST_FORWARDED": "fwd", "CORRAL_TEST_SECRET": "s3cret value"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("sessionEnv = %v, want %v (nothing ambient, an unset variable is not sent)", got, want)
	}
	if strings.Join(names, ",") != "CORRAL_TEST_FORWARDED,CORRAL_TEST_SECRET,LITERAL" {
		t.Errorf("names %v", names)
	}
	for _, bad := range []string{"", "A=B", "A\nB", "A\x00", "LD_PRELOAD", "PATH"} {
		if _, _, _, err := a.sessionEnv(s, []string{bad}); err == nil {
			t.Errorf("sessionEnv(--env %q) was accepted", bad)
		}
	}

	// Broker mode adds the proxy settings with the box's secret; no_env_passthrough drops
	// everything from the host.
	s.brokerSecret, s.brokerPort = []byte("0123456789abcdef0123456789abcdef"), 18080
	cfg.NoEnvPassthrough = true
	got, _, hostValues, err = a.sessionEnv(s, nil)
	if err != nil || !hostValues {
		t.Fatalf("sessionEnv: %v, hostValues %v (the literal env value)", err, hostValues)
	}
	if got["CORRAL_TEST_FORWARDED"] != "" || got["LITERAL"] != "x" {
		t.Errorf("no_env_passthrough: %v", got)
	}
	if got["https_proxy"] != "http://corral:0123456789abcdef0123456789abcdef@192.168.5.2:18080" {
		t.Errorf("https_proxy = %q", got["https_proxy"])
	}
	// The proxy settings alone are no host values: such a session takes the in-band check.
	cfg.Env = nil
	if got, _, hostValues, err = a.sessionEnv(s, nil); err != nil || hostValues || got["https_proxy"] == "" {
		t.Errorf("broker mode without host values: %v, hostValues %v, %d variables", err, hostValues, len(got))
	}
}

// statusErr is a guest status git corral gave a session (as vm's timeout and signal errors).
type statusErr struct{ code int }

func (e statusErr) Error() string {
	return "guest command timed out after 1s and was stopped (TERM, then KILL)"
}
func (e statusErr) GuestStatus() int { return e.code }

// TestReportGuestStatus: the guest's own exit status passes through silently, as ssh does; a
// status git corral decided (a timeout, a signal) passes through and says why on stderr.
func TestReportGuestStatus(t *testing.T) {
	a, _, stderr := testApp(t, nil)
	if code := a.report(vm.ExitStatus(7)); code != 7 || stderr.Len() != 0 {
		t.Errorf("guest exit 7: code %d, stderr %q; want 7 and nothing said", code, stderr.String())
	}
	if code := a.report(statusErr{124}); code != 124 || !strings.Contains(stderr.String(), "timed out after 1s") {
		t.Errorf("timeout: code %d, stderr %q; want 124 and the reason", code, stderr.String())
	}
}
