package policy

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestHostileSandboxTable covers THREATS.md §1 for the repository's [sandbox] table: every
// spelling that is not exactly a key of the table is refused and named as written, whatever
// form the table takes (header, dotted key, inline table), and no value is coerced. Its control
// is TestSandboxTableSpellings: the same keys spelled correctly in each form load.
func TestHostileSandboxTable(t *testing.T) {
	kelvin := "\u212a"
	cases := []struct {
		name, toml string
		key        string // the key as written that must be named
		problem    string
	}{
		{"upper table", "[SANDBOX.fs]\nread = [\"/\"]", "SANDBOX.fs", "only by case"},
		{"title table", "[Sandbox]\nfs.read = [\"/\"]", "Sandbox", "only by case"},
		{"long s", "\"\u017fandbox\".fs.read = [\"/\"]", "\"\u017fandbox\".fs.read", "only by case"},
		{"upper group", "[sandbox.FS]\nread = [\"/\"]", "sandbox.FS", "only by case"},
		{"upper key", "[sandbox.fs]\nREAD = [\"/\"]", "sandbox.fs.READ", "only by case"},
		{"kelvin group", "[sandbox.\"networ" + kelvin + "\"]\nallow = [\"evil.example\"]", "sandbox.\"networ" + kelvin + "\"", "only by case"},
		{"kelvin escaped", "[sandbox]\n\"networ\\u212A\".allow = [\"evil.example\"]", "sandbox.\"networ\\u212A\".allow", "only by case"},
		{"inline upper", "sandbox = { fs = { Write = [\"/\"] } }", "sandbox.fs.Write", "only by case"},
		{"inline unknown", "sandbox = { net = { allow = [\"*\"] } }", "sandbox.net", "not a key"},
		{"dotted unknown", "sandbox.fs.exec = [\"/\"]", "sandbox.fs.exec", "not a key"},
		{"dot inside quotes", "[sandbox]\n\"fs.read\" = [\"/\"]", "sandbox.\"fs.read\"", "not a key"},
		{"too shallow", "sandbox.read = [\"/\"]", "sandbox.read", "not a key"},
		{"scalar table", "sandbox = true", "sandbox", "not a key"},
		{"array of tables", "[[sandbox]]\nfs.read = [\"/\"]", "sandbox", "array of tables"},
		{"string for array", "sandbox.fs.read = \"/\"", "sandbox.fs.read", "must be"},
		{"table for duration", "[sandbox.limits]\ntimeout = { s = 1 }", "sandbox.limits.timeout", "must be"},
		{"int for duration", "sandbox.limits.timeout = 30", "sandbox.limits.timeout", "must be"},
		{"string for int", "sandbox.limits.pids = \"5\"", "sandbox.limits.pids", "must be"},
		{"zero pids", "sandbox.limits.pids = 0", "sandbox.limits.pids", "at least 1"},
		{"bad size", "sandbox.limits.memory = \"lots\"", "sandbox.limits.memory", "size"},
		{"relative path", "sandbox.fs.write = [\"out\"]", "sandbox.fs.write", "absolute"},
		{"dotdot path", "sandbox.fs.read = [\"/data/../etc\"]", "sandbox.fs.read", `".."`},
		{"bad destination", "sandbox.network.allow = [\"evil example\"]", "sandbox.network.allow", "invalid entry"},
		{"upper destination", "sandbox.network.allow = [\"PyPI.org:443\"]", "sandbox.network.allow", "invalid entry"},
		{"bad variable", "sandbox.env.pass = [\"A=B\"]", "sandbox.env.pass", "variable name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.repo(tc.toml + "\n")
			list := f.violations()
			found := false
			for _, v := range list {
				if v.Key == visibleKey(tc.key) && strings.Contains(v.Problem, tc.problem) && v.Line > 0 {
					found = true
				}
			}
			if !found {
				t.Errorf("no violation naming key %q at a line with problem %q in %v", tc.key, tc.problem, list)
			}
		})
	}
}

