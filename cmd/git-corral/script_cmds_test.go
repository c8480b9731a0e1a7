package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

var scriptCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	"jsonfield":  cmdJSONField,
	"status":     cmdStatus,
	"cmpjsonbox": cmdCmpJSONBox,
	"boxtrusted": cmdBoxTrusted,
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
