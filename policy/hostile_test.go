package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestHostileRepositoryConfig covers each class of THREATS.md §1: every case is refused, the
// violation names the key as written (or, for whole-file defects, says what is wrong), nothing
// panics or hangs (the fixture enforces a deadline and recovers panics), and the message holds
// no raw control character.
func TestHostileRepositoryConfig(t *testing.T) {
	kelvin := "\u212a"
	cases := []struct {
		name, toml string
		key        string // the key as written that must be named
		problem    string // a phrase of the problem (required for whole-file defects, key "")
	}{
		// Case and Unicode folding: look-alikes of known keys are unknown, and named as such.
		{"upper", `NETWORK = "full"`, "NETWORK", "only by case"},
		{"title", `Network = "full"`, "Network", "only by case"},
		{"upper table", "[NETWORK]\nmode = \"full\"", "NETWORK", "only by case"},
		{"kelvin escaped", `"networ\u212A" = "full"`, `"networ\u212A"`, "only by case"},
		{"kelvin literal", `"networ` + kelvin + `" = "full"`, `"networ` + kelvin + `"`, "only by case"},
		{"trusted upper", `EGRESS = ["evil.example"]`, "EGRESS", "only by case"},
		{"trusted kelvin", `"api_bro` + kelvin + `ers" = ["x"]`, `"api_bro` + kelvin + `ers"`, "only by case"},
		{"long s", "\"env_from_ho\u017ft\" = { A = \"B\" }", "\"env_from_ho\u017ft\"", "only by case"},
		{"fullwidth", `"ｎｅｔｗｏｒｋ" = "full"`, `"ｎｅｔｗｏｒｋ"`, ""},
		{"zero width", `"net\u200bwork" = "full"`, `"net\u200bwork"`, ""},
		{"leading space", `" network" = "full"`, `" network"`, ""},
		// Inline tables, dotted keys, quoting and escapes spell the same path.
		{"escaped trusted", `"egre\u0073s" = ["evil.example"]`, `"egre\u0073s"`, ""},
		{"literal quoted", `'egress' = ["evil.example"]`, `'egress'`, ""},
		{"inline table", `env_from_host = { A = "HOME" }`, "env_from_host", ""},
		{"dotted", `git_tokens."github.com" = "GITHUB_TOKEN"`, `git_tokens."github.com"`, ""},
		{"dotted spaced", `git_tokens . "github.com" = "GITHUB_TOKEN"`, `git_tokens."github.com"`, ""},
		{"table header", "[env_from_host]\nA = \"HOME\"", "env_from_host", ""},
		{"quoted header", "[\"env_from_host\"]\nA = \"HOME\"", `"env_from_host"`, ""},
		{"array of tables", "[[mounts]]\npath = \"/\"", "mounts", ""},
		{"inline in table", "[env]\nA = \"1\"\n[x]\ny = { ssh_agent = true }", "x", ""},
		{"escaped loosen", "\"net\\u0077ork\" = \"full\"\nprofile = \"strict\"\nprofile = \"standard\"", "profile", ""},
		{"escaped tighten check", `"agent_stat\u0065" = "shared"`, `"agent_stat\u0065"`, ""},
		// Unknown keys fail closed.
		{"unknown", `netwrok = "full"`, "netwrok", ""},
		{"unknown table", "[broker]\nallow = [\"*\"]", "broker", ""},
		{"dot inside quotes", `"network.mode" = "full"`, `"network.mode"`, ""},
		// Duplicates, however spelled.
		{"duplicate", "network = \"offline\"\nnetwork = \"full\"", "network", "defined twice"},
		{"duplicate quoted", "network = \"offline\"\n\"network\" = \"full\"", `"network"`, "defined twice"},
		{"duplicate escaped", "network = \"offline\"\n\"netw\\u006frk\" = \"full\"", `"netw\u006frk"`, "defined twice"},
		{"duplicate table", "[env]\nA = \"1\"\n[env]\nB = \"2\"", "env", "defined twice"},
		{"duplicate inline", "env = { A = \"1\" }\nenv.B = \"2\"", "", "not valid TOML"},
		// Nesting and size.
		{"deep dotted", `env.a.b.c.d = "x"`, "env.a.b.c.d", ""},
		{"deep array", `packages = [[[[["x"]]]]]`, "packages", ""},
		{"very deep array", "packages = " + strings.Repeat("[", 30000) + strings.Repeat("]", 30000), "packages", ""},
		{"very deep inline", "env = " + strings.Repeat("{a=", 8000) + "1" + strings.Repeat("}", 8000), "env.a", ""},
		{"huge array", "packages = [" + strings.Repeat(`"a",`, 5000) + "]", "packages", ""},
		{"too large", "# " + strings.Repeat("x", MaxFileSize) + "\ncpus = 2", "", "larger than"},
		{"many keys", strings.Repeat("[env]\n", 1) + manyKeys(3000), "", "more than"},
		// Type confusion: never coerced.
		{"int for string", `network = 1`, "network", ""},
		{"array for string", `network = ["offline"]`, "network", ""},
		{"table for string", "[network]\nmode = \"offline\"", "network", ""},
		{"bool for string", `network = true`, "network", ""},
		{"string for int", `cpus = "4"`, "cpus", ""},
		{"float for int", `cpus = 4.0`, "cpus", ""},
		{"date for int", `cpus = 1979-05-27`, "cpus", ""},
		{"overflow", `cpus = 99999999999999999999`, "cpus", ""},
		{"string for array", `packages = "git"`, "packages", ""},
		{"ints in array", `packages = [1, 2]`, "packages", ""},
		{"nested in array", `hide = [["a"]]`, "hide", ""},
		{"string for table", `env = "A=B"`, "env", ""},
		{"table in table", `env.A = { B = "c" }`, "env.A", ""},
		{"string for bool", `readonly_project = "false"`, "readonly_project", ""},
		// Bytes that must never reach the parser or the terminal.
		{"nul", "network = \"off\x00line\"", "", "NUL"},
		{"invalid utf8", "network = \"off\xfflinen\"", "", "UTF-8"},
		{"escape in key", `"a\u001b[2Jb" = 1`, `"a\u001b[2Jb"`, ""},
		{"raw escape in key", "\"a\x1b[2J\" = 1", "", "not valid TOML"},
		{"bidi in key", "\"a\u202eb\" = 1", "\"a\u202eb\"", ""},
		{"syntax", `network = `, "", "not valid TOML"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.repo(tc.toml + "\n")
			_, err := f.load()
			list := f.violations()
			found := false
			for _, v := range list {
				if tc.key != "" && v.Key == visibleKey(tc.key) && strings.Contains(v.Problem, tc.problem) {
					found = true
				}
				if tc.key == "" && v.Key == "" && strings.Contains(v.Problem, tc.problem) {
					found = true
				}
			}
			if !found {
				t.Errorf("no violation naming key %q / problem %q in %v", tc.key, tc.problem, list)
			}
			for _, v := range list {
				if k := lookupKey(foldMatch(strings.Trim(v.Key, `"'`))); k != nil && k.Class == TrustedOnly && v.Belongs != f.home.ProjectConfig(testBox) {
					t.Errorf("trusted-only look-alike %q does not say where it belongs: %v", v.Key, v)
				}
			}
			assertPrintable(t, err.Error())
		})
	}
}

