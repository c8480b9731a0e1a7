package vm

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mattn/go-shellwords"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/provision"
)

// fakeQemuDir puts a qemu-system-x86_64 on PATH that prints its arguments, one per line, and
// the state file's contents when -incoming's exec: command is given.
func fakeQemuDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	script := `#!/bin/sh
for a in "$@"; do printf '%s\n' "$a"; done
`
	if err := os.WriteFile(filepath.Join(dir, "qemu-system-x86_64"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestQemuWrapper: Lima's probes reach QEMU unchanged; the VM itself (-pidfile) gets the VM
// generation ID device and, for a resume, -incoming whose command names the state through the
// environment, so a path with quotes, spaces or $() is never parsed by a shell.
func TestQemuWrapper(t *testing.T) {
	m := &Manager{Home: home.Home{Dir: t.TempDir()}, TCG: true}
	state := filepath.Join(t.TempDir(), `it's a "state" $(touch pwned)`)
	env, err := m.qemuEnv(state)
	if err != nil {
		t.Fatal(err)
	}
	vals := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vals[k] = v
	}
	if vals["CORRAL_QEMU_VMGENID"] != "1" || vals["CORRAL_QEMU_STATE"] != state {
		t.Fatalf("env = %q", env)
	}
	// Lima splits $QEMU_SYSTEM_X86_64 with shellwords: the wrapper, then the TCG arguments.
	words, err := shellwords.Parse(vals["QEMU_SYSTEM_X86_64"])
	if err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(m.Home.Dir, "libexec", qemuWrapperFile)
	if words[0] != wrapper || strings.Join(words[1:], " ") != strings.TrimPrefix(TCGQemu, "qemu-system-x86_64 ") {
		t.Fatalf("QEMU_SYSTEM_X86_64 splits into %q", words)
	}
	if fi, err := os.Stat(wrapper); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("wrapper: %v %v", fi, err)
	}
	path := fakeQemuDir(t) + ":" + os.Getenv("PATH")
	runWrapper := func(env []string, args ...string) []string {
		cmd := exec.Command(wrapper, args...)
		cmd.Env = append([]string{"PATH=" + path}, env...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("wrapper %q: %v", args, err)
		}
		return strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	}
	if got := runWrapper(env, "-M", "none", "-netdev", "help"); strings.Join(got, " ") != "-M none -netdev help" {
		t.Errorf("probe got %q, want it unchanged", got)
	}
	got := runWrapper(env, "-m", "2048", "-pidfile", "/x/qemu.pid")
	want := []string{"-m", "2048", "-pidfile", "/x/qemu.pid", "-device", "vmgenid", "-global", "migration.store-global-state=off", "-incoming", `exec:cat -- "$CORRAL_QEMU_STATE"`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("VM start got %q, want %q", got, want)
	}
	// A build box: the device only.
	buildEnv, err := m.qemuEnv("")
	if err != nil {
		t.Fatal(err)
	}
	got = runWrapper(buildEnv, "-pidfile", "/x/qemu.pid")
	if strings.Join(got, " ") != "-pidfile /x/qemu.pid -device vmgenid -global migration.store-global-state=off" {
		t.Errorf("build box start got %q", got)
	}
	if _, err := m.qemuEnv("/a\nb"); err == nil {
		t.Error("a state path with a newline was accepted")
	}
	// A clone box's resume: the build box's three 9p devices, empty and read-only, before the
	// generation ID device, as Lima puts its own -virtfs last.
	empty, err := m.emptyMount()
	if err != nil {
		t.Fatal(err)
	}
	cloneEnv := append(env, "CORRAL_QEMU_EMPTY_MOUNT="+empty, fmt.Sprintf("CORRAL_QEMU_EMPTY_MOUNTS=%d", emptyMountDevices))
	got = runWrapper(cloneEnv, "-pidfile", "/x/qemu.pid")
	want = []string{"-pidfile", "/x/qemu.pid"}
	for i := 0; i < emptyMountDevices; i++ {
		want = append(want, "-virtfs", fmt.Sprintf("local,mount_tag=mount%d,path=%s,security_model=none,readonly=on", i, empty))
	}
	want = append(want, "-device", "vmgenid", "-global", "migration.store-global-state=off", "-incoming", `exec:cat -- "$CORRAL_QEMU_STATE"`)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("clone box resume got %q, want %q", got, want)
	}
}

