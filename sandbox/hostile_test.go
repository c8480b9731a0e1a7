package sandbox

import (
	"os"
	"strings"
	"testing"
)

// hostileCase is one attempt to reach past the manifest. The probe must be refused in the
// sandbox (exit 3) and work in the control: on the host, unsandboxed, or in a sandbox whose
// manifest grants the access (grant), so that a sandbox that refuses everything cannot pass.
type hostileCase struct {
	name  string
	probe func(f *fixture) []string
	// deny is the manifest of the refused run (nil: nothing granted).
	deny func(f *fixture) *Manifest
	// grant, when set, is the control's manifest; otherwise the control runs on the host.
	grant func(f *fixture) *Manifest
	// layer is the error the refusal must show, naming the layer that refused it: "no such
	// file" (not mounted: bubblewrap), "read-only file system" and "cross-device" (bubblewrap's
	// mounts), "permission denied" (Landlock), "operation not permitted" (seccomp),
	// "connection refused" (the sandbox's own network namespace).
	layer string
}

func hostileCases() []hostileCase {
	probe := func(args ...string) func(*fixture) []string { return func(*fixture) []string { return args } }
	return []hostileCase{
		{name: "read ~/.ssh", layer: "no such file", probe: func(f *fixture) []string { return []string{"read", f.home + "/.ssh/id_ed25519"} },
			grant: func(f *fixture) *Manifest { return &Manifest{Read: []string{f.home + "/.ssh"}} }},
		{name: "read $CORRAL_HOME", layer: "no such file", probe: func(f *fixture) []string { return []string{"read", f.corral + "/config.toml"} }},
		{name: "read the parent's /proc/PID/environ", layer: "permission denied", probe: probe("parent-environ")},
		{name: "read another user's file", layer: "no such file", probe: func(f *fixture) []string { return []string{"read", f.otherFile} }},
		{name: "read a sibling of a grant", layer: "no such file", probe: func(f *fixture) []string { return []string{"read", f.outDir + "/victim"} },
			deny: func(f *fixture) *Manifest { return &Manifest{Read: []string{f.readDir}, Write: []string{f.writeDir}} }},

		{name: "write a read grant", layer: "read-only file system", probe: func(f *fixture) []string { return []string{"write", f.readDir + "/file"} },
			deny:  func(f *fixture) *Manifest { return &Manifest{Read: []string{f.readDir}} },
			grant: func(f *fixture) *Manifest { return &Manifest{Write: []string{f.readDir}} }},
		{name: "write through a symlink out of fs.write", layer: "no such file", probe: func(f *fixture) []string { return []string{"write", f.writeDir + "/link"} },
			deny: func(f *fixture) *Manifest { return &Manifest{Write: []string{f.writeDir}} }},
		{name: "write through .. out of fs.write", layer: "no such file", probe: func(f *fixture) []string { return []string{"write", f.writeDir + "/../outside/victim"} },
			deny: func(f *fixture) *Manifest { return &Manifest{Write: []string{f.writeDir}} }},
		{name: "write through /proc/self/root", layer: "no such file", probe: func(f *fixture) []string { return []string{"write", "/proc/self/root" + f.outDir + "/victim"} },
			deny: func(f *fixture) *Manifest { return &Manifest{Write: []string{f.writeDir}} }},
		{name: "write a read grant through a hard link", layer: "cross-device", probe: func(f *fixture) []string {
			return []string{"hardlink", f.readDir + "/file", f.writeDir + "/hardlink"}
		}, deny: func(f *fixture) *Manifest { return &Manifest{Read: []string{f.readDir}, Write: []string{f.writeDir}} }},
		{name: "a new mount namespace for bind mounts", layer: "operation not permitted", probe: probe("newns")},

		{name: "exec a program not in exec.allow", layer: "permission denied", probe: probe("exec", "/usr/bin/id"),
			grant: func(f *fixture) *Manifest { return &Manifest{Exec: []string{"/usr/bin/id"}} }},
		{name: "exec through the dynamic loader", layer: "exit status 127", probe: probe("exec", "/lib64/ld-linux-x86-64.so.2", "/usr/bin/id"),
			deny: func(f *fixture) *Manifest { return &Manifest{Exec: []string{"/lib64/ld-linux-x86-64.so.2"}} },
			grant: func(f *fixture) *Manifest {
				return &Manifest{Exec: []string{"/lib64/ld-linux-x86-64.so.2", "/usr/bin/id"}}
			}},
		{name: "exec through an interpreter not in exec.allow", layer: "permission denied", probe: func(f *fixture) []string { return []string{"exec", f.dir + "/bin/script"} },
			deny:  func(f *fixture) *Manifest { return &Manifest{Exec: []string{f.dir + "/bin"}} },
			grant: func(f *fixture) *Manifest { return &Manifest{Exec: []string{f.dir + "/bin", "/usr/bin/perl"}} }},
		{name: "exec a copy written to fs.write", layer: "permission denied", probe: func(f *fixture) []string { return []string{"copyexec", f.self, f.writeDir + "/copy"} },
			deny:  func(f *fixture) *Manifest { return &Manifest{Write: []string{f.writeDir}} },
			grant: func(f *fixture) *Manifest { return &Manifest{Write: []string{f.writeDir}, Exec: []string{f.writeDir}} }},
		{name: "exec a copy written to scratch", layer: "permission denied", probe: func(f *fixture) []string {
			return []string{"copyexec", f.self, f.scratchCopy()}
		}},
		{name: "exec from memfd_create", layer: "operation not permitted", probe: func(f *fixture) []string { return []string{"memfd", f.self} }},
		{name: "ptrace the parent", layer: "operation not permitted", probe: probe("ptrace-parent")},

		{name: "connect to the host's loopback", layer: "permission denied", probe: func(f *fixture) []string { return []string{"connect", f.tcpAddr} }},
		{name: "DNS (UDP) to the host's loopback", layer: "connection refused", probe: func(f *fixture) []string { return []string{"udp", f.udpAddr} }},
	}
}

