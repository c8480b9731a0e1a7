package diff

// The catalogue lists the files the host executes, or that make the host execute something,
// each with why and when. It is data: one row per pattern. Patterns match case-insensitively
// (a case-insensitive host opens MAKEFILE as Makefile). A pattern without "/" matches the base
// name at any depth; with "/", the whole path from the top level, where "**" matches any number
// of directories.

import (
	"path"
	"strings"
)

// Severity ranks a finding.
type Severity string

// Severities, highest first.
const (
	High   Severity = "high"   // the host runs this as code, or it names code to run
	Medium Severity = "medium" // it changes what or how the host runs, or hides changes
	Low    Severity = "low"    // it steers a tool or an agent without running code by itself
)

// Rule is one row of the catalogue.
type Rule struct {
	Pattern  string
	Group    string
	Severity Severity
	// Why says what runs and when, in one line.
	Why string
}

// Catalogue returns the table of host-executed files.
func Catalogue() []Rule { return catalogue }

var catalogue = []Rule{
	// make
	{"GNUmakefile", "make", High, "make reads it first (before makefile and Makefile) and runs its recipes"},
	{"makefile", "make", High, "make runs its recipes (read before Makefile)"},
	{"Makefile", "make", High, "make runs its recipes"},
	{"*.mk", "make", High, "included by makefiles; make runs its recipes"},
	{"Makefile.PL", "make", High, "perl runs it to generate the Makefile"},
	{"configure", "make", High, "./configure is run as a shell script before make"},
	{"configure.ac", "make", High, "autoconf turns it into configure, which runs"},
	{"autogen.sh", "make", High, "run to bootstrap autotools builds"},
	// node
	{"package.json", "node", High, "npm/yarn/pnpm/bun run its scripts: lifecycle hooks on install, others on npm run"},
	{".npmrc", "node", High, "npm reads it on every command (script-shell, node-options, git, registry)"},
	{".yarnrc", "node", High, "yarn v1 reads it on every command (yarn-path runs a file)"},
	{".yarnrc.yml", "node", High, "yarn reads it on every command (yarnPath, plugins run code)"},
	{".yarn/releases/**", "node", High, "yarnPath points here: this JavaScript runs as yarn"},
	{".yarn/plugins/**", "node", High, "yarn loads its plugins on every command"},
	{".pnpmfile.cjs", "node", High, "pnpm runs its hooks on install"},
	{".pnpmfile.mjs", "node", High, "pnpm runs its hooks on install"},
	{"pnpmfile.js", "node", High, "pnpm runs its hooks on install"},
	{"pnpm-workspace.yaml", "node", Medium, "pnpm reads it on install (catalogs, overrides, patched dependencies)"},
	{"bunfig.toml", "node", High, "bun reads it on every command (preload runs scripts)"},
	{"package-lock.json", "node", Medium, "npm install fetches and runs the install scripts of what it pins"},
	{"yarn.lock", "node", Medium, "yarn install fetches and runs the install scripts of what it pins"},
	{"pnpm-lock.yaml", "node", Medium, "pnpm install fetches what it pins"},
	{"bun.lockb", "node", Medium, "bun install fetches what it pins"},
	{".nvmrc", "node", Low, "nvm and editors switch Node version on entry"},
	{".node-version", "node", Low, "version managers switch Node version on entry"},
	// python
	{"setup.py", "python", High, "pip install and setuptools run it"},
	{"setup.cfg", "python", Medium, "setuptools reads it during builds (entry points, commands)"},
	{"pyproject.toml", "python", High, "pip runs its build backend on install; tools read their config"},
	{"conftest.py", "python", High, "pytest imports it when collecting tests"},
	{"pytest.ini", "python", Medium, "pytest reads it (addopts, plugins) on every run"},
	{"tox.ini", "python", High, "tox runs its commands"},
	{"noxfile.py", "python", High, "nox runs it"},
	{"sitecustomize.py", "python", High, "python imports it at start-up when it is on sys.path"},
	{"usercustomize.py", "python", High, "python imports it at start-up when it is on sys.path"},
	{"*.pth", "python", High, "site-packages runs its import lines at every python start-up"},
	{"Pipfile", "python", Medium, "pipenv installs from it (scripts section runs)"},
	{"requirements*.txt", "python", Medium, "pip install -r fetches and builds what it names (and its options)"},
	{".python-version", "python", Low, "pyenv switches interpreter on entry"},
	// rust
	{"build.rs", "rust", High, "cargo compiles and runs it before building the crate"},
	{".cargo/config", "rust", High, "cargo reads it on every command (runner, rustc-wrapper, aliases)"},
	{".cargo/config.toml", "rust", High, "cargo reads it on every command (runner, rustc-wrapper, aliases)"},
	{"**/.cargo/config", "rust", High, "cargo reads it from every parent directory"},
	{"**/.cargo/config.toml", "rust", High, "cargo reads it from every parent directory"},
	{"Cargo.toml", "rust", Medium, "cargo builds from it (build scripts, proc macros, dependencies)"},
	{"rust-toolchain", "rust", High, "rustup downloads and runs the toolchain it names"},
	{"rust-toolchain.toml", "rust", High, "rustup downloads and runs the toolchain it names"},
	// go
	{"go.mod", "go", High, "the go command downloads and runs the toolchain its toolchain line names"},
	{"go.work", "go", High, "the go command reads it (toolchain, replaced modules)"},
	{"go.env", "go", Medium, "a Go toolchain's go.env sets GOFLAGS and proxies"},
	// jvm
	{"gradlew", "jvm", High, "the Gradle wrapper script runs on every build"},
	{"gradlew.bat", "jvm", High, "the Gradle wrapper script runs on every build"},
	{"gradle/wrapper/gradle-wrapper.properties", "jvm", High, "the wrapper downloads and runs the Gradle its distributionUrl names"},
	{"gradle/wrapper/gradle-wrapper.jar", "jvm", High, "gradlew runs this jar"},
	{"*.gradle", "jvm", High, "Gradle runs build scripts as code"},
	{"*.gradle.kts", "jvm", High, "Gradle runs build scripts as code"},
	{"gradle.properties", "jvm", Medium, "Gradle reads it (JVM arguments, plugins)"},
	{"mvnw", "jvm", High, "the Maven wrapper script runs on every build"},
	{"mvnw.cmd", "jvm", High, "the Maven wrapper script runs on every build"},
	{".mvn/**", "jvm", High, "Maven reads wrapper properties, extensions and JVM options from here"},
	{"pom.xml", "jvm", High, "Maven runs the plugins it declares"},
	// other build tools
	{".bazelrc", "build", High, "bazel reads it on every command"},
	{".bazelversion", "build", High, "bazelisk downloads and runs the bazel it names"},
	{"WORKSPACE", "build", High, "bazel runs its repository rules"},
	{"WORKSPACE.bazel", "build", High, "bazel runs its repository rules"},
	{"MODULE.bazel", "build", High, "bazel resolves and runs its modules"},
	{"BUILD", "build", Medium, "bazel builds from it"},
	{"BUILD.bazel", "build", Medium, "bazel builds from it"},
	{"*.bzl", "build", High, "bazel runs Starlark rules"},
	{"justfile", "build", High, "just runs its recipes"},
	{".justfile", "build", High, "just runs its recipes"},
	{"Taskfile.yml", "build", High, "task runs its tasks"},
	{"Taskfile.yaml", "build", High, "task runs its tasks"},
	{"Taskfile.dist.yml", "build", High, "task runs its tasks"},
	{"Taskfile.dist.yaml", "build", High, "task runs its tasks"},
	{"CMakeLists.txt", "build", High, "cmake runs it to configure the build"},
	{"*.cmake", "build", High, "cmake includes and runs it"},
	{"CMakePresets.json", "build", High, "cmake --preset reads it (toolchain files, commands)"},
	{"CMakeUserPresets.json", "build", High, "cmake --preset reads it (toolchain files, commands)"},
	{"meson.build", "build", High, "meson runs it to configure the build"},
	{"Rakefile", "build", High, "rake runs it"},
	{"Gemfile", "build", High, "bundler evaluates it as Ruby"},
	{".bundle/config", "build", High, "bundler reads it (build options, paths)"},
	{"Earthfile", "build", High, "earthly runs its targets"},
	{"magefile.go", "build", High, "mage runs its targets"},
	{"build.sbt", "build", High, "sbt runs it as Scala"},
	{"flake.nix", "build", High, "nix evaluates it (nix develop runs its shell hook)"},
	{"shell.nix", "build", High, "nix-shell evaluates it and runs its shell hook"},
	{"default.nix", "build", High, "nix evaluates it"},
	{"devbox.json", "build", High, "devbox runs its init hooks and scripts"},
	{"Vagrantfile", "build", High, "vagrant evaluates it as Ruby"},
	// hook managers
	{".pre-commit-config.yaml", "hooks", High, "pre-commit runs its hooks on every commit"},
	{".pre-commit-config.yml", "hooks", High, "pre-commit runs its hooks on every commit"},
	{".pre-commit-hooks.yaml", "hooks", High, "pre-commit runs the hooks it defines"},
	{".husky/**", "hooks", High, "husky sets core.hooksPath here: git runs these on commit, push…"},
	{"lefthook.yml", "hooks", High, "lefthook runs its commands from git hooks"},
	{"lefthook.yaml", "hooks", High, "lefthook runs its commands from git hooks"},
	{".lefthook.yml", "hooks", High, "lefthook runs its commands from git hooks"},
	{".lefthook.yaml", "hooks", High, "lefthook runs its commands from git hooks"},
	{"lefthook-local.yml", "hooks", High, "lefthook runs its commands from git hooks"},
	{".lefthook/**", "hooks", High, "lefthook runs these scripts from git hooks"},
	{".githooks/**", "hooks", High, "a common core.hooksPath: git runs these as hooks"},
	{".overcommit.yml", "hooks", High, "overcommit runs its hooks from git hooks"},
	// directory-entry tools
	{".envrc", "entry", High, "direnv runs it when you cd into the directory (once allowed)"},
	{".env", "entry", Medium, "direnv dotenv, mise, compose and many tools load it into the environment"},
	{"mise.toml", "entry", High, "mise runs its hooks and tasks and installs its tools on entry"},
	{".mise.toml", "entry", High, "mise runs its hooks and tasks and installs its tools on entry"},
	{"mise.local.toml", "entry", High, "mise runs its hooks and tasks on entry"},
	{".mise.local.toml", "entry", High, "mise runs its hooks and tasks on entry"},
	{".mise/**", "entry", High, "mise reads config and tasks from here"},
	{".config/mise/**", "entry", High, "mise reads config and tasks from here"},
	{".tool-versions", "entry", High, "asdf and mise install and run the tool versions it names"},
	{".rtx.toml", "entry", High, "rtx/mise runs its hooks on entry"},
	// editors
	{".vscode/tasks.json", "editor", High, "VS Code runs tasks, including runOn: folderOpen when the folder opens"},
	{".vscode/settings.json", "editor", High, "VS Code applies it on open (terminal profiles, tool paths, env)"},
	{".vscode/launch.json", "editor", High, "VS Code runs it on debug (preLaunchTask, program)"},
	{".vscode/**", "editor", Medium, "VS Code reads the workspace configuration from here"},
	{"*.code-workspace", "editor", High, "VS Code applies its settings and tasks when the workspace opens"},
	{".idea/runConfigurations/**", "editor", High, "JetBrains IDEs run these run configurations"},
	{".idea/workspace.xml", "editor", High, "JetBrains IDEs read run configurations and tasks from it"},
	{".idea/**", "editor", Medium, "JetBrains IDEs read project settings from here (tool paths, startup tasks)"},
	{".run/*.run.xml", "editor", High, "JetBrains IDEs run these run configurations"},
	{".devcontainer.json", "editor", High, "dev containers run initializeCommand on the host"},
	{".devcontainer/**", "editor", High, "dev containers run initializeCommand on the host; Dockerfiles build"},
	{".nvim.lua", "editor", High, "neovim runs it with exrc set"},
	{".nvimrc", "editor", High, "neovim runs it with exrc set"},
	{".exrc", "editor", High, "vim runs it with exrc set"},
	{".dir-locals.el", "editor", High, "Emacs applies its variables (eval) on visiting a file"},
	{".zed/**", "editor", High, "Zed reads tasks and settings from here"},
	{".helix/**", "editor", Medium, "Helix reads language servers and settings from here"},
	// agents
	{".claude/settings.json", "agent", High, "Claude Code runs its hooks and applies its permissions"},
	{".claude/settings.local.json", "agent", High, "Claude Code runs its hooks and applies its permissions"},
	{".claude/**", "agent", Medium, "Claude Code loads commands, agents and hooks from here"},
	{".mcp.json", "agent", High, "agents start the MCP servers it lists (commands run on the host)"},
	{".cursor/**", "agent", High, "Cursor reads MCP servers, rules and hooks from here"},
	{".gemini/**", "agent", High, "Gemini CLI reads settings and MCP servers from here"},
	{".codex/**", "agent", High, "Codex reads config and MCP servers from here"},
	{".continue/**", "agent", High, "Continue reads config and MCP servers from here"},
	{"opencode.json", "agent", High, "opencode reads its config (MCP servers, commands)"},
	{".aider.conf.yml", "agent", Medium, "aider reads it (lint and test commands)"},
	{"CLAUDE.md", "agent", Low, "agents read it as instructions"},
	{"AGENTS.md", "agent", Low, "agents read it as instructions"},
	{".cursorrules", "agent", Low, "Cursor reads it as instructions"},
	// git
	{".gitattributes", "git", High, "names filter, diff and merge drivers the host's git runs"},
	{".gitmodules", "git", High, "submodule URLs and update commands the host's git uses"},
	{".lfsconfig", "git", High, "git-lfs reads it (endpoints, transfer agents)"},
	{".gitconfig", "git", Medium, "a config file include.path may point at"},
	{".gitignore", "git", Low, "hides files from git status"},
	// CI
	{".github/workflows/**", "ci", High, "CI runs these workflows (and self-hosted runners run them on your machines)"},
	{".github/actions/**", "ci", High, "workflows run these actions"},
	{"action.yml", "ci", High, "a GitHub action's definition"},
	{"action.yaml", "ci", High, "a GitHub action's definition"},
	{".gitlab-ci.yml", "ci", High, "GitLab CI runs it"},
	{".circleci/**", "ci", High, "CircleCI runs it"},
	{".travis.yml", "ci", High, "Travis CI runs it"},
	{"azure-pipelines.yml", "ci", High, "Azure Pipelines runs it"},
	{"Jenkinsfile", "ci", High, "Jenkins runs it"},
	{".buildkite/**", "ci", High, "Buildkite runs it"},
	{".drone.yml", "ci", High, "Drone runs it"},
	{"bitbucket-pipelines.yml", "ci", High, "Bitbucket Pipelines runs it"},
	{"appveyor.yml", "ci", High, "AppVeyor runs it"},
	{".woodpecker.yml", "ci", High, "Woodpecker runs it"},
	{".woodpecker/**", "ci", High, "Woodpecker runs it"},
	{".forgejo/workflows/**", "ci", High, "Forgejo Actions runs it"},
	{".gitea/workflows/**", "ci", High, "Gitea Actions runs it"},
	// containers
	{"Dockerfile", "container", High, "docker build runs its RUN steps"},
	{"Dockerfile.*", "container", High, "docker build runs its RUN steps"},
	{"*.Dockerfile", "container", High, "docker build runs its RUN steps"},
	{"Containerfile", "container", High, "podman build runs its RUN steps"},
	{"docker-compose.yml", "container", High, "docker compose runs what it defines (mounts, privileges)"},
	{"docker-compose.yaml", "container", High, "docker compose runs what it defines (mounts, privileges)"},
	{"docker-compose.*.yml", "container", High, "docker compose runs what it defines"},
	{"docker-compose.*.yaml", "container", High, "docker compose runs what it defines"},
	{"compose.yml", "container", High, "docker compose runs what it defines (mounts, privileges)"},
	{"compose.yaml", "container", High, "docker compose runs what it defines (mounts, privileges)"},
	{"compose.*.yml", "container", High, "docker compose runs what it defines"},
	{"compose.*.yaml", "container", High, "docker compose runs what it defines"},
	{"docker-bake.hcl", "container", High, "docker buildx bake runs its builds"},
	{".dockerignore", "container", Low, "decides what docker build sends"},
}