// TestEmptyMount: the directory behind a clone box's devices is made read-only and empty, and
// refused when it is not.
func TestEmptyMount(t *testing.T) {
	m := &Manager{Home: home.Home{Dir: t.TempDir()}}
	dir, err := m.emptyMount()
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o555 {
		t.Fatalf("%s: %v %v, want a 0555 directory", dir, fi, err)
	}
	if again, err := m.emptyMount(); err != nil || again != dir {
		t.Fatalf("a second use: %q %v", again, err)
	}
	os.Chmod(dir, 0o755)
	if _, err := m.emptyMount(); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("a writable directory: %v, want refused", err)
	}
	writeTestFile(t, filepath.Join(dir, "planted"), "x")
	os.Chmod(dir, 0o555)
	if _, err := m.emptyMount(); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("a directory with a file: %v, want refused", err)
	}
	os.Chmod(dir, 0o755)
}

// TestResumePlan: a box resumes its golden state at its first start only.
func TestResumePlan(t *testing.T) {
	dir := t.TempDir()
	g := Golden{Key: "k1", Dir: "/g/k1", StateSHA256: "abc"}
	if _, ok := takeResume(dir); ok {
		t.Fatal("a box without a plan resumes")
	}
	if err := planResume(dir, g, true); err != nil {
		t.Fatal(err)
	}
	rp, ok := takeResume(dir)
	if !ok || rp.State != "/g/k1/"+GoldenStateFile || rp.Golden != "/g/k1/"+GoldenDisk || rp.Key != "k1" || !rp.NoProjectMount {
		t.Fatalf("plan = %+v, %v", rp, ok)
	}
	if _, ok := takeResume(dir); ok {
		t.Fatal("the plan was not consumed by the first start")
	}
	if err := os.WriteFile(filepath.Join(dir, resumeFile), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := takeResume(dir); ok {
		t.Fatal("a broken plan resumes")
	}
}

// TestStateCapable: only a box with its project on 9p has the build box's devices, or one that
// mounts nothing (clone mode), which gets the project device back empty at its resume.
func TestStateCapable(t *testing.T) {
	for _, c := range []struct {
		mt      string
		noMount bool
		want    bool
	}{{"9p", false, true}, {"9p", true, true}, {"reverse-sshfs", false, false}, {"virtiofs", false, false}} {
		if got := stateCapable(Rendered{MountType: c.mt}, c.noMount); got != c.want {
			t.Errorf("stateCapable(%s, noMount=%v) = %v", c.mt, c.noMount, got)
		}
	}
}

// TestStateSealScript: the seal parses, passes shellcheck, carries the recipe hashes the resume
// skips, and the build box's line carries the nonce; the key changes when the seal does.
func TestStateSealScript(t *testing.T) {
	recipe := scriptHashes([]provision.Script{{Body: "a"}, {Body: "b"}})
	s := stateSealScript("0123456789abcdef", "/home/u/my project", recipe)
	if s.Name != goldenSealName || s.Mode != provision.ModeSystem {
		t.Fatalf("seal %s %s", s.Name, s.Mode)
	}
	for _, want := range []string{`say() { echo "corral-golden-state: $1 $NONCE" >/dev/console;`, "\nsay ready\n", "say failed", "NONCE=0123456789abcdef",
		`echo "` + stateFailedLine + `0123456789abcdef" >/dev/console`, `echo "` + stateUnsupportedLine + `0123456789abcdef" >/dev/console`, `PROJECT_DIR='/home/u/my project'`, " " + recipe[0] + " " + recipe[1] + " ", sealScript(""), "/run/lima-ssh-ready", "losetup"} {
		if !strings.Contains(s.Body, want) {
			t.Errorf("seal lacks %q", want)
		}
	}
	resume := s.Body[strings.Index(s.Body, "<<'CORRAL_RESUME_EOF'\n")+len("<<'CORRAL_RESUME_EOF'\n"):]
	resume = resume[:strings.Index(resume, "CORRAL_RESUME_EOF\n")]
	for name, body := range map[string]string{"seal": s.Body, "resume": resume} {
		check := exec.Command("sh", "-n") // on stdin: the padded seal is longer than an argument may be
		check.Stdin = strings.NewReader(body)
		if out, err := check.CombinedOutput(); err != nil {
			t.Fatalf("sh -n %s: %v: %s", name, err, out)
		}
		if _, err := exec.LookPath("shellcheck"); err != nil {
			continue
		}
		cmd := exec.Command("shellcheck", "-s", "sh", "-e", "SC2016", "-")
		cmd.Stdin = strings.NewReader(body)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("shellcheck %s: %v\n%s", name, err, out)
		}
	}
}