// TestHostile runs every hostile case for real: refused in the sandbox, working in its control.
func TestHostile(t *testing.T) {
	f := newFixture(t)
	must(t, os.MkdirAll(f.dir+"/bin", 0o755))
	must(t, os.WriteFile(f.dir+"/bin/script", []byte("#!/usr/bin/perl\nexit 0;\n"), 0o755))
	t.Cleanup(func() { os.Remove(f.scratchCopy()) })
	for _, c := range append(hostileCases(), loaderCases(f.loaderFiles(t))...) {
		t.Run(c.name, func(t *testing.T) {
			args := c.probe(f)
			var deny *Manifest
			if c.deny != nil {
				deny = c.deny(f)
			}
			res, out := f.sandboxed(t, deny, args...)
			t.Logf("sandbox: %s", strings.TrimSpace(out))
			if res.Status != 3 {
				t.Errorf("in the sandbox: status %d, want 3 (refused):\n%s", res.Status, out)
			}
			if !strings.Contains(out, c.layer) {
				t.Errorf("in the sandbox: refused with %q, want %q (the layer that must refuse it)", strings.TrimSpace(out), c.layer)
			}
			if c.grant != nil {
				res, out = f.sandboxed(t, c.grant(f), args...)
				if res.Status != 0 {
					t.Errorf("control (sandbox granting it): status %d, want 0:\n%s", res.Status, out)
				}
				return
			}
			if code, out := f.direct(t, args...); code != 0 {
				t.Errorf("control (on the host): status %d, want 0:\n%s", code, out)
			}
		})
	}
	for _, l := range f.logLines(t) {
		if l["event"] == EventRun && !strings.Contains(strings.Join(anyStrings(l["layers"]), ","), "landlock") {
			t.Errorf("a run's log line names no landlock layer: %v", l)
		}
	}
}

func anyStrings(v any) []string {
	var out []string
	if a, ok := v.([]any); ok {
		for _, e := range a {
			out = append(out, e.(string))
		}
	}
	return out
}

// scratchCopy is a /tmp path unique to this fixture (the control writes it on the host).
func (f *fixture) scratchCopy() string {
	return "/tmp/" + strings.ReplaceAll(strings.TrimPrefix(f.dir, "/"), "/", "-") + "-copy"
}
