package provision

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/policy"
)

// TestApprovalCoversWhatScriptsPullIn is issue #19 item 7, one row per way a script pulls in a
// repository file: after approval, editing that file must make CheckApproved refuse
// (ErrNotApproved) naming it. The control in each row: CheckApproved passes after approval,
// before the edit.
func TestApprovalCoversWhatScriptsPullIn(t *testing.T) {
	const x = "d/x.sh"
	cases := []struct {
		name, script, dep string
	}{
		{"dot", ". ./d/x.sh", x},
		{"source", "source d/x.sh", x},
		{"source with args", "source d/x.sh one two", x},
		{"brace group", "{ . ./d/x.sh; }", x},
		{"subshell", "( . ./d/x.sh )", x},
		{"command dot", "command . ./d/x.sh", x},
		{"builtin source", "builtin source d/x.sh", x},
		{"if then", "if true; then . ./d/x.sh; fi", x},
		{"function body", "f() { . ./d/x.sh; }\nf", x},
		{"after &&", "true && . ./d/x.sh", x},
		{"double-quoted", `. "./d/x.sh"`, x},
		{"single-quoted", `. './d/x.sh'`, x},
		{"quoted in parts", `. ./d/"x".sh`, x},
		{"backslash dot", `\. ./d/x.sh`, x},
		{"backslash source", `\source d/x.sh`, x},
		{"backslash in path", `. ./d/x\.sh`, x},
		{"ansi-c dot", `$'\x2e' ./d/x.sh`, x},
		{"line continuation", ". \\\n./d/x.sh", x},
		{"eval cat", `eval "$(cat d/x.sh)"`, x},
		{"eval redirect", `eval "$(<d/x.sh)"`, x},
		{"eval backquotes", "eval \"`cat d/x.sh`\"", x},
		{"eval literal", `eval ". ./d/x.sh"`, x},
		{"source process substitution", "source <(cat d/x.sh)", x},
		{"cd then dot", "cd d && . ./x.sh", x},
		{"cd then bash", "cd d\nbash x.sh", x},
		{"bash", "bash d/x.sh", x},
		{"sh", "sh d/x.sh", x},
		{"sh with options", "sh -eux d/x.sh", x},
		{"bash -o", "bash -o pipefail d/x.sh", x},
		{"run by path", "./d/x.sh", x},
		{"run by path with args", "d/x.sh --flag", x},
		{"exec", "exec ./d/x.sh", x},
		{"exec bash", "exec bash d/x.sh", x},
		{"absolute bash", "/bin/bash d/x.sh", x},
		{"env bash", "env bash d/x.sh", x},
		{"env with options", "env -i FOO=1 -u BAR bash d/x.sh", x},
		{"env -S", `env -S "bash d/x.sh"`, x},
		{"env -S attached", `env -S'sh -e d/x.sh'`, x},
		{"env -C", "env -C d sh x.sh", x},
		{"sudo", "sudo -u nobody bash d/x.sh", x},
		{"timeout", "timeout 10 bash d/x.sh", x},
		{"nice nohup", "nice -n 5 nohup sh d/x.sh", x},
		{"xargs with file", "xargs bash d/x.sh </dev/null", x},
		{"xargs -I", "echo d/x.sh | xargs -I{} bash {}", x},
		{"find -exec", "find d -name '*.sh' -exec sh {} \\;", x},
		{"bash < file", "bash < d/x.sh", x},
		{"sh -s < file", "sh -s -- arg < d/x.sh", x},
		{"source /dev/stdin", ". /dev/stdin < d/x.sh", x},
		{"here-string of cat", `bash <<< "$(cat d/x.sh)"`, x},
		{"here-string of code", `bash <<< ". ./d/x.sh"`, x},
		{"here-document", "bash <<'EOF'\n. ./d/x.sh\nEOF", x},
		{"pipe of cat", "cat d/x.sh | sh", x},
		{"pipe of echo", `echo ". ./d/x.sh" | bash`, x},
		{"bash -c", `bash -c ". ./d/x.sh"`, x},
		{"sh -ec", `sh -ec '. ./d/x.sh'`, x},
		{"dirname $0", `. "$(dirname "$0")/d/x.sh"`, x},
		{"BASH_SOURCE", `. "${BASH_SOURCE%/*}/d/x.sh"`, x},
		{"variable path", `. "d/$NAME.sh"`, x},
		{"glob loop", `for f in d/*.sh; do . "$f"; done`, x},
		{"eval of a variable", `eval "$CODE"`, x},
		{"python", "python3 d/x.py", "d/x.py"},
		{"python imports beside it", "python3 -u d/main.py", "d/helper.py"},
		{"python -m", "cd d && python3 -m helper", "d/helper.py"},
		{"node", "node d/x.js", "d/x.js"},
		{"perl", "perl -w d/x.pl", "d/x.pl"},
		{"ruby", "ruby d/x.rb", "d/x.rb"},
		{"make -f", "make -f d/build.mk", "d/build.mk"},
		{"make -f includes", "make -f d/build.mk", "d/rules.mk"},
		{"make -C", "make -C d all", "d/Makefile"},
		{"nested", ". ./d/a.sh", x},
		{"data read", "V=$(cat d/v.json)", "d/v.json"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, h, top := reviewEnv(t)
			writeFiles(t, top, map[string]string{
				"setup.sh": "#!/bin/sh\n" + c.script + "\n",
				x:          "echo approved\n", "d/x.py": "print(1)\n", "d/main.py": "import helper\n", "d/helper.py": "X = 1\n",
				"d/x.js": "1\n", "d/x.pl": "1;\n", "d/x.rb": "1\n", "d/build.mk": "include d/rules.mk\n", "d/rules.mk": "all:\n",
				"d/Makefile": "all:\n", "d/a.sh": "bash d/x.sh\n", "d/v.json": "{\"v\": [1, 2}\n",
			})
			req := Request{Top: top, Scripts: []string{"setup.sh"}, Network: policy.NetworkOffline}
			r, err := Review(ctx, h, "box", req)
			if err != nil {
				t.Fatal(err)
			}
			if s := r.Scripts[0]; s.State != StateNew {
				t.Fatalf("state %s, problems %q", s.State, s.Problems)
			}
			if err := Approve(ctx, h, r); err != nil {
				t.Fatal(err)
			}
			if _, err := CheckApproved(ctx, h, "box", req); err != nil {
				t.Fatalf("control: approved and unchanged, CheckApproved: %v", err)
			}
			writeFiles(t, top, map[string]string{c.dep: "echo CHANGED\n"})
			_, err = CheckApproved(ctx, h, "box", req)
			if !errors.Is(err, ErrNotApproved) || !strings.Contains(err.Error(), fmt.Sprintf("%q", c.dep)) {
				r, _ := Review(ctx, h, "box", req)
				t.Fatalf("after editing %s: CheckApproved = %v; want ErrNotApproved naming it\nsources %v\ndirs %v\nflags %q", c.dep, err, r.Scripts[0].Sources, r.Scripts[0].Directories, r.Scripts[0].Flags)
			}
		})
	}
}