// TestQMPSaveAndResume saves a real QEMU's running state through QMP and resumes it in a second
// QEMU started the way Lima starts a box's (the wrapper with -pidfile): the second one runs, and
// the first one has quit.
func TestQMPSaveAndResume(t *testing.T) {
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		t.Skip("qemu-system-x86_64 not installed (scripts/setup.sh installs qemu-system-x86)")
	}
	m := &Manager{Home: home.Home{Dir: t.TempDir()}}
	dir := userDir(t, "qmp", 0o755)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := func(name, state string) (*exec.Cmd, string) {
		env, err := m.qemuEnv(state)
		if err != nil {
			t.Fatal(err)
		}
		sock := filepath.Join(dir, name+".qmp")
		wrapper := filepath.Join(m.Home.Dir, "libexec", qemuWrapperFile)
		cmd := exec.CommandContext(ctx, wrapper, "-machine", "q35", "-accel", "tcg", "-m", "64", "-nodefaults", "-display", "none",
			"-qmp", "unix:"+sock+",server=on,wait=off", "-pidfile", filepath.Join(dir, name+".pid"))
		cmd.Env = append(os.Environ(), env...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd, sock
	}
	waitSock := func(sock string) {
		for i := 0; i < 200; i++ {
			if c, err := net.Dial("unix", sock); err == nil {
				c.Close()
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("QMP socket %s never answered", sock)
	}
	src, sock := start("src", "")
	waitSock(sock)
	state := filepath.Join(dir, "it's a state")
	if err := qmpSaveState(ctx, sock, state); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- src.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the saved QEMU did not quit")
	}
	if fi, err := os.Stat(state); err != nil || fi.Size() < 100<<10 {
		t.Fatalf("state file: %v %v", fi, err)
	}
	_, sock2 := start("dst", state)
	waitSock(sock2)
	status := ""
	for i := 0; i < 100 && status != "running"; i++ {
		status = qmpStatus(t, sock2)
		time.Sleep(100 * time.Millisecond)
	}
	if status != "running" {
		t.Fatalf("resumed QEMU is %q, want running", status)
	}
	// A state QEMU cannot load (no vmgenid device on this side) fails the start.
	cmd := exec.CommandContext(ctx, "qemu-system-x86_64", "-machine", "q35", "-accel", "tcg", "-m", "64", "-nodefaults", "-display", "none",
		"-incoming", "exec:cat -- \"$S\"")
	cmd.Env = append(os.Environ(), "S="+state)
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("QEMU without the device loaded the state: %s", out)
	}
}

// qmpStatus returns query-status's status of the QEMU behind sock.
func qmpStatus(t *testing.T, sock string) string {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		return ""
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	dec := json.NewDecoder(c)
	var msg map[string]json.RawMessage
	_ = dec.Decode(&msg)
	_, _ = c.Write([]byte(`{"execute":"qmp_capabilities"}` + "\n"))
	_ = dec.Decode(&msg)
	_, _ = c.Write([]byte(`{"execute":"query-status"}` + "\n"))
	for dec.Decode(&msg) == nil {
		if r, ok := msg["return"]; ok {
			var st struct{ Status string }
			_ = json.Unmarshal(r, &st)
			return st.Status
		}
	}
	return ""
}

