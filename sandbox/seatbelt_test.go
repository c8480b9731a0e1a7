package sandbox

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/")

// TestSeatbeltGolden renders manifests as sandbox-exec profiles and compares them with the
// golden files (go test ./sandbox -run Seatbelt -update rewrites them).
func TestSeatbeltGolden(t *testing.T) {
	cases := map[string]struct {
		m *Manifest
		h SeatbeltHost
	}{
		"empty": {&Manifest{}, SeatbeltHost{Program: "/usr/bin/true", Scratch: "/private/tmp/corral-sandbox-1"}},
		"full": {&Manifest{
			Source: "/Users/u/hook.toml", Digest: "sha256:00ff",
			Read: []string{"/Users/u/proj"}, Write: []string{"/Users/u/proj/out"},
			Exec: []string{"/usr/bin/python3", "/opt/homebrew/bin"}, Network: []string{"pypi.org"},
		}, SeatbeltHost{Program: "/usr/bin/python3", Scratch: "/private/tmp/corral-sandbox-2", BrokerPort: 40123}},
		"quoting": {&Manifest{Read: []string{`/Users/u/we"ird\dir) (allow default`}},
			SeatbeltHost{Program: "/usr/bin/true", Scratch: "/private/tmp/corral-sandbox-3"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got := SeatbeltProfile(c.m, c.h)
			path := filepath.Join("testdata", "seatbelt", name+".sb")
			if *update {
				must(t, os.WriteFile(path, []byte(got), 0o644))
			}
			want, err := os.ReadFile(path)
			must(t, err)
			if got != string(want) {
				t.Errorf("profile %s differs from %s:\n%s", name, path, got)
			}
		})
	}
}

// TestSeatbeltQuoting: a path cannot close its string and add a rule of its own.
func TestSeatbeltQuoting(t *testing.T) {
	p := SeatbeltProfile(&Manifest{Read: []string{`/x") (allow default) ("`}}, SeatbeltHost{Program: "/usr/bin/true", Scratch: "/tmp/s"})
	if strings.Contains(p, `(allow default)`) && !strings.Contains(p, `\") (allow default) (\"`) {
		t.Errorf("a quote in a path escaped its string:\n%s", p)
	}
	if strings.Count(p, "(deny default)") != 1 || strings.Contains(p, "\n(allow default") {
		t.Errorf("profile has a default other than deny:\n%s", p)
	}
}
