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

// stopLimactl is a limactl whose stop does what the real one does when another instance is
// being made or deleted beside the box: the box shuts down ($STOP_DOES=shutdown removes its
// host agent's and driver's PID files, as their exit does), then the network reconciliation
// fails on the other instance's missing lima.yaml and limactl exits 1. With STOP_DOES=nothing
// the box keeps running and limactl still exits 1: a stop that did fail.
const stopLimactl = `#!/bin/sh
while [ "${1#--}" != "$1" ]; do shift; done
[ "$1" = stop ] || exit 2
if [ "$STOP_DOES" = shutdown ]; then rm -f "$LIMA_HOME/$2/ha.pid" "$LIMA_HOME/$2/qemu.pid"; fi
echo "time=\"2026-12-05T19:26:10Z\" level=fatal msg=\"open $LIMA_HOME/other-123abc/lima.yaml: no such file or directory\""
exit 1
`

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
			root := t.TempDir()
			h := home.Home{Dir: filepath.Join(root, "corral")}
			bin := filepath.Join(root, "limactl")
			if err := os.WriteFile(bin, []byte(stopLimactl), 0o755); err != nil {
				t.Fatal(err)
			}
			t.Setenv("LIMA_HOME", h.LimaHome())
			t.Setenv("STOP_DOES", tc.does)
			const box = "proj-1a2b3c"
			runningInstance(t, h, box)
			m := &Manager{Limactl: bin, Home: h}
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
