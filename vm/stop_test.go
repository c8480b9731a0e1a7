package vm

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/home"
)

// raceLimactl is a limactl whose verbs meet another instance being made or deleted beside the
// box, as the real one does (seen in CI): each prints Lima's error for the other instance's
// missing lima.yaml and exits 1, after doing its work or not:
//   - stop shuts the box down first when $STOP_DOES=shutdown (its host agent's and driver's PID
//     files go, as their exit removes them); otherwise the box keeps running;
//   - start fails so the first $RACE_STARTS times (counted in $FAKE_DIR/starts), then succeeds;
//     with $START_ERR set it fails with that message instead, every time;
//   - delete removes the instance first when $DELETE_DOES=remove.
const raceLimactl = `#!/bin/sh
while [ "${1#--}" != "$1" ]; do shift; done
race() { echo "time=\"2026-12-05T19:26:10Z\" level=fatal msg=\"open $LIMA_HOME/other-123abc/lima.yaml: no such file or directory\""; exit 1; }
case $1 in
stop) [ "$STOP_DOES" = shutdown ] && rm -f "$LIMA_HOME/$2/ha.pid" "$LIMA_HOME/$2/qemu.pid"; race ;;
start)
	n=$(($(cat "$FAKE_DIR/starts" 2>/dev/null || echo 0) + 1)); echo $n >"$FAKE_DIR/starts"
	if [ -n "${START_ERR:-}" ]; then echo "time=\"2026-12-05T19:26:10Z\" level=fatal msg=\"$START_ERR\""; exit 1; fi
	[ "$n" -le "${RACE_STARTS:-0}" ] && race; exit 0 ;;
delete) for box; do :; done; [ "$DELETE_DOES" = remove ] && rm -rf "$LIMA_HOME/$box"; race ;;
esac
exit 2
`

// raceManager is a Manager on raceLimactl with box's instance reading as Running, beside a
// directory of another instance that has no lima.yaml.
func raceManager(t *testing.T, box string) *Manager {
	t.Helper()
	root := t.TempDir()
	h := home.Home{Dir: filepath.Join(root, "corral")}
	bin := filepath.Join(root, "limactl")
	if err := os.WriteFile(bin, []byte(raceLimactl), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LIMA_HOME", h.LimaHome())
	t.Setenv("FAKE_DIR", root)
	runningInstance(t, h, box)
	return &Manager{Limactl: bin, Home: h}
}

// runningInstance makes box's instance directory read as Running (live PIDs: this process's, an
// SSH config) beside a directory of another instance that has no lima.yaml yet.
func runningInstance(t *testing.T, h home.Home, box string) {
	t.Helper()
	dir := filepath.Join(h.LimaHome(), box)
	writeTestFile(t, filepath.Join(dir, "lima.yaml"), "vmType: qemu\nimages: [{location: /nonexistent.img}]\n")
	pid := strconv.Itoa(os.Getpid()) + "\n"
	writeTestFile(t, filepath.Join(dir, "ha.pid"), pid)
	writeTestFile(t, filepath.Join(dir, "qemu.pid"), pid)
	writeTestFile(t, filepath.Join(dir, "ssh.config"), "Host lima-"+box+"\n")
	if err := os.MkdirAll(filepath.Join(h.LimaHome(), "other-123abc"), 0o700); err != nil {
		t.Fatal(err)
	}
}

// TestStopReconcileRace: a limactl stop that fails after the box has shut down (Lima's network
// reconciliation tripping over an instance being created beside it) is a stop, logged in the
// box's log; the control, the same exit with the box still running, is an error.
func TestStopReconcileRace(t *testing.T) {
	for _, tc := range []struct {
		does   string
		wantOK bool
	}{{"shutdown", true}, {"nothing", false}} {
		t.Run(tc.does, func(t *testing.T) {
			const box = "proj-1a2b3c"
			m := raceManager(t, box)
			t.Setenv("STOP_DOES", tc.does)
			if st, err := m.Inspect(box); err != nil || st.Status != "Running" {
				t.Fatalf("before the stop the box reads %+v, %v; want Running", st, err)
			}
			err := m.Stop(context.Background(), box)
			st, ierr := m.Inspect(box)
			if ierr != nil {
				t.Fatal(ierr)
			}
			log, _ := os.ReadFile(m.LogPath(box))
			if tc.wantOK {
				if err != nil || st.Status != "Stopped" {
					t.Fatalf("Stop = %v with the box %s; want nil: the box stopped", err, st.Status)
				}
				if !strings.Contains(string(log), "after the box stopped") || !strings.Contains(string(log), "other-123abc/lima.yaml") {
					t.Errorf("box log does not record limactl's error after the stop:\n%s", log)
				}
				return
			}
			if err == nil || st.Status != "Running" {
				t.Fatalf("Stop = %v with the box %s; want limactl's error and the box still running", err, st.Status)
			}
			if !strings.Contains(err.Error(), "lima.yaml") {
				t.Errorf("Stop's error %q does not carry limactl's message", err)
			}
		})
	}
}

// TestStartRetriesReconcileRace: a limactl start that failed on another instance's missing
// lima.yaml (before it started anything) is tried again, at most three times in all; the
// control, a start that fails for another reason, is not.
func TestStartRetriesReconcileRace(t *testing.T) {
	for _, tc := range []struct {
		name, races, startErr string
		wantOK                bool
		wantStarts            string
	}{
		{"two races then up", "2", "", true, "3"},
		{"races every time", "9", "", false, "3"},
		{"other failure (control)", "0", "qemu: could not load the image", false, "1"},
		{"own lima.yaml missing (control)", "0", "open /l/proj-1a2b3c/lima.yaml: no such file or directory", false, "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const box = "proj-1a2b3c"
			m := raceManager(t, box)
			t.Setenv("RACE_STARTS", tc.races)
			t.Setenv("START_ERR", tc.startErr)
			err := m.Start(context.Background(), box, nil)
			if (err == nil) != tc.wantOK {
				t.Fatalf("Start = %v, want success %v", err, tc.wantOK)
			}
			n, _ := os.ReadFile(filepath.Join(os.Getenv("FAKE_DIR"), "starts"))
			if got := strings.TrimSpace(string(n)); got != tc.wantStarts {
				t.Errorf("limactl start ran %s times, want %s", got, tc.wantStarts)
			}
		})
	}
}

// TestDeleteReconcileRace: a limactl delete that fails after the instance is gone is a delete
// (the metadata goes too); the control, the same failure with the instance still there, is an
// error and keeps the metadata.
func TestDeleteReconcileRace(t *testing.T) {
	for _, tc := range []struct {
		does   string
		wantOK bool
	}{{"remove", true}, {"nothing", false}} {
		t.Run(tc.does, func(t *testing.T) {
			const box = "proj-1a2b3c"
			m := raceManager(t, box)
			t.Setenv("DELETE_DOES", tc.does)
			writeTestFile(t, m.Home.BoxMeta(box), "{}")
			err := m.Delete(context.Background(), box)
			_, metaErr := os.Stat(m.Home.BoxMeta(box))
			if tc.wantOK {
				if err != nil || metaErr == nil {
					t.Fatalf("Delete = %v, metadata left %v; want the box deleted", err, metaErr == nil)
				}
				return
			}
			if err == nil || metaErr != nil {
				t.Fatalf("Delete = %v, metadata kept %v; want limactl's error and the metadata kept", err, metaErr == nil)
			}
		})
	}
}
