package sandbox

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/git-corral/git-corral/sandbox/netbroker"
)

func TestParseManifest(t *testing.T) {
	src := `
[fs]
read  = ["/usr/share/doc", "~/notes"]
write = ["/srv/out"]
[network]
allow = ["example.com", "*.pypi.org:443"]
[exec]
allow = ["/usr/bin/python3"]
[env]
pass = ["LANG", "CI"]
[limits]
timeout = "30s"
memory  = "512MiB"
pids    = 64
cpu     = "10s"
output  = 1048576
scratch = "1GiB"
`
	m, err := ParseManifest("m.toml", []byte(src), "/home/u", netbroker.Broker{})
	if err != nil {
		t.Fatal(err)
	}
	want := Limits{Timeout: 30 * time.Second, Memory: 512 << 20, Pids: 64, CPU: 10 * time.Second, Output: 1 << 20, Scratch: 1 << 30}
	if m.Limits != want {
		t.Errorf("limits %+v, want %+v", m.Limits, want)
	}
	if strings.Join(m.Read, ",") != "/usr/share/doc,/home/u/notes" || m.Write[0] != "/srv/out" || m.Exec[0] != "/usr/bin/python3" {
		t.Errorf("paths read=%v write=%v exec=%v", m.Read, m.Write, m.Exec)
	}
	if len(m.Network) != 2 || strings.Join(m.Env, ",") != "LANG,CI" || !strings.HasPrefix(m.Digest, "sha256:") {
		t.Errorf("network=%v env=%v digest=%q", m.Network, m.Env, m.Digest)
	}
	empty, err := ParseManifest("e.toml", nil, "", netbroker.Broker{})
	if err != nil || len(empty.Read)+len(empty.Write)+len(empty.Exec)+len(empty.Network)+len(empty.Env) != 0 {
		t.Errorf("an empty manifest: %+v, %v; want nothing granted", empty, err)
	}
}

// TestManifestHostile is THREATS.md class 1 for the manifest: keys are matched exactly as
// written, every problem is reported at once, and bad values are named.
func TestManifestHostile(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"upper-case table", "[FS]\nread = [\"/x\"]\n", `"FS": unknown table`},
		{"Kelvin sign key", "[\"networ\u212A\"]\nallow = [\"x.com\"]\n", "unknown table"},
		{"upper-case key", "[fs]\nREAD = [\"/x\"]\n", `"fs.READ": unknown key`},
		{"unknown key", "[limits]\nswap = \"1GiB\"\n", `"limits.swap": unknown key`},
		{"dotted unknown", "fs.exec = [\"/x\"]\n", `"fs.exec": unknown key`},
		{"relative path", "[fs]\nread = [\"docs\"]\n", `must be absolute`},
		{"dot-dot", "[fs]\nwrite = [\"/srv/../etc\"]\n", `contains ".."`},
		{"newline in path", "[fs]\nread = [\"/x\\n/y\"]\n", `line break`},
		{"not an array", "[exec]\nallow = \"/bin/sh\"\n", `want an array of strings, got a string`},
		{"bad env name", "[env]\npass = [\"A=B\"]\n", `"A=B" is not a variable name`},
		{"bad allow entry", "[network]\nallow = [\"http://x.com/\"]\n", `"network.allow"`},
		{"bad duration", "[limits]\ntimeout = \"soon\"\n", `"soon"`},
		{"negative size", "[limits]\nmemory = -1\n", `want a size`},
		{"bad unit", "[limits]\nmemory = \"5 parsecs\"\n", `"5 parsecs"`},
		{"zero pids", "[limits]\npids = 0\n", `want a whole number`},
		{"table as value", "fs = 3\n", `"fs": must be a table`},
		{"duplicate key", "[fs]\nread = []\nread = [\"/\"]\n", `"fs.read": defined more than once`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseManifest("m.toml", []byte(c.src), "/home/u", netbroker.Broker{})
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "m.toml") {
				t.Errorf("error %v, want one naming m.toml and %q", err, c.want)
			}
		})
	}
	_, err := ParseManifest("m.toml", []byte("[fs]\nREAD = []\n[limits]\npids = 0\n[bogus]\n"), "", netbroker.Broker{})
	if err == nil || strings.Count(err.Error(), "m.toml") != 3 {
		t.Errorf("want all three problems at once, got %v", err)
	}
}

// TestManifestNeedsBroker: read without a broker, a manifest whose network.allow holds an entry
// is ErrNeedsBroker, even with other problems (only the broker's reader can list them all) and
// even when the entry is bad; the control: an empty network.allow and a manifest without
// [network] parse, and the same manifests with the broker parse or list their problems.
func TestManifestNeedsBroker(t *testing.T) {
	for _, src := range []string{
		"[network]\nallow = [\"example.com\"]\n",
		"[network]\nallow = [\"http://x.com/\"]\n",
		"[network]\nallow = [\"example.com\"]\n[fs]\nnope = 1\n",
	} {
		if _, err := ParseManifest("m.toml", []byte(src), "/home/u", nil); !errors.Is(err, ErrNeedsBroker) || !strings.Contains(err.Error(), "m.toml") {
			t.Errorf("%q without a broker: %v, want ErrNeedsBroker naming m.toml", src, err)
		}
		if _, err := ParseManifest("m.toml", []byte(src), "/home/u", netbroker.Broker{}); errors.Is(err, ErrNeedsBroker) {
			t.Errorf("%q with the broker: %v", src, err)
		}
	}
	for _, src := range []string{"[network]\nallow = []\n", "[fs]\nread = [\"/usr\"]\n", ""} {
		if _, err := ParseManifest("m.toml", []byte(src), "/home/u", nil); err != nil {
			t.Errorf("control: %q without a broker: %v", src, err)
		}
	}
}
