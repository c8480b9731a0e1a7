package vm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// macHost is a DoctorEnv for a Mac of arch, with Lima installed under a prefix, sw_vers
// answering version, nothing else on PATH, and the agent store holding agents.
func macHost(t *testing.T, arch, version string, agents []string) DoctorEnv {
	t.Helper()
	prefix := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(prefix, "bin"), 0o755))
	must(t, os.MkdirAll(filepath.Join(prefix, "share", "lima"), 0o755))
	must(t, os.WriteFile(filepath.Join(prefix, "bin", "limactl"), []byte("#!/bin/sh\necho 'limactl version "+PinnedLimaVersion+"'\n"), 0o755))
	must(t, os.WriteFile(filepath.Join(prefix, "share", "lima", "lima-guestagent.Linux-"+limaArch(arch)), []byte("x"), 0o644))
	must(t, os.WriteFile(filepath.Join(prefix, "share", "lima", LimaPatchesFile), []byte("x"), 0o644))
	home := t.TempDir()
	getenv := func(k string) string {
		switch k {
		case "CORRAL_LIMA_PREFIX":
			return prefix
		case "CORRAL_SYSTEM_IMAGES":
			return filepath.Join(home, "no-system-images")
		}
		return ""
	}
	return DoctorEnv{
		Getenv: getenv, ImageDir: filepath.Join(home, "images"), Home: home, GOOS: HostDarwin, GOARCH: arch,
		LookPath: func(string) (string, error) { return "", errors.New("not on this Mac's PATH") },
		Output: func(_ context.Context, name string, args ...string) ([]byte, error) {
			if name == "sw_vers" {
				return []byte(version + "\n"), nil
			}
			return nil, errors.New("no such program on this Mac")
		},
		Agents: func() ([]string, error) { return agents, nil },
	}
}

func checkNamed(t *testing.T, checks []Check, name string) Check {
	t.Helper()
	for _, c := range checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no %q check in %+v", name, checks)
	return Check{}
}

// TestDoctorDarwin: on a Mac (injected: OS, arch, tools) doctor names each missing piece with
// the fix a Mac can apply: no image of its arch (an amd64 one does not count) → import one
// (never a root build), no agent in the store → import a bundle, macOS older than 13 → upgrade,
// and asks for no QEMU, sftp-server or KVM. The control, a Mac with all of them, passes them.
func TestDoctorDarwin(t *testing.T) {
	env := macHost(t, ArchARM64, "12.6", nil)
	writeImage(t, env.ImageDir, RecipeHashFor(ArchAMD64), ArchAMD64, ArchAMD64)
	checks := Doctor(context.Background(), env)
	for _, c := range checks {
		if c.Name == "qemu" || c.Name == "qemu-img" || c.Name == "sftp-server" || c.Name == "kvm" {
			t.Errorf("a Mac is checked for %s: %+v", c.Name, c)
		}
	}
	img := checkNamed(t, checks, "base image")
	if img.Status != CheckFail || !strings.Contains(img.Detail, "arm64") || !strings.Contains(img.Fix, "git corral image import") ||
		!strings.Contains(img.Fix, "--arch arm64") || strings.Contains(img.Fix, "sudo") {
		t.Errorf("base image on a Mac with only an amd64 image: %+v, want fail with the import fix only", img)
	}
	if ag := checkNamed(t, checks, "agents"); ag.Status != CheckWarn || !strings.Contains(ag.Fix, "git corral agents import FILE") {
		t.Errorf("agents with an empty store: %+v, want a warning naming agents import", ag)
	}
	if mac := checkNamed(t, checks, "macos"); mac.Status != CheckFail || !strings.Contains(mac.Detail, "12.6") || !strings.Contains(mac.Fix, "macOS 13") {
		t.Errorf("macOS 12.6: %+v, want fail naming 13", mac)
	}
	if l := checkNamed(t, checks, "limactl"); l.Status != CheckOK {
		t.Errorf("limactl with the aarch64 guest agent: %+v, want ok", l)
	}

	ok := macHost(t, ArchARM64, "14.5", []string{"claude@2.0.0"})
	writeImage(t, ok.ImageDir, RecipeHashFor(ArchARM64), ArchARM64, ArchARM64)
	checks = Doctor(context.Background(), ok)
	for _, name := range []string{"base image", "agents", "macos", "limactl"} {
		if c := checkNamed(t, checks, name); c.Status != CheckOK {
			t.Errorf("control: %s = %+v, want ok", name, c)
		}
	}
	// an x86_64 guest agent does not serve an arm64 Mac
	os.Remove(filepath.Join(ok.Getenv("CORRAL_LIMA_PREFIX"), "share", "lima", "lima-guestagent.Linux-aarch64"))
	if l := checkNamed(t, Doctor(context.Background(), ok), "limactl"); l.Status != CheckFail || !strings.Contains(l.Detail, "Linux-aarch64") {
		t.Errorf("limactl without the aarch64 guest agent: %+v, want fail naming it", l)
	}
}

// TestDoctorLinuxImageFix: on Linux the missing image's fix offers the root build and the
// import, and the QEMU checked is the one of the host's arch.
func TestDoctorLinuxImageFix(t *testing.T) {
	env := macHost(t, ArchARM64, "", nil)
	env.GOOS = HostLinux
	var looked []string
	env.LookPath = func(p string) (string, error) { looked = append(looked, p); return "", errors.New("absent") }
	checks := Doctor(context.Background(), env)
	img := checkNamed(t, checks, "base image")
	if img.Status != CheckFail || !strings.Contains(img.Fix, "sudo git corral image build") || !strings.Contains(img.Fix, "git corral image import") {
		t.Errorf("base image on Linux: %+v, want build and import offered", img)
	}
	if q := checkNamed(t, checks, "qemu"); q.Status != CheckFail || !strings.Contains(q.Fix, "qemu-efi-aarch64") || looked[0] != "qemu-system-aarch64" {
		t.Errorf("qemu on linux/arm64: %+v (looked for %v), want qemu-system-aarch64", q, looked)
	}
}
