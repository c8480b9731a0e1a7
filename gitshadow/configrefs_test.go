package gitshadow

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestParseCommand checks what a shell command value names: command words (paths or bare names
// for PATH), interpreter scripts, sh -c commands, git subcommands and path-looking operands;
// and that expansions, URLs and plain words name nothing.
func TestParseCommand(t *testing.T) {
	for _, c := range []struct {
		cmd         string
		bare, paths []string
	}{
		{"ci/fsmon.sh", nil, []string{"ci/fsmon.sh"}},
		{"./x arg", nil, []string{"./x"}},
		{"less -R", []string{"less"}, nil},
		{"sh ci/x.sh", []string{"sh"}, []string{"ci/x.sh"}},
		{"bash -e edit.sh", []string{"bash"}, []string{"edit.sh"}},
		{"node tools/tc.js --flag", []string{"node"}, []string{"tools/tc.js"}},
		{"sh -c 'tools/y.sh --now'", []string{"sh"}, []string{"tools/y.sh"}},
		{"FOO=1 env -i BAR=2 tools/run a b", []string{"env"}, []string{"tools/run"}},
		{"a | b/c; d && e/f || g", []string{"a", "d", "g"}, []string{"b/c", "e/f"}},
		{"cat $(tools/sub) `tools/bq`", []string{"cat"}, []string{"tools/sub", "tools/bq"}},
		{"x 2>log/err <in/put", []string{"x"}, []string{"log/err", "in/put"}},
		{"git credential-store --file=.creds/x get", []string{"git", "git-credential-store"}, []string{".creds/x"}},
		{"git -c a=b lfs filter-process", []string{"git", "git-lfs"}, nil},
		{`"tools/with space/p" x`, nil, []string{"tools/with space/p"}},
		{"if true; then hooks/h; fi", nil, []string{"hooks/h"}},
		{"$HOME/bin/x $EDITOR", nil, nil},
		{"curl https://example.com/x", []string{"curl"}, nil},
		{"echo a/b # tools/commented", nil, []string{"a/b"}},
		{"f() { tools/in-func; }; f", []string{"f"}, []string{"tools/in-func"}},
		{"tools/unterminated 'quote", nil, []string{"tools/unterminated"}},
	} {
		got := parseCommand(c.cmd)
		slices.Sort(got.bare)
		want := slices.Clone(c.bare)
		slices.Sort(want)
		if !slices.Equal(slices.Compact(got.bare), want) {
			t.Errorf("parseCommand(%q).bare = %q, want %q", c.cmd, got.bare, want)
		}
		for _, p := range c.paths {
			if !slices.Contains(got.paths, p) {
				t.Errorf("parseCommand(%q).paths = %q, lacks %q", c.cmd, got.paths, p)
			}
		}
		if len(c.paths) == 0 && len(got.paths) > 0 {
			t.Errorf("parseCommand(%q).paths = %q, want none", c.cmd, got.paths)
		}
	}
}

// TestKeyKind checks the key table against keys as git lists them, with near misses.
func TestKeyKind(t *testing.T) {
	for key, want := range map[string]valueKind{
		"core.fsmonitor": vBoolShell, "core.fsmonitorhookversion": 0, "core.hookspath": vDir,
		"diff.x.textconv": vShell, "diff.textconv": 0, "diff.external": vShell,
		"filter.lfs.process": vShell, "merge.x.driver": vShell, "merge.x.name": 0,
		"credential.helper": vHelper, "credential.https://h.example/a.b.helper": vHelper,
		"alias.st": vAlias, "alias": 0, "include.path": vInclude, "includeif.gitdir:~/w/.path": vInclude,
		"gpg.program": vProgram, "gpg.ssh.program": vProgram, "pager.log": vBoolShell,
		"lfs.customtransfer.x.path": vProgram, "lfs.x.path": 0, "user.name": 0, "core.bare": 0,
		"remote.origin.url": 0, "remote.origin.uploadpack": vShell,
	} {
		if got := keyKind(key); got != want {
			t.Errorf("keyKind(%q) = %d, want %d", key, got, want)
		}
	}
	for v, want := range map[string]bool{"": true, "true": true, "Off": true, "0": true, "12": true,
		"ci/fsmon.sh": false, "true.sh": false} {
		if isGitBool(v) != want {
			t.Errorf("isGitBool(%q) = %v", v, !want)
		}
	}
}

// TestKeyLines checks that the line of each value is found as git would read the file.
func TestKeyLines(t *testing.T) {
	data := "# comment\n[core]\n\tpager = less\n[core] fsmonitor = a.sh\n[diff \"X y\"]\n" +
		"\ttextconv = a \\\n\t\tb\n\ttextconv = c\n[Alias]\n\tq = !x ; comment\n\tflag\n"
	got := keyLines(data)
	for key, want := range map[string][]int{
		"core.pager": {3}, "core.fsmonitor": {4}, "diff.X y.textconv": {6, 8}, "alias.q": {10}, "alias.flag": {11},
	} {
		if !slices.Equal(got[key], want) {
			t.Errorf("keyLines %s = %v, want %v (all: %v)", key, got[key], want, got)
		}
	}
}

// TestConfigRefsResolve checks how named paths resolve: through a symlink in the tree (the
// link is snapshotted, the target shadowed), from a symlink outside the tree into it, ".."
// leaving the tree (nothing to do) or coming back into it, a missing file (watched), a path
// under the empty hooks dir (no second mount), and a symlink loop (a warning, no plan change).
func TestConfigRefsResolve(t *testing.T) {
	root := fixture(t)
	w := filepath.Join(root, "work")
	for _, d := range []string{"tools/real", "outside"} {
		os.MkdirAll(filepath.Join(w, d), 0o755)
	}
	os.MkdirAll(filepath.Join(root, "outside"), 0o755)
	for _, f := range []string{"tools/real/x.sh", "tools/real/back.sh", "tools/real/in.sh"} {
		os.WriteFile(filepath.Join(w, f), []byte("#!/bin/sh\n"), 0o755)
	}
	os.WriteFile(filepath.Join(root, "outside/esc.sh"), []byte("#!/bin/sh\n"), 0o755)
	os.Symlink("tools/real", filepath.Join(w, "tl"))
	os.Symlink(filepath.Join(w, "tools/real"), filepath.Join(root, "outside/into"))
	os.Symlink("loop2", filepath.Join(w, "loop1"))
	os.Symlink("loop1", filepath.Join(w, "loop2"))
	appendGlobal(t, "[alias]\n\ta = !tl/x.sh\n\tb = !../outside/esc.sh\n\tc = !tools/../../work/tools/real/back.sh\n"+
		"\td = !"+root+"/outside/into/in.sh\n\te = !tools/missing.sh\n\tf = !.git/hooks/fsmon\n\tg = !loop1/x\n"+
		"\th = !tl/../tools/real/x.sh\n")
	plan := discover(t, w)
	refs := map[string]ConfigRef{}
	for _, r := range plan.ConfigRefs {
		refs[r.Path] = r
	}
	kinds := map[string]Kind{}
	for _, s := range plan.Extra {
		kinds[s.Path] = s.Kind
	}
	for rel, want := range map[string]struct {
		use  string
		kind Kind
	}{
		"tl":                 {useFollows, Symlink},
		"tools/real/x.sh":    {useRuns, ReadOnly},
		"tools/real/back.sh": {useRuns, ReadOnly},
		"tools/real/in.sh":   {useRuns, ReadOnly},
		"tools/missing.sh":   {useRuns, Watched},
		// alias.h: tl/.. is the parent of the link's target (tools), not the top level.
		"tools/tools/real/x.sh": {useRuns, Watched},
		"tools":                 {"", Pin},
		"tools/real":            {"", Pin},
	} {
		p := filepath.Join(w, rel)
		if want.use != "" && refs[p].Use != want.use {
			t.Errorf("%s: ref %+v, want use %q", rel, refs[p], want.use)
		}
		if kinds[p] != want.kind {
			t.Errorf("%s: shadow %q, want %q", rel, kinds[p], want.kind)
		}
	}
	if !slices.ContainsFunc(plan.ConfigRefs, func(r ConfigRef) bool {
		return r.Path == filepath.Join(w, "tools/real/x.sh") && r.Key == "alias.a" && strings.HasPrefix(r.Origin, "~/gitconfig:")
	}) {
		t.Errorf("tools/real/x.sh is not named by alias.a in ~/gitconfig:N: %+v", plan.ConfigRefs)
	}
	if _, ok := refs[filepath.Join(root, "outside/esc.sh")]; ok {
		t.Errorf("a path outside the tree (\"..\" escape) is in the plan: %+v", plan.ConfigRefs)
	}
	if _, ok := kinds[filepath.Join(w, ".git/hooks/fsmon")]; ok {
		t.Errorf("a path under the empty hooks dir got a mount of its own")
	}
	if !slices.ContainsFunc(plan.Warnings, func(s string) bool { return strings.Contains(s, "symbolic links") }) {
		t.Errorf("no warning for the symlink loop: %q", plan.Warnings)
	}
	for _, d := range plan.DiffPaths() {
		if strings.HasPrefix(d.Path, ".git/") || strings.HasPrefix(d.Path, "/") {
			t.Errorf("DiffPaths holds %q, not a work-tree path", d.Path)
		}
	}
	script, err := plan.GuestScript()
	if err != nil || strings.Contains(script, "'"+filepath.Join(w, "tl")+"'") {
		t.Errorf("guest script: %v; a symlink must not be bind-mounted (a mount follows it)", err)
	}
}

// TestConfigRefsHostPathLookup checks that a bare program name resolves into the tree only
// through a PATH entry there, and only up to the first PATH entry that holds the program.
func TestConfigRefsHostPathLookup(t *testing.T) {
	root := fixture(t)
	w := filepath.Join(root, "work")
	bin := filepath.Join(root, "bin")
	os.MkdirAll(filepath.Join(w, "node_modules/.bin"), 0o755)
	os.MkdirAll(bin, 0o755)
	os.WriteFile(filepath.Join(bin, "found-first"), []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(w, "node_modules/.bin/tc"), []byte("#!/bin/sh\n"), 0o755)
	t.Setenv("PATH", bin+":node_modules/.bin:"+os.Getenv("PATH"))
	appendGlobal(t, "[diff \"x\"]\n\ttextconv = tc --x\n[core]\n\tpager = found-first\n")
	plan := discover(t, w)
	var got []string
	for _, r := range plan.ConfigRefs {
		got = append(got, r.Path)
	}
	if !slices.Contains(got, filepath.Join(w, "node_modules/.bin/tc")) {
		t.Errorf("textconv tc found on PATH in node_modules/.bin is not named: %q", got)
	}
	if slices.Contains(got, filepath.Join(w, "node_modules/.bin/found-first")) {
		t.Errorf("found-first is found in %s before the tree's PATH entry, yet named: %q", bin, got)
	}
}

// appendGlobal appends text to the test's global git config.
func appendGlobal(t *testing.T, text string) {
	t.Helper()
	f, err := os.OpenFile(os.Getenv("GIT_CONFIG_GLOBAL"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// TestConfigRefsNamedDirOnTheWay checks that a directory both named (core.hooksPath) and on the
// way to another named file is shadowed read-only, not merely pinned, whatever the order of the
// keys, and that nothing inside it gets a mount of its own (the outer mount would hide it).
func TestConfigRefsNamedDirOnTheWay(t *testing.T) {
	root := fixture(t)
	w := filepath.Join(root, "work")
	os.MkdirAll(filepath.Join(w, "hk/sub"), 0o755)
	os.WriteFile(filepath.Join(w, "hk/sub/x"), []byte("#!/bin/sh\n"), 0o755)
	appendGlobal(t, "[core]\n\tfsmonitor = hk/sub/x\n\thooksPath = hk\n")
	plan := discover(t, w)
	kinds := map[string]Kind{}
	for _, s := range plan.Extra {
		if _, dup := kinds[s.Path]; dup {
			t.Errorf("two shadows for %s", s.Path)
		}
		kinds[s.Path] = s.Kind
	}
	if k := kinds[filepath.Join(w, "hk")]; k != ReadOnly {
		t.Errorf("hk: shadow %q, want readonly", k)
	}
	for _, p := range []string{"hk/sub", "hk/sub/x"} {
		if k, ok := kinds[filepath.Join(w, p)]; ok {
			t.Errorf("%s inside the read-only hk has a shadow of its own: %q", p, k)
		}
	}
}