// Match returns the first catalogue rule matching the slash-separated path exactly, or else the
// first matching it case-insensitively, or nil.
func Match(p string) *Rule {
	for _, fold := range []bool{false, true} {
		for i := range catalogue {
			if matchCase(catalogue[i].Pattern, p, fold) {
				return &catalogue[i]
			}
		}
	}
	return nil
}

// matchPattern matches a catalogue pattern (see the file comment) case-insensitively.
func matchPattern(pattern, p string) bool { return matchCase(pattern, p, true) }

func matchCase(pattern, p string, fold bool) bool {
	if fold {
		pattern, p = strings.ToLower(pattern), strings.ToLower(p)
	}
	if !strings.Contains(pattern, "/") {
		ok, _ := path.Match(pattern, path.Base(p))
		return ok
	}
	return matchSegments(strings.Split(pattern, "/"), strings.Split(p, "/"))
}

func matchSegments(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			if len(pat) == 1 {
				return len(segs) > 0
			}
			for i := 0; i <= len(segs); i++ {
				if matchSegments(pat[1:], segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], segs[0]); !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}

// matchConfig returns the most specific config-named path that is p or holds it (compared
// case-insensitively, as a case-insensitive host opens it).
func matchConfig(paths []ConfigPath, p string) (ConfigPath, bool) {
	var best ConfigPath
	found := false
	for _, cp := range paths {
		if _, ok := matchExtra([]string{cp.Path}, p); ok && (!found || len(cp.Path) > len(best.Path)) {
			best, found = cp, true
		}
	}
	return best, found
}

// matchExtra reports whether p is one of the extra host-executed paths (a file, or anything
// under a directory), compared case-insensitively.
func matchExtra(extra []string, p string) (string, bool) {
	lp := strings.ToLower(p)
	for _, x := range extra {
		lx := strings.ToLower(strings.Trim(path.Clean("/"+x), "/"))
		if lx == "" {
			continue
		}
		if lp == lx || strings.HasPrefix(lp, lx+"/") {
			return x, true
		}
	}
	return "", false
}