// TestReviewSaysWhatItCannotDetermine: a path known only at run time asks for its whole
// directory, and review says so; a script whose files are all named literally needs none, and
// editing a file it does not use re-prompts nothing (the control).
func TestReviewSaysWhatItCannotDetermine(t *testing.T) {
	ctx, h, top := reviewEnv(t)
	writeFiles(t, top, map[string]string{
		"dyn.sh": "#!/bin/sh\n. \"lib/$NAME.sh\"\n", "lit.sh": "#!/bin/sh\n. ./lib/a.sh\nV=$(cat data/v.json)\n", "data/v.json": "{\"v\": [1, 2}\n",
		"lib/a.sh": "A=1\n", "lib/b.sh": "B=1\n", "other/c.sh": "C=1\n",
	})
	req := Request{Top: top, Scripts: []string{"dyn.sh", "lit.sh"}, Network: policy.NetworkOffline}
	r, err := Review(ctx, h, "box", req)
	if err != nil {
		t.Fatal(err)
	}
	dyn, lit := r.Scripts[0], r.Scripts[1]
	if strings.Join(dyn.Directories, ",") != "lib" || !strings.Contains(strings.Join(dyn.Flags, "\n"), `names a file at run time ("lib/$NAME.sh"), which review cannot determine: the approval covers every file under lib/`) {
		t.Fatalf("dynamic: dirs %q flags %q", dyn.Directories, dyn.Flags)
	}
	if len(lit.Directories) != 0 || len(lit.Sources) != 2 {
		t.Fatalf("literal: dirs %q sources %v, want lib/a.sh and data/v.json (data, not shell: no directory)", lit.Directories, lit.Sources)
	}
	if err := Approve(ctx, h, r); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, top, map[string]string{"other/c.sh": "C=2\n", "lib/b.sh": "B=2\n"})
	r, _ = Review(ctx, h, "box", req)
	if r.Scripts[0].State != StateChanged || strings.Join(r.Scripts[0].Changed, ",") != "lib/b.sh" || r.Scripts[1].State != StateApproved {
		t.Fatalf("after editing lib/b.sh and other/c.sh: %s %q / %s", r.Scripts[0].State, r.Scripts[0].Changed, r.Scripts[1].State)
	}
	var buf bytes.Buffer
	FormatReview(&buf, r)
	for _, want := range []string{"  covers:  every file under lib/\n", "  changed: lib/b.sh\n", "which review cannot determine: the approval covers every file under lib/", "+B=2"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("review view lacks %q:\n%s", want, buf.String())
		}
	}
	// A file added to an approved directory re-prompts too.
	writeFiles(t, top, map[string]string{"lib/b.sh": "B=1\n", "lib/new.sh": "N=1\n"})
	r, _ = Review(ctx, h, "box", req)
	if r.Scripts[0].State != StateChanged || strings.Join(r.Scripts[0].Changed, ",") != "lib/new.sh" {
		t.Fatalf("after adding lib/new.sh: %s %q", r.Scripts[0].State, r.Scripts[0].Changed)
	}
}

