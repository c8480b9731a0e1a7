package vm

import "testing"

func TestLimaPhase(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{`time="2026-11-30T00:12:30Z" level=info msg="[hostagent] Waiting for the essential requirement 1 of 2: \"ssh\""`, "waiting for SSH"},
		{`time="2026-11-30T00:12:30Z" level=info msg="Waiting for the essential requirement 1 of 3: \"ssh\""`, "waiting for SSH"},
		{`time="x" level=info msg="[hostagent] Waiting for the final requirement 1 of 1: \"boot scripts must have finished\""`, "provisioning"},
		{`time="x" level=info msg="[hostagent] The final requirement 1 of 1 is satisfied"`, ""},
		{`time="x" level=info msg="[hostagent] Waiting for the essential requirement 2 of 2: \"user session is ready for ssh\""`, ""},
		{`plain text`, ""},
	} {
		if got := limaPhase(tc.line); got != tc.want {
			t.Errorf("limaPhase(%q) = %q, want %q", tc.line, got, tc.want)
		}
	}
}

func TestLimaMsg(t *testing.T) {
	got := limaMsg(`time="x" level=fatal msg="failed to start: \"boom\"" extra=1`)
	if got != `failed to start: "boom"` {
		t.Errorf("limaMsg = %q", got)
	}
}
