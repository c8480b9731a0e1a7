package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cpuguy83/go-md2man/v2/md2man"

	"github.com/git-corral/git-corral/docs/man"
)

// TestHelpMatchesManPage keeps the one source of help whole: every command has a section in the
// man page, that section names each of the command's flags, --help prints exactly that
// section, and -h a short usage in step with it: the section's synopsis and every flag.
func TestHelpMatchesManPage(t *testing.T) {
	for _, c := range commands() {
		sec := man.Section(c.name)
		if sec == "" {
			t.Errorf("command %q has no '## git corral %s' section in docs/man/git-corral.1.md", c.name, c.name)
			continue
		}
		for _, f := range flagNames(c) {
			if !strings.Contains(sec, "**--"+f+"**") {
				t.Errorf("the man page section of %q does not document --%s", c.name, f)
			}
		}
		var out, errOut bytes.Buffer
		a := &app{stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }}
		if code := a.main(t.Context(), []string{c.name, "--help"}); code != 0 {
			t.Errorf("git corral %s --help exited %d: %s", c.name, code, errOut.String())
		}
		if out.String() != man.Plain(sec) {
			t.Errorf("git corral %s --help printed\n%s\nwant the man page section\n%s", c.name, out.String(), man.Plain(sec))
		}
		out.Reset()
		if code := a.main(t.Context(), []string{c.name, "-h"}); code != 0 {
			t.Errorf("git corral %s -h exited %d: %s", c.name, code, errOut.String())
		}
		short := out.String()
		synopsis := strings.TrimSpace(man.Plain(strings.SplitN(sec, "\n\n", 2)[0]))
		if !strings.HasPrefix(short, "usage: "+synopsis+"\n") {
			t.Errorf("git corral %s -h does not start with the man page's synopsis %q:\n%s", c.name, synopsis, short)
		}
		for _, f := range flagNames(c) {
			if !strings.Contains(short, "--"+f) {
				t.Errorf("git corral %s -h does not list --%s", c.name, f)
			}
		}
		if n := strings.Count(short, "\n"); n >= strings.Count(man.Plain(sec), "\n") && n > 25 {
			t.Errorf("git corral %s -h is %d lines, no shorter than the manual section", c.name, n)
		}
	}
}

// TestManPageRendered fails when docs/man/git-corral.1 is stale: run 'make man'.
func TestManPageRendered(t *testing.T) {
	got, err := os.ReadFile(filepath.Join("..", "..", "docs", "man", "git-corral.1"))
	if err != nil {
		t.Fatal(err)
	}
	if want := md2man.Render([]byte(man.Source)); !bytes.Equal(got, want) {
		t.Error("docs/man/git-corral.1 is not the rendering of docs/man/git-corral.1.md: run 'make man'")
	}
}

// TestManSectionsAreCommands catches a section left behind by a removed or renamed command.
func TestManSectionsAreCommands(t *testing.T) {
	for _, line := range strings.Split(man.Source, "\n") {
		if name, ok := strings.CutPrefix(line, "## git corral "); ok && lookup(name) == nil {
			t.Errorf("man page documents %q, which is not in the command table", name)
		}
	}
}

// TestCommandsGrouped: help lists every command under one of the groups, so none is left out of
// the summary.
func TestCommandsGrouped(t *testing.T) {
	var out bytes.Buffer
	(&app{}).printSummary(&out)
	for _, c := range commands() {
		if !slices.Contains(groupOrder, c.group) {
			t.Errorf("command %q has group %q, not one of %q", c.name, c.group, groupOrder)
		}
		if !strings.Contains(out.String(), "   "+c.name+" ") {
			t.Errorf("help does not list %q", c.name)
		}
	}
}
