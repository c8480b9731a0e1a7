package provision

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/policy"
)

// prepHostile leaves the box the way cloud-init or lima-init and a careless image would: the
// box user in every root-equivalent group, both sudoers entries, a setuid shell copy and a
// setgid-shadow program on the root filesystem. The uid is one no host account uses, because
// the scripts look for the box user's processes in the host's /proc.
const prepHostile = `set -e
useradd -m -U -u 47113 -s /bin/bash corral
for g in docker lxd incus-admin libvirt kvm wheel admin systemd-journal; do getent group "$g" >/dev/null || groupadd -r "$g"; done
usermod -aG sudo,disk,adm,kvm,docker,lxd,incus-admin,libvirt,shadow,wheel,admin,systemd-journal corral
echo 'corral ALL=(ALL) NOPASSWD:ALL' >/etc/sudoers.d/90-cloud-init-users
echo 'corral ALL=(ALL) NOPASSWD:ALL' >/etc/sudoers.d/90-lima-user
chmod 440 /etc/sudoers.d/90-*
cp /usr/bin/su /opt/su-copy && chmod 4755 /opt/su-copy
cp /usr/bin/true /opt/shadow-grp && chgrp shadow /opt/shadow-grp && chmod 2755 /opt/shadow-grp
set +e
`

func privdropOptions() Options {
	return Options{Network: policy.NetworkOffline, User: "corral", ProjectDir: "/home/corral/project"}
}

// TestPrivdropDrops runs the real 10-base and 30-privdrop scripts on a hostile starting state
// and checks from the box user's side that no path to root is left.
func TestPrivdropDrops(t *testing.T) {
	needRoot(t)
	g := newGuestRoot(t, privdropOptions())
	out, errOut, code := g.run("", prepHostile+`
sudo -n -l -U corral /bin/sh >/dev/null && echo PRE_SUDO=yes
sh /corral/05-box.sh >/dev/null && sh /corral/10-base.sh >/dev/null || exit 90
/usr/local/libexec/corral/guard-check privileges >/dev/null || echo PRE_GUARD=fail
sh /corral/30-privdrop.sh || exit 91
echo "GROUPS=$(id -nG corral)"
echo "SUDOERS=$(ls /etc/sudoers.d | tr '\n' ' ')"
echo "SUCOPY=$(stat -c %a /opt/su-copy) SHADOWGRP=$(stat -c %a /opt/shadow-grp)"
runuser -u corral -- sudo -n true 2>/dev/null && echo USER_SUDO_TRUE=yes
runuser -u corral -- sudo -n /bin/sh -c id 2>/dev/null && echo USER_SUDO_SH=yes
runuser -u corral -- sudo -n /usr/local/libexec/corral/guard-check privileges 2>/dev/null && echo USER_GUARD_ARGS=yes
echo "USER_GUARD=$(runuser -u corral -- sudo -n /usr/local/libexec/corral/guard-check 2>/dev/null)"
echo "RUN_AS_ROOT_CHECK=$(/usr/local/libexec/corral/guard-check privileges)"
`)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{"PRE_SUDO=yes", "PRE_GUARD=fail", "SUDOERS=README zz-corral ", "SUCOPY=755 SHADOWGRP=755",
		`USER_GUARD={"ok":false,"mode":"offline"`, `RUN_AS_ROOT_CHECK={"ok":true,"mode":"offline","failures":[]}`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q\nstdout:\n%s\nstderr:\n%s", want, out, errOut)
		}
	}
	for _, bad := range []string{"USER_SUDO_TRUE", "USER_SUDO_SH", "USER_GUARD_ARGS"} {
		if strings.Contains(out, bad) {
			t.Errorf("%s: the box user still reaches root\n%s", bad, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "GROUPS="); ok {
			for _, grp := range strings.Fields(rest) {
				if strings.Contains(" root sudo admin wheel disk docker lxd incus-admin libvirt shadow adm systemd-journal kvm ", " "+grp+" ") {
					t.Errorf("box user still in group %s", grp)
				}
			}
		}
	}
}

