package agents

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestArgvCannotSmuggleOptions: every spec follows "--", and the versions that reach argv are
// exact versions only.
func TestArgvCannotSmuggleOptions(t *testing.T) {
	spec := Spec{"@openai/codex", "0.171.0"}
	for _, args := range [][]string{viewArgs(spec), packArgs(spec, "/c"), timesArgs(spec.Package)} {
		i := slices.Index(args, "--")
		if i < 0 || !slices.Contains(args, "--ignore-scripts") || strings.HasPrefix(args[i+1], "-") {
			t.Errorf("argv %q: the spec does not follow -- or scripts are not off", args)
		}
	}
	for _, v := range []string{"1.2.3", "0.171.0-linux-x64", "1.0.0-rc.1"} {
		if err := validVersion(v); err != nil {
			t.Errorf("control: %q refused: %v", v, err)
		}
	}
	for _, v := range []string{"", "latest", "-1.0.0", "1.0.0\n--registry=x", "1.0.0 ", ">=1.0.0", "1.0.0-", "1.x", "file:../x"} {
		if err := validVersion(v); err == nil {
			t.Errorf("%q accepted as an exact version", v)
		}
	}
}

func TestParseView(t *testing.T) {
	spec := Spec{"@openai/codex", "0.171.0"}
	out := `{"dist.integrity":"sha512-abc","dist.tarball":"https://r/x.tgz","time":{"0.171.0":"2026-11-20T01:02:03.456+00:00"}}`
	m, err := parseView(spec, []byte(out))
	if err != nil || m.Integrity != "sha512-abc" || m.Published.Day() != 20 {
		t.Errorf("parseView = %+v, %v", m, err)
	}
	for _, bad := range []string{`{}`, `{"dist.integrity":"sha512-a","time":{}}`, `{"dist.integrity":"sha512-a","time":{"0.171.0":"yesterday"}}`, `[`} {
		if _, err := parseView(spec, []byte(bad)); err == nil {
			t.Errorf("parseView(%s) accepted", bad)
		}
	}
	if _, err := parsePack(spec, []byte(`[{"filename":"../x.tgz"}]`)); err == nil {
		t.Error("parsePack accepted a file name with a directory")
	}
}

func TestCheckIntegrity(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, []byte("hello\n"), 0o644)
	good := "sha512-58IrmUxZ2c8rSOVJseJGZmNgRZMNPafBrLKZ0cO3+TH5Sq5B7dosKyB6NuEPi8uNRSI+VIePWzFufOO2vAGWKQ=="
	if err := checkIntegrity(p, good); err != nil {
		t.Fatalf("control: %v", err)
	}
	if err := checkIntegrity(p, "sha1-abc "+good); err != nil {
		t.Errorf("a string with a matching sha512 among others: %v", err)
	}
	for _, bad := range []string{strings.Replace(good, "58Ir", "AAAA", 1), "sha1-9591818c07e900db7e1e0bc4b884c945e6a61b24", ""} {
		if err := checkIntegrity(p, bad); !errors.Is(err, ErrIntegrity) {
			t.Errorf("integrity %q: %v", bad, err)
		}
	}
}

func TestCheckAgeAndNewest(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	spec := Spec{"p", "1.0.0"}
	if err := checkAge(spec, now.Add(-8*24*time.Hour), now, DefaultMinAge); err != nil {
		t.Errorf("control: 8 days old refused: %v", err)
	}
	err := checkAge(spec, now.Add(-6*24*time.Hour), now, DefaultMinAge)
	if !errors.Is(err, ErrTooNew) || !strings.Contains(err.Error(), "agent_min_age") {
		t.Errorf("6 days old: %v", err)
	}
	if err := checkAge(spec, now, now, -1); err != nil {
		t.Errorf("window off: %v", err)
	}
	times := map[string]time.Time{
		"1.9.0": now.Add(-30 * 24 * time.Hour), "1.10.0": now.Add(-10 * 24 * time.Hour),
		"1.11.0": now.Add(-1 * time.Hour), "1.10.1-linux-x64": now.Add(-9 * 24 * time.Hour), "2.0.0-rc.1": now.Add(-20 * 24 * time.Hour),
	}
	if got := newestOldEnough(times, now, DefaultMinAge); got != "1.10.0" {
		t.Errorf("newestOldEnough = %q, want 1.10.0 (numeric order, no fresh, platform or prerelease)", got)
	}
}

// TestLauncherRefusesShellMetacharacters: a value that could change the launcher script is
// refused before anything is written.
func TestLauncherRefusesShellMetacharacters(t *testing.T) {
	a := Agent{Name: "codex", Package: "@openai/codex", Bin: "bin/codex.js", NeedsNode: true}
	if _, err := launcherScript(a, "1.0.0", "22.0.0", LinuxX64); err != nil {
		t.Fatalf("control: %v", err)
	}
	for _, bad := range []string{"1.0.0\nrm -rf /", "1.0.0\"", "$(id)", "`id`", "1.0.0 x", "../../x"} {
		if _, err := launcherScript(a, bad, "22.0.0", LinuxX64); err == nil {
			t.Errorf("version %q accepted into a launcher", bad)
		}
		if _, err := launcherScript(a, "1.0.0", bad, LinuxX64); err == nil {
			t.Errorf("node %q accepted into a launcher", bad)
		}
		b := a
		b.Bin = bad
		if _, err := launcherScript(b, "1.0.0", "22.0.0", LinuxX64); err == nil {
			t.Errorf("bin %q accepted into a launcher", bad)
		}
	}
}

func TestTrustedOptions(t *testing.T) {
	if o := TrustedOptions(0, nil, LinuxX64); o.MinAge >= 0 {
		t.Errorf(`agent_min_age = "0s" must turn the window off, got MinAge %v`, o.MinAge)
	}
	if o := Open(t.TempDir(), TrustedOptions(48*time.Hour, nil, LinuxX64)); o.MinAge() != 48*time.Hour {
		t.Errorf("48h became %v", o.MinAge())
	}
	if o := Open(t.TempDir(), Options{}); o.MinAge() != DefaultMinAge {
		t.Errorf("zero Options: window %v, want the default (fail closed)", o.MinAge())
	}
}