// TestRetryingSSH: the ssh Lima finds first on PATH for a resumed start is the real one with a
// retry option put first (ssh takes the first value of an option), and every argument reaches it
// unchanged.
func TestRetryingSSH(t *testing.T) {
	bin := t.TempDir()
	fake := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done\n"
	if err := os.WriteFile(filepath.Join(bin, "ssh"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	m := &Manager{Home: home.Home{Dir: t.TempDir()}}
	path, err := m.retryingSSHPath()
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(path, ":")
	if first != filepath.Join(m.Home.Libexec(), "resume-bin") || path != first+":"+os.Getenv("PATH") {
		t.Fatalf("PATH = %q", path)
	}
	cmd := exec.Command(filepath.Join(first, "ssh"), "-F", "/dev/null", "-p", "22", "a b", `"$(x)"`)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	want := "-o\nConnectionAttempts=30\n-F\n/dev/null\n-p\n22\na b\n\"$(x)\"\n"
	if string(out) != want {
		t.Fatalf("ssh got\n%s\nwant\n%s", out, want)
	}
}

// TestResumable: a box resumes a state only when the base has one, the box has the build box's
// devices, the same Lima made both, and CORRAL_NO_GOLDEN_STATE is not set.
func TestResumable(t *testing.T) {
	inst := t.TempDir()
	if err := os.WriteFile(filepath.Join(inst, "lima-version"), []byte("1.2.2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g := Golden{StateSHA256: "abc", LimaVersion: "1.2.2"}
	r9p := Rendered{MountType: "9p"}
	t.Setenv("CORRAL_NO_GOLDEN_STATE", "")
	if !resumable(g, r9p, false, inst) {
		t.Fatal("a 9p box of the same Lima does not resume")
	}
	if !resumable(g, r9p, true, inst) {
		t.Fatal("a clone-mode box of the same Lima does not resume")
	}
	for name, c := range map[string]struct {
		g       Golden
		r       Rendered
		noMount bool
		inst    string
	}{
		"no state":          {Golden{LimaVersion: "1.2.2"}, r9p, false, inst},
		"sshfs":             {g, Rendered{MountType: "reverse-sshfs"}, false, inst},
		"another Lima":      {Golden{StateSHA256: "abc", LimaVersion: "1.2.1"}, r9p, false, inst},
		"unknown Lima":      {Golden{StateSHA256: "abc"}, r9p, false, inst},
		"box without label": {g, r9p, false, t.TempDir()},
	} {
		if resumable(c.g, c.r, c.noMount, c.inst) {
			t.Errorf("%s: resumes", name)
		}
	}
	t.Setenv("CORRAL_NO_GOLDEN_STATE", "1")
	if resumable(g, r9p, false, inst) {
		t.Error("CORRAL_NO_GOLDEN_STATE=1: resumes")
	}
}

// TestSealFitsLimaTemplate: the padded seal script leaves the template well under Lima's 4 MiB
// limit on a template (limatmpl yBytesLimit), which refused a 4 MiB pad on a real box.
func TestSealFitsLimaTemplate(t *testing.T) {
	s := stateSealScript("0123456789abcdef", "/home/u/p", nil)
	if n := len(s.Body); n < 1<<20 || n > 2<<20 {
		t.Errorf("seal script is %d bytes: want the 1 MiB pad and room under Lima's 4 MiB template limit", n)
	}
}

// TestResumeDNSNAT runs the resume's DNS step in a network namespace of its own, with Lima's own
// boot/09-host-dns-setup.sh: a full box resumed from a golden state had its DNS NAT pointing at
// the build box's host-resolver port (the 2026-12-01 CI's "Lima's resolver address is answered"
// failure). Before the step the NAT names the build box's port (the control: the state the step
// must change), after it only the new box's.
func TestResumeDNSNAT(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: runs iptables in a private network namespace (CI runs as root)")
	}
	for _, tool := range []string{"unshare", "iptables", "iptables-save"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (scripts/setup.sh installs it): %v", tool, err)
		}
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/lima-vm/lima").Output()
	if err != nil {
		t.Fatalf("go list the Lima module: %v", err)
	}
	limaBoot, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "pkg/cidata/cidata.TEMPLATE.d/boot/09-host-dns-setup.sh"))
	if err != nil {
		t.Fatalf("Lima's DNS boot script: %v", err)
	}
	cidata := t.TempDir()
	if err := os.MkdirAll(filepath.Join(cidata, "boot"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cidata, "boot/09-host-dns-setup.sh"), limaBoot, 0o755); err != nil {
		t.Fatal(err)
	}
	env := func(port int) string {
		return fmt.Sprintf("LIMA_CIDATA_SLIRP_DNS=192.168.5.3\nLIMA_CIDATA_SLIRP_GATEWAY=192.168.5.2\nLIMA_CIDATA_UDP_DNS_LOCAL_PORT=%d\nLIMA_CIDATA_TCP_DNS_LOCAL_PORT=%d\n", port, port+1)
	}
	// The build box's boot, then the resume with the new box's lima.env.
	build := filepath.Join(t.TempDir(), "build.env")
	if err := os.WriteFile(build, []byte(env(41000)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cidata, "lima.env"), []byte(env(52000)), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `set -u
(while read -r line; do [ -n "$line" ] && export "$line"; done <"$BUILD_ENV" && sh "$CIDATA/boot/09-host-dns-setup.sh" >/dev/null 2>&1) || exit 7
echo BEFORE; iptables-save -t nat
echo AFTER
` + resumeDNS + `iptables-save -t nat
`
	cmd := exec.Command("unshare", "--net", "sh", "-c", script)
	cmd.Env = append(os.Environ(), "CIDATA="+cidata, "BUILD_ENV="+build)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the DNS step in a network namespace: %v\n%s", err, b)
	}
	before, after, ok := strings.Cut(string(b), "\nAFTER\n")
	if !ok {
		t.Fatalf("no AFTER mark:\n%s", b)
	}
	for _, c := range []struct {
		what, text, want, not string
	}{
		{"before the resume (the control)", before, "192.168.5.2:41000", "192.168.5.2:52000"},
		{"after the resume", after, "192.168.5.2:52000", "192.168.5.2:41000"},
	} {
		if !strings.Contains(c.text, "-d 192.168.5.3/32 -p udp -m udp --dport 53 -j DNAT --to-destination "+c.want) {
			t.Errorf("%s the NAT does not send DNS to %s:\n%s", c.what, c.want, c.text)
		}
		if strings.Contains(c.text, c.not) {
			t.Errorf("%s the NAT still names %s:\n%s", c.what, c.not, c.text)
		}
	}
	if !strings.Contains(after, "corral: DNS NAT to this box's host resolver, port 52000") {
		t.Errorf("the step does not say what it did:\n%s", after)
	}
}

// TestResumeSkipsOnlyDaemonReload: the resume runs lima-init early with a systemctl on PATH that
// swallows "daemon-reload" (2.3 s of a resume under TCG) and passes every other call to the
// real systemctl. The shim is made by the resume's own lines; lima-init (the image recipe's)
// must still make that exact call, or the shim would skip nothing.
func TestResumeSkipsOnlyDaemonReload(t *testing.T) {
	recipe, err := os.ReadFile("imagerecipe/lima-init/lima-init")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(recipe), "\n  systemctl daemon-reload\n") {
		t.Fatal("lima-init no longer calls 'systemctl daemon-reload' on a line of its own: the resume's shim skips nothing")
	}
	body := stateSealScript("0123456789abcdef", "/p", nil).Body
	i := strings.Index(body, "printf '%s\\n' '#!/bin/sh'")
	if i < 0 {
		t.Fatal("the resume makes no systemctl shim")
	}
	line := body[i : i+strings.Index(body[i:], "\n")]
	dir := t.TempDir()
	// The resume's line, with its directory, run by sh as the resume runs it.
	mk := exec.Command("sh", "-c", `shim=$1; `+line+` && chmod 0755 "$shim/systemctl"`, "sh", dir)
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
	if _, err := os.Stat("/usr/bin/systemctl"); err != nil {
		t.Skip("no /usr/bin/systemctl to pass calls to (scripts/setup.sh's Debian has one)")
	}
	run := func(args ...string) (string, error) {
		c := exec.Command(filepath.Join(dir, "systemctl"), args...)
		out, err := c.CombinedOutput()
		return string(out), err
	}
	if out, err := run("daemon-reload"); err != nil || out != "" {
		t.Errorf("shim daemon-reload: %v %q, want a silent success", err, out)
	}
	// The control: any other call reaches the real systemctl.
	out, err := run("--version")
	if err != nil || !strings.Contains(out, "systemd") {
		t.Errorf("shim --version: %v %q, want the real systemctl's answer", err, out)
	}
	// "--help" wins over the verb in systemctl: it prints and reloads nothing.
	if out, _ := run("daemon-reload", "--help"); !strings.Contains(out, "daemon-reload") {
		t.Errorf("shim daemon-reload --help: %q, want the real systemctl's help: only the exact call may be swallowed", out)
	}
}