// TestGuardRefusesLeftovers drops privileges, then puts back one path to root at a time: the
// guard check (the same code the privilege drop ends with) must fail and name it.
func TestGuardRefusesLeftovers(t *testing.T) {
	needRoot(t)
	cases := []struct{ name, mutate, want string }{
		{"nothing", "", ""},
		{"group sudo", "gpasswd -a corral sudo", "group sudo"},
		{"group disk", "gpasswd -a corral disk", "group disk"},
		{"group docker", "gpasswd -a corral docker", "group docker"},
		{"group lxd", "gpasswd -a corral lxd", "group lxd"},
		{"group shadow", "gpasswd -a corral shadow", "group shadow"},
		{"group adm", "gpasswd -a corral adm", "group adm"},
		{"group kvm", "gpasswd -a corral kvm", "group kvm"},
		{"group systemd-journal", "gpasswd -a corral systemd-journal", "group systemd-journal"},
		{"lima-init sudoers again", "echo 'corral ALL=(ALL) NOPASSWD:ALL' >/etc/sudoers.d/90-lima-user", "90-lima-user is still present"},
		{"cloud-init sudoers again", "echo 'corral ALL=(ALL) NOPASSWD:ALL' >/etc/sudoers.d/90-cloud-init-users", "90-cloud-init-users is still present"},
		{"other sudoers file", "echo 'corral ALL=(ALL) NOPASSWD: /bin/sh' >/etc/sudoers.d/50-extra && chmod 440 /etc/sudoers.d/50-extra", "unexpected sudoers file /etc/sudoers.d/50-extra"},
		{"rule after includedir", "echo 'corral ALL=(ALL) NOPASSWD: ALL' >>/etc/sudoers", "sudo lets the box user run /bin/sh"},
		{"group rule after includedir", "gpasswd -a corral users >/dev/null; echo '%users ALL=(ALL) NOPASSWD: ALL' >>/etc/sudoers", "sudo lets the box user run"},
		{"narrow grant after includedir", "echo 'corral ALL=(root) NOPASSWD: /usr/bin/id' >>/etc/sudoers", "sudo grants the box user more than the fixed commands"},
		{"environment kept for root", "echo 'Defaults:corral env_keep += \"LD_PRELOAD\"' >>/etc/sudoers", "sudo defaults let the caller's environment reach root"},
		{"our sudoers edited", "echo 'corral ALL=(ALL) NOPASSWD: ALL' >>/etc/sudoers.d/zz-corral", "zz-corral is missing or differs"},
		{"setuid shell", "cp /usr/bin/bash /opt/rootsh && chmod 4755 /opt/rootsh", "setuid or setgid programs remain: /opt/rootsh"},
		{"setgid shadow", "cp /usr/bin/true /opt/g && chgrp shadow /opt/g && chmod 2755 /opt/g", "setuid or setgid programs remain: /opt/g"},
		{"second uid 0", "echo 'toor:x:0:0::/root:/bin/sh' >>/etc/passwd", "accounts other than root have uid 0: toor"},
		{"helper dir writable", "chmod g+w /usr/local/libexec/corral", "root-run path /usr/local/libexec/corral is writable"},
		{"helper replaced by user's", "chown corral /usr/local/libexec/corral/guard-check", "guard-check is not owned by root"},
		{"docker socket", "python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind(\"/run/docker.sock\")' && chmod 666 /run/docker.sock", "container socket /run/docker.sock"},
		// Lima's guest agent, whose socket every local user can write, must not run as root;
		// each with its control that passes (the agent as the box user, a virtio port root's
		// only).
		{"guest agent as root", fakeGuestAgent(""), "Lima's guest agent (pid"},
		{"guest agent as the box user", fakeGuestAgent("setpriv --reuid=corral --regid=corral --init-groups"), ""},
		{"virtio port open to all", fakeVirtioPort("666"), "box user can open the virtio port /dev/virtio-ports/io.lima-vm.guest_agent.0"},
		{"virtio port root's only", fakeVirtioPort("600"), ""},
		// The project mount point comes from /etc/corral/project-dir (05-box): the check reads
		// it, and a box without it fails; control: the project mounted nosuid passes.
		{"project mounted with setuid", "mkdir -p /home/corral/project && mount -t tmpfs -o suid proj /home/corral/project", "project mount /home/corral/project allows setuid"},
		{"project mounted nosuid", "mkdir -p /home/corral/project && mount -t tmpfs -o nosuid proj /home/corral/project", ""},
		{"project-dir removed", "rm /etc/corral/project-dir", "/etc/corral/project-dir is missing"},
		{"process with old group", "setpriv --reuid=corral --regid=corral --groups=$(getent group disk | cut -d: -f3) sleep 20 & P=$!; sleep 0.3", "still hold a root-equivalent group"},
	}
	g := newGuestRoot(t, privdropOptions())
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, code := g.run("", prepHostile+`
sh /corral/05-box.sh >/dev/null && sh /corral/10-base.sh >/dev/null || exit 90
sh /corral/30-privdrop.sh >/dev/null || exit 91
P=
`+c.mutate+`
/usr/local/libexec/corral/guard-check privileges
echo "GUARD=$?"
if [ -n "$P" ]; then kill "$P"; wait "$P" || true; fi
`)
			if code != 0 {
				t.Fatalf("setup failed, exit %d\n%s\n%s", code, out, errOut)
			}
			r, err := ParseGuardReport([]byte(lastJSON(strings.Split(out, "GUARD=")[0])))
			if err != nil {
				t.Fatalf("no JSON report: %v\n%s\n%s", err, out, errOut)
			}
			if c.want == "" {
				if !r.OK || !strings.Contains(out, "GUARD=0") {
					t.Fatalf("clean box reported %+v\n%s", r, out)
				}
				return
			}
			if r.OK || strings.Contains(out, "GUARD=0") {
				t.Fatalf("guard check passed with %s left\n%s", c.name, out)
			}
			if !strings.Contains(strings.Join(r.Failures, "\n"), c.want) {
				t.Errorf("failures %q do not name %q", r.Failures, c.want)
			}
		})
	}
}