// TestReviewRefusesWhatCannotBeCovered: a directory too big to approve whole, a symlink in
// one, and code read from the live project (absolute path, $CORRAL_PROJECT_DIR) are refused
// with a message naming the file or path; the same scripts with the cause removed are not.
func TestReviewRefusesWhatCannotBeCovered(t *testing.T) {
	ctx, h, top := reviewEnv(t)
	big := map[string]string{}
	for i := 0; i <= MaxDirFiles; i++ {
		big[fmt.Sprintf("big/f%03d.sh", i)] = "true\n"
	}
	writeFiles(t, top, big)
	writeFiles(t, top, map[string]string{
		"big.sh": "#!/bin/sh\n. \"big/$X\"\n", "small.sh": "#!/bin/sh\n. \"small/$X\"\n", "small/a.sh": "true\n",
		"link.sh": "#!/bin/sh\n. \"linked/$X\"\n", "linked/a.sh": "true\n",
		"abs.sh": "#!/bin/sh\n. " + top + "/small/a.sh\n", "rel.sh": "#!/bin/sh\n. ./small/a.sh\n",
		"live.sh": "#!/bin/sh\n. \"$CORRAL_PROJECT_DIR/small/a.sh\"\n", "livecd.sh": "#!/bin/sh\ncd \"$CORRAL_PROJECT_DIR\"\n. ./small/a.sh\n",
		"workcd.sh": "#!/bin/sh\ncd \"$CORRAL_PROJECT_DIR\"\nnpm ci\n",
	})
	if err := os.Symlink("/etc/passwd", filepath.Join(top, "linked/pw")); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		"big.sh":    fmt.Sprintf("approving every file under big/: more than %d files", MaxDirFiles),
		"link.sh":   "approving every file under linked/: linked/pw is a symlink",
		"abs.sh":    fmt.Sprintf("reads %q from the live project by its absolute path", top+"/small/a.sh"),
		"live.sh":   "from the live project",
		"livecd.sh": `reads "./small/a.sh" from the live project after cd to CORRAL_PROJECT_DIR`,
		"small.sh":  "",
		"rel.sh":    "",
		"workcd.sh": "",
	}
	for script, want := range cases {
		r, err := Review(ctx, h, "box", Request{Top: top, Scripts: []string{script}, Network: policy.NetworkOffline})
		if err != nil {
			t.Fatal(err)
		}
		s := r.Scripts[0]
		got := strings.Join(s.Problems, "\n")
		switch {
		case want == "" && s.State != StateNew:
			t.Errorf("%s: state %s problems %q, want new (the control)", script, s.State, got)
		case want != "" && (s.State != StateRefused || !strings.Contains(got, want)):
			t.Errorf("%s: state %s problems %q, want refused naming %q", script, s.State, got, want)
		}
	}
}
