package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fixture is a fake host for the hostile table: a $HOME with secrets, a $CORRAL_HOME, grants,
// a directory nothing grants, another user's file and listeners on the host's loopback.
type fixture struct {
	self                      string
	dir, home, corral         string
	readDir, writeDir, outDir string
	otherFile                 string
	tcpAddr, udpAddr          string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Fatalf("bubblewrap is required (scripts/setup.sh installs it): %v", err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	f := &fixture{self: self, dir: dir, home: filepath.Join(dir, "home"), corral: filepath.Join(dir, "home", ".corral"),
		readDir: filepath.Join(dir, "ro"), writeDir: filepath.Join(dir, "rw"), outDir: filepath.Join(dir, "outside")}
	for _, d := range []string{f.home + "/.ssh", f.corral, f.readDir, f.writeDir, f.outDir, dir + "/other"} {
		must(t, os.MkdirAll(d, 0o755))
	}
	must(t, os.WriteFile(f.home+"/.ssh/id_ed25519", []byte("PRIVATE KEY\n"), 0o600))
	must(t, os.WriteFile(f.corral+"/config.toml", []byte("egress = []\n"), 0o600))
	must(t, os.WriteFile(f.readDir+"/file", []byte("granted\n"), 0o644))
	must(t, os.WriteFile(f.outDir+"/victim", []byte("host file\n"), 0o644))
	// Another user's file: readable by everyone on the host, but in no grant.
	f.otherFile = dir + "/other/notes"
	must(t, os.WriteFile(f.otherFile, []byte("someone else's\n"), 0o644))
	os.Chown(dir+"/other", 4242, 4242)
	os.Chown(f.otherFile, 4242, 4242)
	must(t, os.Symlink(f.outDir+"/victim", f.writeDir+"/link"))
	f.tcpAddr, f.udpAddr = loopbackListeners(t)
	return f
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// loopbackListeners starts a TCP listener and a UDP echo (a stand-in DNS server) on the host's
// loopback; both answer anyone who reaches them.
func loopbackListeners(t *testing.T) (tcp, udp string) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	must(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	must(t, err)
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			pc.WriteTo(buf[:n], from)
		}
	}()
	return ln.Addr().String(), pc.LocalAddr().String()
}

// options is a run of the probe with manifest m.
func (f *fixture) options(m *Manifest, out *bytes.Buffer, probe ...string) Options {
	if m == nil {
		m = &Manifest{}
	}
	env := map[string]string{"PATH": "/usr/bin:/bin", "CANARY_TOKEN": "s3cret-value"}
	return Options{
		Manifest: m, Argv: append([]string{f.self, "probe"}, probe...), Self: f.self,
		Home: f.home, CorralHome: f.corral, Cwd: f.dir, Stdout: out, Stderr: out,
		Lookup: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
	}
}

// sandboxed runs the probe in the sandbox; it fails the test if the sandbox was not set up.
func (f *fixture) sandboxed(t *testing.T, m *Manifest, probe ...string) (*Result, string) {
	t.Helper()
	var out bytes.Buffer
	res, err := Run(t.Context(), f.options(m, &out, probe...))
	if err != nil {
		t.Fatalf("sandbox %v: %v\n%s", probe, err, out.String())
	}
	return res, out.String()
}

// direct runs the probe on the host, unsandboxed, as the control.
func (f *fixture) direct(t *testing.T, probe ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, f.self, append([]string{"probe"}, probe...)...)
	cmd.Dir = f.dir
	out, _ := cmd.CombinedOutput()
	return cmd.ProcessState.ExitCode(), string(out)
}

// logLines returns the sandbox log's lines as maps.
func (f *fixture) logLines(t *testing.T) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(LogPath(f.corral))
	must(t, err)
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// fakeResolver answers every name with one address, so no real name is ever resolved.
type fakeResolver struct{ addr netip.Addr }

func (r fakeResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	return []netip.Addr{r.addr}, nil
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
