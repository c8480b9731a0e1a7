package vm

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/git-corral/git-corral/home"
)

// TestInspectFastPath: a box whose host agent and VM driver PID files name live processes and
// that has its SSH config is Running without lima.yaml being read or the host agent asked
// (neither exists here); a dead PID, a missing driver or a missing SSH config takes Lima's full
// inspection, which here finds no instance.
func TestInspectFastPath(t *testing.T) {
	h := home.Home{Dir: t.TempDir()}
	t.Setenv("LIMA_HOME", h.LimaHome())
	m := &Manager{Home: h}
	inst := filepath.Join(h.LimaHome(), "b1")
	if err := os.MkdirAll(inst, 0o700); err != nil {
		t.Fatal(err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	live, gone := strconv.Itoa(os.Getpid()), strconv.Itoa(dead.Process.Pid)
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(inst, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name        string
		files       map[string]string
		wantRunning bool
	}{
		{"running", map[string]string{"ha.pid": live, "qemu.pid": live, "ssh.config": "Host x\n"}, true},
		{"vz driver", map[string]string{"ha.pid": live, "vz.pid": live, "ssh.config": "Host x\n"}, true},
		{"host agent gone", map[string]string{"ha.pid": gone, "qemu.pid": live, "ssh.config": "Host x\n"}, false},
		{"driver gone", map[string]string{"ha.pid": live, "qemu.pid": gone, "ssh.config": "Host x\n"}, false},
		{"no driver", map[string]string{"ha.pid": live, "ssh.config": "Host x\n"}, false},
		{"no ssh config", map[string]string{"ha.pid": live, "qemu.pid": live}, false},
	}
	for _, tc := range cases {
		for _, f := range []string{"ha.pid", "qemu.pid", "vz.pid", "ssh.config"} {
			os.Remove(filepath.Join(inst, f))
		}
		for f, b := range tc.files {
			write(f, b)
		}
		st, err := m.Inspect("b1")
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := st.Status == "Running"; got != tc.wantRunning {
			t.Errorf("%s: status %q, want running %v", tc.name, st.Status, tc.wantRunning)
		}
		if tc.wantRunning && (st.Dir != inst || st.SSHConfig != filepath.Join(inst, "ssh.config")) {
			t.Errorf("%s: dir %q ssh config %q", tc.name, st.Dir, st.SSHConfig)
		}
	}
}