// TestSandboxTableSpellings: the table in every form TOML allows loads into the same settings.
func TestSandboxTableSpellings(t *testing.T) {
	want := Sandbox{Read: []string{"/data"}, Network: []string{"pypi.org:443"}, Timeout: 5 * time.Second, Memory: "64MiB", Pids: 8}
	forms := map[string]string{
		"headers": "[sandbox.fs]\nread = [\"/data\"]\n[sandbox.network]\nallow = [\"pypi.org:443\"]\n[sandbox.limits]\ntimeout = \"5s\"\nmemory = \"64MiB\"\npids = 8\n",
		"dotted":  "sandbox.fs.read = [\"/data\"]\nsandbox.network.allow = [\"pypi.org:443\"]\nsandbox.limits.timeout = \"5s\"\nsandbox.limits.memory = \"64MiB\"\nsandbox.limits.pids = 8\n",
		"inline":  "sandbox = { fs = { read = [\"/data\"] }, network = { allow = [\"pypi.org:443\"] }, limits = { timeout = \"5s\", memory = \"64MiB\", pids = 8 } }\n",
		"escaped": "[sandbox]\n\"f\\u0073\".read = [\"/data\"]\n'network'.\"allow\" = [\"pypi.org:443\"]\nlimits.timeout = \"5s\"\nlimits.memory = \"64MiB\"\nlimits.pids = 8\n",
	}
	for name, toml := range forms {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.repo(toml)
			got := f.mustLoad().Config.Sandbox
			if !slices.Equal(got.Read, want.Read) || !slices.Equal(got.Network, want.Network) ||
				got.Timeout != want.Timeout || got.Memory != want.Memory || got.Pids != want.Pids {
				t.Errorf("got %+v, want %+v", got, want)
			}
		})
	}
}

// TestSandboxTableOnlyInRepository: a trusted file holding [sandbox] is refused (its grants are
// the manifest's), and says where they belong; the same table in the repository loads.
func TestSandboxTableOnlyInRepository(t *testing.T) {
	f := newFixture(t)
	f.global("[sandbox.fs]\nread = [\"/\"]\n")
	list := f.violations()
	if len(list) != 1 || !strings.Contains(list[0].Problem, "trusted file") || !strings.Contains(list[0].Why, "--manifest") {
		t.Errorf("want one violation of the trusted file's [sandbox], got %v", list)
	}
	f = newFixture(t)
	f.repo("[sandbox.fs]\nread = [\"/\"]\n")
	f.mustLoad()
}

