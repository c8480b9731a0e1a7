package vm

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/provision"
)

// TestSealScript runs the seal on a directory laid out like the build box's root after its first
// boot: lima-init's and cloud-init's mount entries go (a stale one would take the next box's
// project mount at the build box's path), every other fstab line stays byte for byte, and the
// machine-id, random seed and git shadow state are emptied or removed.
func TestSealScript(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root with 'quote'")
	fstab := "# /etc/fstab: static file system information.\n" +
		"/dev/vda  /  ext4  defaults,discard,errors=remount-ro  0 1\n" +
		"mount0 /var/tmp/x/home/golden/.golden-src-80d0/mnt 9p rw,trans=virtio,version=9p2000.L,msize=131072,cache=mmap,nofail 0 0 # lima-init\n" +
		"mount1 /mnt/other 9p rw,trans=virtio,nofail 0 0 # lima-init\n" +
		"mount2 /mnt/ci 9p rw,trans=virtio,nofail,comment=cloudconfig 0 0\n" +
		"tmpfs /scratch tmpfs defaults 0 0 # lima-init is mentioned here but not last\n"
	files := map[string]string{
		"etc/fstab":                    fstab,
		"etc/machine-id":               "3ee9aab8ec0a4d3b929e6b718b23b977\n",
		"var/lib/systemd/random-seed":  "seed",
		"var/lib/corral/gitshadow/s1":  "copy",
		"var/lib/corral/keep":          "keep",
		"etc/corral/mode":              "full\n",
		"home/corral-ci.linux/.bashrc": "# user file\n",
	}
	for p, body := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(root, p), body)
	}
	out, err := exec.Command("sh", "-c", sealScript(root)).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "sealed") {
		t.Fatalf("seal: %v: %s", err, out)
	}
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	wantFstab := "# /etc/fstab: static file system information.\n" +
		"/dev/vda  /  ext4  defaults,discard,errors=remount-ro  0 1\n" +
		"tmpfs /scratch tmpfs defaults 0 0 # lima-init is mentioned here but not last\n"
	if got := read("etc/fstab"); got != wantFstab {
		t.Errorf("fstab after the seal:\n%s\nwant:\n%s", got, wantFstab)
	}
	if got := read("etc/machine-id"); got != "" {
		t.Errorf("machine-id %q after the seal, want empty (each box generates its own)", got)
	}
	for _, p := range []string{"var/lib/systemd/random-seed", "var/lib/corral/gitshadow"} {
		if _, err := os.Stat(filepath.Join(root, p)); !os.IsNotExist(err) {
			t.Errorf("%s still there after the seal (%v)", p, err)
		}
	}
	for _, p := range []string{"var/lib/corral/keep", "etc/corral/mode", "home/corral-ci.linux/.bashrc"} {
		if read(p) != files[p] {
			t.Errorf("%s changed by the seal", p)
		}
	}
	// A second seal (a retried build) finds nothing to do and still succeeds.
	if out, err := exec.Command("sh", "-c", sealScript(root)).CombinedOutput(); err != nil {
		t.Fatalf("second seal: %v: %s", err, out)
	}
}

// TestSealScriptsShellcheck: the scripts run as root in the build box.
func TestSealScriptsShellcheck(t *testing.T) {
	if _, err := exec.LookPath("shellcheck"); err != nil {
		t.Skip("shellcheck not installed (scripts/setup.sh installs it)")
	}
	for name, body := range map[string]string{"seal": goldenSealScript().Body, "check": "#!/bin/sh\n" + goldenBootCheck} {
		cmd := exec.Command("shellcheck", "-s", "sh", "-")
		cmd.Stdin = strings.NewReader(body)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("shellcheck %s: %v\n%s", name, err, out)
		}
	}
}

// TestGoldenSealScriptIsLastAndPerBuild: the seal sorts after every recipe script, runs as root,
// and is never part of a box's recipe or key (it is added to the build box only).
func TestGoldenSealScriptIsLastAndPerBuild(t *testing.T) {
	s := goldenSealScript()
	if s.Mode != provision.ModeSystem || !strings.HasPrefix(s.Body, "#!/bin/sh\n") {
		t.Fatalf("seal script: mode %q, body starts %q: want a root sh script", s.Mode, s.Body[:min(20, len(s.Body))])
	}
	for _, name := range []string{"10-base.sh", "30-privdrop.sh", provision.GitShadowScriptName, provision.RepoScriptPrefix + "99-z.sh"} {
		if s.Name <= name {
			t.Errorf("seal %s does not sort after %s", s.Name, name)
		}
	}
	for _, want := range []string{sealScript(""), goldenSealedFile, goldenFailuresFile, "systemctl stop systemd-random-seed.service"} {
		if !strings.Contains(s.Body, want) {
			t.Errorf("seal script lacks %q", want)
		}
	}
	if !strings.Contains(goldenBootCheck, goldenSealedFile) || !strings.Contains(goldenBootCheck, goldenFailuresFile) || strings.Contains(goldenBootCheck, "sudo") {
		t.Error("the host's check must read the seal's files as the box user, without sudo (none in broker and offline modes)")
	}
}