// TestResumeWakesSSHReadyPoll: after writing /run/lima-ssh-ready, the resume ends the "sleep 3" of
// Lima's poll for it, so the poll looks again at once; a sleep of any other process is left
// alone. The control: without the resume's lines the poll sees the file only when its sleep ends.
func TestResumeWakesSSHReadyPoll(t *testing.T) {
	body := stateSealScript("0123456789abcdef", "/p", nil).Body
	i := strings.Index(body, "for p in $(pgrep -f 'until sudo diff -q /run/lima-ssh-ready'")
	if i < 0 {
		t.Fatal("the resume does not wake Lima's ssh-ready poll")
	}
	end := strings.Index(body[i:], "\ndone\n")
	snippet := body[i : i+end+len("\ndone")]
	for _, tool := range []string{"bash", "pgrep", "pkill"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed by this test: %v", tool, err)
		}
	}
	poll := func(t *testing.T, flag string) (*exec.Cmd, chan time.Time) {
		// Lima's poll, with the same command line shape; the flag file stands for the ready file.
		c := exec.Command("bash", "-c", `until sudo diff -q /run/lima-ssh-ready /nonexistent 2>/dev/null || test -e "`+flag+`"; do sleep 3; done`)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		ended := make(chan time.Time, 1)
		go func() { _ = c.Wait(); ended <- time.Now() }()
		t.Cleanup(func() { _ = c.Process.Kill() })
		// Wait for its sleep.
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if out, _ := exec.Command("pgrep", "-x", "-P", strconv.Itoa(c.Process.Pid), "sleep").Output(); len(out) > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the poll never slept")
			}
		}
		return c, ended
	}
	decoy := exec.Command("bash", "-c", "sleep 3; true")
	if err := decoy.Start(); err != nil {
		t.Fatal(err)
	}
	decoyEnded := make(chan struct{})
	go func() { _ = decoy.Wait(); close(decoyEnded) }()
	t.Cleanup(func() { _ = decoy.Process.Kill() })

	dir := t.TempDir()
	flag := filepath.Join(dir, "ready")
	_, ended := poll(t, flag)
	writeTestFile(t, flag, "")
	t0 := time.Now()
	if out, err := exec.Command("sh", "-c", snippet).CombinedOutput(); err != nil {
		t.Fatalf("the resume's lines: %v\n%s", err, out)
	}
	select {
	case at := <-ended:
		if d := at.Sub(t0); d > time.Second {
			t.Errorf("the poll saw the file %v after the resume's lines, want at once", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the poll did not end")
	}
	select {
	case <-decoyEnded:
		t.Error("another process's sleep was ended too")
	default:
	}

	t.Run("control: without the resume's lines the poll waits out its sleep", func(t *testing.T) {
		flag := filepath.Join(dir, "ready2")
		_, ended := poll(t, flag)
		writeTestFile(t, flag, "")
		t0 := time.Now()
		select {
		case at := <-ended:
			if d := at.Sub(t0); d < time.Second {
				t.Errorf("the poll saw the file after %v with nothing waking it: the test cannot tell", d)
			}
		case <-time.After(6 * time.Second):
			t.Fatal("the poll did not end")
		}
	})
}

// TestResumeMountsRule: the resume's rule for this box's mounts, run by sh with the guest's
// files (lima-init's fstab, the cidata's lima.env, /proc/mounts) replaced by the test's. A box
// whose cidata names no mount (clone mode) goes on only with no 9p entry in its fstab and no 9p
// mount in place; a box whose cidata names mounts needs lima-init's entries; an unreadable count
// stops it. The controls: the clone box with nothing mounted, and a project box with its entry.
func TestResumeMountsRule(t *testing.T) {
	body := stateSealScript("0123456789abcdef", "/p", nil).Body
	i := strings.Index(body, "BOX_DIRS=$(awk")
	j := strings.Index(body, "for d in $BOX_DIRS; do\n\tmountpoint")
	if i < 0 || j < i {
		t.Fatal("the resume's mount rule is not where the test looks for it")
	}
	rule := body[i:j]
	for _, guest := range []string{"/etc/fstab", "/mnt/lima-cidata/lima.env", "/proc/mounts"} {
		if !strings.Contains(rule, guest) {
			t.Fatalf("the rule no longer reads %s", guest)
		}
	}
	base, n := t.TempDir(), 0
	const entry = "mount0 /home/u/p 9p rw,trans=virtio 0 0 # lima-init\n"
	const nineP = "mount0 /home/u/p 9p rw,trans=virtio 0 0\n"
	for _, c := range []struct {
		name, mounts, fstab, mountsNow string
		ok                             bool
	}{
		{"clone box, nothing mounted (control)", "0", "", "proc /proc proc rw 0 0\n", true},
		{"clone box with a 9p fstab entry", "0", entry, "", false},
		{"clone box with a 9p mount in place", "0", "", nineP, false},
		{"project box with its entry (control)", "3", entry, nineP, true},
		{"project box without an entry", "3", "", "", false},
		{"no mount count in the cidata", "", entry, nineP, false},
	} {
		// The parent's directory: a subtest's would carry its name's parentheses, unquoted in
		// the rule's commands.
		dir := filepath.Join(base, fmt.Sprint(n))
		n++
		t.Run(c.name, func(t *testing.T) {
			env := "LIMA_CIDATA_NAME=x\n"
			if c.mounts != "" {
				env += "LIMA_CIDATA_MOUNTS=" + c.mounts + "\n"
			}
			writeTestFile(t, filepath.Join(dir, "fstab"), "UUID=1 / ext4 rw 0 1\n"+c.fstab)
			writeTestFile(t, filepath.Join(dir, "lima.env"), env)
			writeTestFile(t, filepath.Join(dir, "mounts"), c.mountsNow)
			r := strings.NewReplacer("/etc/fstab", filepath.Join(dir, "fstab"),
				"/mnt/lima-cidata/lima.env", filepath.Join(dir, "lima.env"), "/proc/mounts", filepath.Join(dir, "mounts"))
			out, err := exec.Command("sh", "-c", r.Replace(rule)+"echo RULE-PASSED\n").CombinedOutput()
			passed := err == nil && strings.Contains(string(out), "RULE-PASSED")
			if passed != c.ok {
				t.Errorf("passed %v, want %v: %v\n%s", passed, c.ok, err, out)
			}
		})
	}
}
