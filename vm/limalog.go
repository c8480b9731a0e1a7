package vm

// This file reads limactl's log. limactl logs through logrus; with --log-format json (Lima ≥ 1.0,
// cmd/limactl/main.go) every record is one JSON object with the JSONFormatter's keys "level",
// "msg" and "time" plus any fields, and the host agent's records are propagated with their message
// prefixed "[hostagent] " (pkg/logrusutil.PropagateJSON). git corral asks for JSON when the
// limactl it runs lists the flag in its help, and reads the text format otherwise; each line is
// parsed as JSON first and as logrus text second, so a line limactl prints outside its logger
// is still logged.

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// limaRecord is one record of limactl's log.
type limaRecord struct {
	Level string `json:"level"`
	Msg   string `json:"msg"`
	Time  string `json:"time"`
}

// parseLimaLine reads one line of limactl's output: a JSON record, a logrus text line
// (time="…" level=… msg="…"), or anything else as an info message.
func parseLimaLine(line string) limaRecord {
	if strings.HasPrefix(line, "{") {
		var r limaRecord
		if err := json.Unmarshal([]byte(line), &r); err == nil && r.Msg != "" {
			return r
		}
	}
	r := limaRecord{Level: "info", Msg: limaMsg(line)}
	if _, after, ok := strings.Cut(line, "level="); ok {
		r.Level, _, _ = strings.Cut(after, " ")
	}
	if _, after, ok := strings.Cut(line, `time="`); ok {
		r.Time, _, _ = strings.Cut(after, `"`)
	}
	return r
}

// failed reports whether the record says limactl failed: logrus's error, fatal and panic levels.
func (r limaRecord) failed() bool {
	return r.Level == "error" || r.Level == "fatal" || r.Level == "panic"
}

// String is the record as the box's log shows it: one readable line, whatever limactl's format.
func (r limaRecord) String() string {
	return strings.TrimSpace(r.Time+" "+r.Level) + ": " + strings.ReplaceAll(r.Msg, "\n", " ")
}

// limaPhase maps a line of limactl's log (JSON or text) to a progress phase, or "".
func limaPhase(line string) string {
	return recordPhase(parseLimaLine(line))
}

// recordPhase maps one record to the phases users see: waiting for SSH, then provisioning.
// PhaseProvisioning is the progress phase while Lima waits for the guest's boot scripts to
// finish: its SSH requirements are met by then.
const PhaseProvisioning = "provisioning"

func recordPhase(r limaRecord) string {
	msg := strings.TrimPrefix(r.Msg, "[hostagent] ")
	switch {
	case strings.HasPrefix(msg, "Waiting for the essential requirement 1 of"):
		return "waiting for SSH"
	case strings.Contains(msg, `"boot scripts must have finished"`) && strings.HasPrefix(msg, "Waiting"):
		return PhaseProvisioning
	}
	return ""
}

// jsonLogArgs are the arguments that make limactl log JSON records.
var jsonLogArgs = []string{"--log-format", "json"}

// logFormats caches, per limactl path, whether it takes --log-format.
var logFormats sync.Map

// logArgs returns jsonLogArgs when limactl lists --log-format in its help, or nil (text).
func logArgs(ctx context.Context, limactl string) []string {
	if v, ok := logFormats.Load(limactl); ok {
		return v.([]string)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, limactl, "--help").Output()
	if err != nil {
		return nil // text this time; asked again next time
	}
	var args []string
	if helpHasLogFormat(string(out)) {
		args = jsonLogArgs
	}
	logFormats.Store(limactl, args)
	return args
}

// helpHasLogFormat reports whether limactl's help lists --log-format with json among its values.
func helpHasLogFormat(help string) bool {
	for _, l := range strings.Split(help, "\n") {
		if strings.Contains(l, "--log-format") && strings.Contains(l, "json") {
			return true
		}
	}
	return false
}