// visibleKey is how a violation spells a raw key.
func visibleKey(raw string) string { return (Violation{Key: raw}).keyText() }

// manyKeys returns n distinct env entries.
func manyKeys(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteString("K")
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString(itoa(i))
		b.WriteString("=\"v\"\n")
	}
	return b.String()
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	s := ""
	for ; i > 0; i /= 10 {
		s = string(rune('0'+i%10)) + s
	}
	return s
}

// assertPrintable fails when s holds a control or bidi character other than newline.
func assertPrintable(t *testing.T, s string) {
	t.Helper()
	for _, r := range s {
		if (r < 0x20 && r != '\n') || r == 0x7f || (r >= 0x80 && r < 0xa0) || (r >= 0x202a && r <= 0x202e) || r == 0x200b {
			t.Errorf("message holds raw %U: %q", r, s)
			return
		}
	}
}

// TestRepositoryFileKinds: a symlink (to a good file, to a host file, dangling), a FIFO and a
// directory in place of .corral.toml are refused, and reading a FIFO does not block.
func TestRepositoryFileKinds(t *testing.T) {
	cases := map[string]func(f *fixture, p string) error{
		"symlink to good file": func(f *fixture, p string) error {
			good := f.write("repo/good.toml", "cpus = 2\n")
			return os.Symlink(good, p)
		},
		"symlink to host file": func(f *fixture, p string) error {
			return os.Symlink(f.global("egress = [\"evil.example\"]\n"), p)
		},
		"dangling symlink": func(f *fixture, p string) error { return os.Symlink("/nonexistent/x", p) },
		"fifo":             func(f *fixture, p string) error { return syscall.Mkfifo(p, 0o644) },
		"directory":        func(f *fixture, p string) error { return os.Mkdir(p, 0o755) },
		"symlink to fifo": func(f *fixture, p string) error {
			fifo := filepath.Join(f.top, "fifo")
			if err := syscall.Mkfifo(fifo, 0o644); err != nil {
				return err
			}
			return os.Symlink(fifo, p)
		},
	}
	for name, setup := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			p := filepath.Join(f.top, RepoFile)
			if err := setup(f, p); err != nil {
				t.Fatal(err)
			}
			list := f.violations()
			if len(list) == 0 || list[0].File != p || list[0].Key != "" {
				t.Fatalf("want a violation of the file itself, got %v", list)
			}
		})
	}
}

// TestOnlyTopLevelFileRead: a .corral.toml above the top level or in a subdirectory is never
// read, so its trusted-only keys neither apply nor fail the load.
func TestOnlyTopLevelFileRead(t *testing.T) {
	f := newFixture(t)
	f.write(RepoFile, "egress = [\"evil.example\"]\nnetwork = \"full\"\n")
	f.write("repo/sub/"+RepoFile, "egress = [\"evil.example\"]\n")
	f.global("network = \"broker\"\n")
	eff := f.mustLoad()
	if slices.Contains(eff.Config.Egress, "evil.example") || eff.Config.Network != NetworkBroker {
		t.Errorf("a file outside the top level was read: %+v", eff.Config)
	}
}
