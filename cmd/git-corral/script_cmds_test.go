package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

var scriptCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	"jsonfield":      cmdJSONField,
	"status":         cmdStatus,
	"cmpjsonbox":     cmdCmpJSONBox,
	"boxtrusted":     cmdBoxTrusted,
	"previewrefuses": cmdPreviewRefuses,
}

// cmdBoxTrusted copies a file to the trusted per-project config of the box named in an info
// JSON document: boxtrusted INFO.json FILE.
func cmdBoxTrusted(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: boxtrusted INFO.json FILE")
	}
	var doc struct{ Box string }
	if err := json.Unmarshal([]byte(ts.ReadFile(args[0])), &doc); err != nil || doc.Box == "" {
		ts.Fatalf("%s: no box (%v)", args[0], err)
	}
	dst := ts.Getenv("CORRAL_HOME") + "/projects/" + doc.Box + ".toml"
	if err := os.WriteFile(dst, []byte(ts.ReadFile(args[1])), 0o600); err != nil {
		ts.Fatalf("%v", err)
	}
}

// cmdCmpJSONBox compares the "box" field of two JSON documents: cmpjsonbox A B same|differ.
func cmdCmpJSONBox(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 || (args[2] != "same" && args[2] != "differ") {
		ts.Fatalf("usage: cmpjsonbox A B same|differ")
	}
	box := func(file string) string {
		var doc struct{ Box string }
		if err := json.Unmarshal([]byte(ts.ReadFile(file)), &doc); err != nil || doc.Box == "" {
			ts.Fatalf("%s: no box in JSON (%v)", file, err)
		}
		return doc.Box
	}
	a, b := box(args[0]), box(args[1])
	if (a == b) != (args[2] == "same") {
		ts.Fatalf("boxes %q and %q: want %s", a, b, args[2])
	}
}

// cmdStatus runs a program and checks its exact exit status: status N PROG ARGS...
// Its stdout and stderr are kept for the following stdout/stderr checks, as with exec.
func cmdStatus(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: status N PROG ARGS...")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("status: bad exit status %q", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("status: run %s: %v", args[1], err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", strings.Join(args[1:], " "), got, want)
	}
}

// cmdJSONField checks that a file holds exactly one JSON document whose field (a dotted path)
// has the given value: jsonfield FILE PATH VALUE. With a negation, the value must differ.
func cmdJSONField(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: jsonfield FILE PATH VALUE")
	}
	data := ts.ReadFile(args[0])
	dec := json.NewDecoder(strings.NewReader(data))
	var doc any
	if err := dec.Decode(&doc); err != nil {
		ts.Fatalf("%s is not JSON: %v", args[0], err)
	}
	if dec.More() {
		ts.Fatalf("%s holds more than one JSON document", args[0])
	}
	cur := doc
	for _, k := range strings.Split(args[1], ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			ts.Fatalf("%s: %s: not an object at %q", args[0], args[1], k)
		}
		if cur, ok = m[k]; !ok {
			ts.Fatalf("%s: no field %q", args[0], args[1])
		}
	}
	var got string
	switch v := cur.(type) {
	case string:
		got = v
	default:
		b, _ := json.Marshal(v)
		got = string(b)
	}
	want := os.Expand(args[2], ts.Getenv)
	if (got == want) == neg {
		ts.Fatalf("%s: %s = %q, want %s%q", args[0], args[1], got, map[bool]string{true: "not ", false: ""}[neg], want)
	}
}

// cmdPreviewRefuses checks that a session and every preview refuse the checkout in the current
// directory alike: previewrefuses NAME PATTERN. The session ('git corral run --yes -- true')
// exits 1 with one "corral: error: E" line matching PATTERN and one "corral: hint: H" line;
// 'provision render --out $WORK/NAME' and 'config check' exit 1 with the same stderr (render
// writing nothing); 'config check --json' exits 1 with clean false and refused {E, H}; 'info
// --json' exits 0 with refused {E, H}, and 'info' says "a session would refuse this box: E".
func cmdPreviewRefuses(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: previewrefuses NAME PATTERN")
	}
	run := func(want int, argv ...string) (stdout, stderr string) {
		got := 0
		if err := ts.Exec("git", append([]string{"corral"}, argv...)...); err != nil {
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				ts.Fatalf("git corral %s: %v", strings.Join(argv, " "), err)
			}
			got = ee.ExitCode()
		}
		stdout, stderr = ts.ReadFile("stdout"), ts.ReadFile("stderr")
		if got != want {
			ts.Fatalf("git corral %s exited %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(argv, " "), got, want, stdout, stderr)
		}
		return stdout, stderr
	}
	_, session := run(1, "run", "--yes", "--", "true")
	lines := strings.Split(strings.TrimSuffix(session, "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "corral: error: ") || !strings.HasPrefix(lines[1], "corral: hint: ") {
		ts.Fatalf("the session's refusal is not one error and one hint line:\n%s", session)
	}
	e, h := strings.TrimPrefix(lines[0], "corral: error: "), strings.TrimPrefix(lines[1], "corral: hint: ")
	if ok, err := regexp.MatchString(args[1], e); err != nil || !ok {
		ts.Fatalf("the session's refusal %q does not match %q (%v)", e, args[1], err)
	}
	refused := func(what, doc string) {
		var d struct {
			Clean   *bool
			Refused *struct{ Error, Hint string }
		}
		if err := json.Unmarshal([]byte(doc), &d); err != nil {
			ts.Fatalf("%s: %v\n%s", what, err, doc)
		}
		if d.Refused == nil || d.Refused.Error != e || d.Refused.Hint != h {
			ts.Fatalf("%s: refused = %+v, want the session's error %q and hint %q", what, d.Refused, e, h)
		}
		if d.Clean != nil && *d.Clean {
			ts.Fatalf("%s: clean is true", what)
		}
	}
	out, _ := run(0, "info", "--json")
	refused("info --json", out)
	if out, _ = run(0, "info"); !strings.Contains(out, "\na session would refuse this box: "+e+"\n  hint: "+h+"\n") {
		ts.Fatalf("info does not say the session's refusal %q:\n%s", e, out)
	}
	dir := ts.MkAbs("$WORK/" + args[0])
	if out, errOut := run(1, "provision", "render", "--out", dir); errOut != session || out != "" {
		ts.Fatalf("provision render: stdout %q, stderr\n%s\nwant nothing and the session's\n%s", out, errOut, session)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		ts.Fatalf("provision render left %s behind (%v)", dir, err)
	}
	if out, errOut := run(1, "config", "check"); errOut != session || out != "" {
		ts.Fatalf("config check: stdout %q, stderr\n%s\nwant nothing and the session's\n%s", out, errOut, session)
	}
	out, errOut := run(1, "config", "check", "--json")
	refused("config check --json", out)
	if errOut != session {
		ts.Fatalf("config check --json: stderr\n%s\nwant the session's\n%s", errOut, session)
	}
}