// TestSandboxNarrow: each [sandbox] entry that stays within the manifest narrows it (the
// controls), and each that would grant more is refused with its file and line, the manifest
// left as it was.
func TestSandboxNarrow(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	data, out, etc := filepath.Join(root, "data"), filepath.Join(root, "out"), filepath.Join(root, "etc")
	for _, d := range []string{home, filepath.Join(data, "sub"), out, etc} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(etc, filepath.Join(data, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(etc, filepath.Join(out, "escape")); err != nil {
		t.Fatal(err)
	}
	base := SandboxGrant{Read: []string{data, home + "/src"}, Write: []string{out}, Exec: []string{"/usr/bin/python3"},
		Network: []string{"pypi.org:443"}, Env: []string{"LANG", "TERM"}, Timeout: time.Minute, Memory: 512 << 20, Pids: 64, Scratch: 256 << 20}
	q := func(s string) string { return `"` + s + `"` }
	ok := []struct {
		name, toml string
		check      func(g SandboxGrant) bool
	}{
		{"read sub", "sandbox.fs.read = [" + q(data+"/sub") + "]", func(g SandboxGrant) bool { return slices.Equal(g.Read, []string{data + "/sub"}) }},
		{"read home", "sandbox.fs.read = [\"~/src/x\"]", func(g SandboxGrant) bool { return slices.Equal(g.Read, []string{home + "/src/x"}) }},
		{"read under write", "sandbox.fs.read = [" + q(out+"/a") + "]", func(g SandboxGrant) bool { return slices.Equal(g.Read, []string{out + "/a"}) }},
		{"write sub", "sandbox.fs.write = [" + q(out+"/new") + "]", func(g SandboxGrant) bool { return slices.Equal(g.Write, []string{out + "/new"}) }},
		{"write none", "sandbox.fs.write = []", func(g SandboxGrant) bool { return len(g.Write) == 0 && len(g.Read) == 2 }},
		{"exec same", "sandbox.exec.allow = [\"/usr/bin/python3\"]", func(g SandboxGrant) bool { return slices.Equal(g.Exec, base.Exec) }},
		{"network same", "sandbox.network.allow = [\"pypi.org:443\"]", func(g SandboxGrant) bool { return slices.Equal(g.Network, base.Network) }},
		{"env subset", "sandbox.env.pass = [\"LANG\"]", func(g SandboxGrant) bool { return slices.Equal(g.Env, []string{"LANG"}) }},
		{"limits smaller", "[sandbox.limits]\ntimeout = \"10s\"\nmemory = \"64MiB\"\npids = 8\nscratch = \"1MiB\"",
			func(g SandboxGrant) bool {
				return g.Timeout == 10*time.Second && g.Memory == 64<<20 && g.Pids == 8 && g.Scratch == 1<<20
			}},
		{"limit where none", "sandbox.limits.cpu = \"5s\"", func(g SandboxGrant) bool { return g.CPU == 5*time.Second }},
		{"nothing set", "cpus = 1", func(g SandboxGrant) bool { return slices.Equal(g.Read, base.Read) && g.Timeout == base.Timeout }},
	}
	for _, tc := range ok {
		t.Run("ok/"+tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.repo(tc.toml + "\n")
			g, err := f.mustLoad().NarrowSandbox(base, home)
			if err != nil || !tc.check(g) {
				t.Errorf("narrowing refused or wrong: %+v, %v", g, err)
			}
		})
	}
	bad := []struct{ name, toml, problem string }{
		{"read outside", "sandbox.fs.read = [" + q(etc) + "]", "not at or under"},
		{"read prefix sibling", "sandbox.fs.read = [" + q(data+"x") + "]", "not at or under"},
		{"read root", "sandbox.fs.read = [\"/\"]", "not at or under"},
		{"read home outside", "sandbox.fs.read = [\"~/.ssh\"]", "not at or under"},
		{"read through symlink", "sandbox.fs.read = [" + q(data+"/escape") + "]", "not at or under"},
		{"write through symlink", "sandbox.fs.write = [" + q(out+"/escape/new") + "]", "not at or under"},
		{"write under read", "sandbox.fs.write = [" + q(data+"/sub") + "]", "not at or under"},
		{"exec other", "sandbox.exec.allow = [\"/bin/sh\"]", "not at or under"},
		{"network other", "sandbox.network.allow = [\"evil.example:443\"]", "does not list"},
		{"network wider", "sandbox.network.allow = [\"*.pypi.org\"]", "does not list"},
		{"env other", "sandbox.env.pass = [\"AWS_SECRET_ACCESS_KEY\"]", "does not list"},
		{"timeout longer", "sandbox.limits.timeout = \"2m\"", "raise the limit"},
		{"timeout none", "sandbox.limits.timeout = \"0s\"", "raise the limit"},
		{"memory larger", "sandbox.limits.memory = \"1GiB\"", "raise the limit"},
		{"pids larger", "sandbox.limits.pids = 65", "raise the limit"},
		{"scratch larger", "sandbox.limits.scratch = \"1GiB\"", "raise the limit"},
		{"escaped key", "[sandbox]\n\"f\\u0073\".\"read\" = [" + q(etc) + "]", "not at or under"},
		{"inline", "sandbox = { fs = { write = [" + q(etc) + "] } }", "not at or under"},
	}
	for _, tc := range bad {
		t.Run("refused/"+tc.name, func(t *testing.T) {
			f := newFixture(t)
			file := f.repo("cpus = 1\n" + tc.toml + "\n")
			g, err := f.mustLoad().NarrowSandbox(base, home)
			var vs *Violations
			if !errors.As(err, &vs) || len(vs.List) != 1 {
				t.Fatalf("want one violation, got %v (grant %+v)", err, g)
			}
			v := vs.List[0]
			line := strings.Count(tc.toml, "\n") + 2
			if v.File != file || v.Line != line || !strings.Contains(v.Problem, tc.problem) || v.Class != "project-may-narrow" {
				t.Errorf("violation %v: want %s:%d, %q", v, file, line, tc.problem)
			}
			if !slices.Equal(g.Read, base.Read) || g.Timeout != base.Timeout {
				t.Errorf("a refused narrowing changed the grant: %+v", g)
			}
		})
	}
}