// fakeVirtioPort gives the root a /dev of its own (a tmpfs in the test's mount namespace: the
// host's /dev is bound there and must not change) with a character device where QEMU's
// virtio-serial port for Lima's guest agent appears, with the given mode.
func fakeVirtioPort(mode string) string {
	return `mount -t tmpfs -o mode=0755 tmpfs /dev
for n in null:3 zero:5 random:8 urandom:9; do mknod -m 666 "/dev/${n%:*}" c 1 "${n#*:}"; done
mknod -m ` + mode + ` /dev/vport9p1 c 1 3
mkdir /dev/virtio-ports && ln -s ../vport9p1 /dev/virtio-ports/io.lima-vm.guest_agent.0`
}

// fakeGuestAgent starts a process named lima-guestagent (a link to python3) through prefix (""
// runs it as root), as the guard check finds Lima's guest agent.
func fakeGuestAgent(prefix string) string {
	return `ln -s /usr/bin/python3 /tmp/lima-guestagent
` + prefix + ` /tmp/lima-guestagent -c 'import time; time.sleep(30)' daemon & P=$!; sleep 0.5`
}

// TestPrivdropRefusesPrimaryGroup: a primary group cannot be dropped with gpasswd, so the
// script stops rather than report success.
func TestPrivdropRefusesPrimaryGroup(t *testing.T) {
	needRoot(t)
	g := newGuestRoot(t, privdropOptions())
	out, errOut, code := g.run("", prepHostile+`
usermod -g sudo corral
sh /corral/05-box.sh >/dev/null && sh /corral/10-base.sh >/dev/null || exit 90
sh /corral/30-privdrop.sh
echo "PRIVDROP=$?"
`)
	if code != 0 || !strings.Contains(out, "PRIVDROP=1") || !strings.Contains(errOut, "primary group of corral is sudo") {
		t.Fatalf("exit %d, want PRIVDROP=1 and a message\n%s\n%s", code, out, errOut)
	}
}

// TestGuardRefusesReverseSSHFS: Lima's reverse-sshfs serves the share with an sftp-server
// started in the shared directory (sftp-server -d DIR), which confines nothing: a client asks
// for any absolute path. The test proves that with OpenSSH's own sftp client, then mounts a
// real fuse.sshfs share and checks the guard check refuses it.
func TestGuardRefusesReverseSSHFS(t *testing.T) {
	needRoot(t)
	for _, tool := range []string{"sshfs", "sftp", "/usr/lib/openssh/sftp-server"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (scripts/setup.sh installs sshfs, openssh-client, openssh-sftp-server)", tool)
		}
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("needs /dev/fuse for a real sshfs mount")
	}
	g := newGuestRoot(t, privdropOptions())
	out, errOut, code := g.run("", prepHostile+`
sh /corral/05-box.sh >/dev/null && sh /corral/10-base.sh >/dev/null && sh /corral/30-privdrop.sh >/tmp/privdrop.log 2>&1 || { cat /tmp/privdrop.log; exit 90; }
mkdir -p /srv/share /srv/private /mnt/share
echo host-secret >/srv/private/key
cd /tmp && sftp -q -D '/usr/lib/openssh/sftp-server -d /srv/share' >/dev/null 2>&1 <<'SFTP'
get /srv/private/key /tmp/stolen
SFTP
echo "STOLEN=$(cat /tmp/stolen 2>/dev/null)"
mkfifo /tmp/to-server /tmp/to-client
/usr/lib/openssh/sftp-server -d /srv/share </tmp/to-server >/tmp/to-client &
sshfs -o slave :/srv/share /mnt/share >/tmp/to-server </tmp/to-client &
i=0; until findmnt -t fuse.sshfs /mnt/share >/dev/null || [ $i -gt 50 ]; do sleep 0.1; i=$((i+1)); done
/usr/local/libexec/corral/guard-check
echo "GUARD=$?"
echo "SESSION=$(`+sessionCheck()+`)"
umount /mnt/share 2>/dev/null; wait
`)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "STOLEN=host-secret") {
		t.Errorf("sftp-server -d confined the client after all (then reverse-sshfs may be safe): %s", out)
	}
	if !strings.Contains(out, "reverse-sshfs mounts reach the whole host filesystem: /mnt/share") || strings.Contains(out, "GUARD=0") {
		t.Errorf("guard check accepted a reverse-sshfs mount\n%s\n%s", out, errOut)
	}
	if !strings.Contains(out, `SESSION={"ok":false`) || !strings.Contains(out[strings.Index(out, "SESSION="):], "reverse-sshfs mounts reach the whole host filesystem: /mnt/share") {
		t.Errorf("session check accepted a reverse-sshfs mount\n%s\n%s", out, errOut)
	}
}
