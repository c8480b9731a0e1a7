package vm

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/home"
)

// fakeLogLimactl writes a limactl that answers --help with or without the --log-format flag (as
// the pinned Lima does, and as an older one would), records its argv in $ARGS, prints the
// fixture $FIXTURE when asked for JSON and a logrus text line otherwise, and exits $RC.
func fakeLogLimactl(t *testing.T, withFlag bool) (*Manager, string) {
	t.Helper()
	dir := t.TempDir()
	help := `echo "Usage: limactl [command]"`
	if withFlag {
		help += `; echo '      --log-format string   Set the logging format [text, json] (default "text")'`
	}
	script := "#!/bin/sh\nif [ \"$1\" = --help ]; then " + help + "; exit 0; fi\n" +
		"echo \"$*\" >>\"$ARGS\"\n" +
		"case \" $* \" in *' --log-format json '*) cat \"$FIXTURE\" ;;\n" +
		"*) echo 'time=\"2026-12-01T23:20:01Z\" level=info msg=\"[hostagent] Waiting for the essential requirement 1 of 2: \\\"ssh\\\"\"' ;; esac\n" +
		"exit \"${RC:-0}\"\n"
	bin := filepath.Join(dir, "limactl")
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	args := filepath.Join(dir, "args")
	t.Setenv("ARGS", args)
	return &Manager{Limactl: bin, Home: home.Home{Dir: filepath.Join(dir, "corral")}}, args
}

// runFixture runs the fake limactl start on fixture and returns the progress shown, the box's
// log, limactl's argv and the error.
func runFixture(t *testing.T, m *Manager, args, fixture, rc string) (progress, log, argv string, err error) {
	t.Helper()
	fx, _ := filepath.Abs(filepath.Join("testdata", "limalog", fixture))
	t.Setenv("FIXTURE", fx)
	t.Setenv("RC", rc)
	var buf bytes.Buffer
	err = m.run(context.Background(), "wt-x-1a2b3c", NewProgress(&buf, false), "start", "wt-x-1a2b3c")
	b, _ := os.ReadFile(m.LogPath("wt-x-1a2b3c"))
	a, _ := os.ReadFile(args)
	return buf.String(), string(b), string(a), err
}

// TestLimaJSONLog: with the pinned Lima's flag, limactl is asked for JSON records, the recorded
// `limactl start` records give the phases users see in order, and the box's log holds readable
// lines, not JSON.
func TestLimaJSONLog(t *testing.T) {
	m, args := fakeLogLimactl(t, true)
	progress, log, argv, err := runFixture(t, m, args, "start.jsonl", "0")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(argv, "--log-format json start wt-x-1a2b3c") {
		t.Errorf("limactl argv %q: not asked for JSON", argv)
	}
	ssh, prov := strings.Index(progress, "waiting for SSH"), strings.Index(progress, "provisioning")
	if ssh < 0 || prov < ssh || strings.Count(progress, "waiting for SSH") != 1 {
		t.Errorf("progress from the JSON records:\n%s\nwant waiting for SSH once, then provisioning", progress)
	}
	if strings.Contains(log, `{"level"`) || !strings.Contains(log, `2026-12-01T23:20:42Z info: [hostagent] Mounting "/home/dev/src/main/.git"`) {
		t.Errorf("box log is not one readable line per record:\n%s", log)
	}
}

// TestLimaJSONLogFailure: a failed start's error carries the messages of its error and fatal
// records and names the box's log.
func TestLimaJSONLogFailure(t *testing.T) {
	m, args := fakeLogLimactl(t, true)
	_, _, _, err := runFixture(t, m, args, "start-failed.jsonl", "1")
	if err == nil {
		t.Fatal("a failed limactl start returned no error")
	}
	for _, want := range []string{"QEMU has already exited", `did not receive an event with the "running" status`, m.LogPath("wt-x-1a2b3c")} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "Waiting for") {
		t.Errorf("error %q carries info records", err)
	}
}

// TestLimaTextLogFallback: a limactl whose help lacks --log-format is not given it, and its
// text log still gives the phase.
func TestLimaTextLogFallback(t *testing.T) {
	m, args := fakeLogLimactl(t, false)
	progress, _, argv, err := runFixture(t, m, args, "start.jsonl", "0")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(argv, "--log-format") {
		t.Errorf("limactl without the flag was given it: %q", argv)
	}
	if !strings.Contains(progress, "waiting for SSH") {
		t.Errorf("no phase from the text log:\n%s", progress)
	}
}

// TestParseLimaLine is the table of lines limactl prints: JSON records (with extra fields), logrus
// text, and lines outside the logger, which stay info messages.
func TestParseLimaLine(t *testing.T) {
	for _, tc := range []struct {
		line, level, msg, phase string
	}{
		{`{"level":"info","msg":"[hostagent] Waiting for the essential requirement 1 of 2: \"ssh\"","time":"t"}`, "info", `[hostagent] Waiting for the essential requirement 1 of 2: "ssh"`, "waiting for SSH"},
		{`{"level":"info","msg":"[hostagent] Waiting for the final requirement 1 of 1: \"boot scripts must have finished\"","time":"t"}`, "info", `[hostagent] Waiting for the final requirement 1 of 1: "boot scripts must have finished"`, "provisioning"},
		{`{"error":"exit status 1","fields.level":"fatal","level":"error","msg":"[hostagent] boom","time":"t"}`, "error", "[hostagent] boom", ""},
		{`time="t" level=fatal msg="failed to start: \"boom\"" extra=1`, "fatal", `failed to start: "boom"`, ""},
		{`time="t" level=info msg="Waiting for the essential requirement 1 of 3: \"ssh\""`, "info", `Waiting for the essential requirement 1 of 3: "ssh"`, "waiting for SSH"},
		{`{not json`, "info", `{not json`, ""},
		{`{"level":"error"}`, "info", `{"level":"error"}`, ""},
		{`plain text from a child`, "info", "plain text from a child", ""},
	} {
		r := parseLimaLine(tc.line)
		if r.Level != tc.level || r.Msg != tc.msg || recordPhase(r) != tc.phase {
			t.Errorf("parseLimaLine(%q) = %+v phase %q, want level %q msg %q phase %q", tc.line, r, recordPhase(r), tc.level, tc.msg, tc.phase)
		}
	}
}
