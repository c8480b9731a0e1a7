package vm

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/git-corral/git-corral/internal/sshtest"
)

// limaSSHConfig is what Lima v1.2.2 writes (sshutil.Format FormatConfig of CommonOpts +
// SSHOpts), with LIMA and HOME placeholders.
const limaSSHConfig = `# This SSH config file can be passed to 'ssh -F'.
# This file is created by Lima, but not used by Lima itself currently.
# Modifications to this file will be lost on restarting the Lima instance.
Host lima-box1
  IdentityFile "LIMA/_config/user"
  IdentityFile "HOME/.ssh/id_ed25519"
  StrictHostKeyChecking no
  UserKnownHostsFile /dev/null
  NoHostAuthenticationForLocalhost yes
  GSSAPIAuthentication no
  PreferredAuthentications publickey
  Compression no
  BatchMode yes
  IdentitiesOnly yes
  Ciphers "^aes128-gcm@openssh.com,aes256-gcm@openssh.com"
  User corral
  ControlMaster auto
  ControlPath "LIMA/box1/ssh.sock"
  ControlPersist yes
  Hostname 127.0.0.1
  Port 60022
`

// limaTree makes $LIMA_HOME/_config/user, ~/.ssh/id_ed25519 and $LIMA_HOME/box1/ssh.config
// from cfg, and returns the ssh.config path and Lima's key path.
func limaTree(t *testing.T, cfg string, withLimaKey bool) (string, string) {
	t.Helper()
	root := t.TempDir()
	lima, home := filepath.Join(root, "lima home"), filepath.Join(root, "home")
	for _, d := range []string{filepath.Join(lima, "_config"), filepath.Join(lima, "box1"), filepath.Join(home, ".ssh")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	limaKey := filepath.Join(lima, "_config", "user")
	if withLimaKey {
		writeFile(t, limaKey, "lima key")
	}
	writeFile(t, filepath.Join(home, ".ssh", "id_ed25519"), "user's own key")
	cfg = strings.ReplaceAll(strings.ReplaceAll(cfg, "LIMA", lima), "HOME", home)
	p := filepath.Join(lima, "box1", "ssh.config")
	writeFile(t, p, cfg)
	return p, limaKey
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestEndpointFromLimaSSHConfig(t *testing.T) {
	p, limaKey := limaTree(t, limaSSHConfig, true)
	for _, host := range []string{"lima-box1", "box1"} {
		ep, err := EndpointFromSSHConfig(p, host)
		if err != nil {
			t.Fatalf("%s: %v", host, err)
		}
		want := Endpoint{Host: "127.0.0.1", Port: 60022, User: "corral", IdentityFile: limaKey,
			HostKeyFile: filepath.Join(filepath.Dir(p), HostKeyPinName)}
		if ep != want {
			t.Errorf("%s:\n got %+v\nwant %+v", host, ep, want)
		}
	}
}

func TestEndpointUsesOnlyLimasKey(t *testing.T) {
	// The user's own key listed first must be skipped: only $LIMA_HOME/_config/user is used.
	userFirst := strings.Replace(limaSSHConfig, `  IdentityFile "LIMA/_config/user"
  IdentityFile "HOME/.ssh/id_ed25519"`, `  IdentityFile "HOME/.ssh/id_ed25519"
  IdentityFile "LIMA/_config/user"`, 1)
	p, limaKey := limaTree(t, userFirst, true)
	ep, err := EndpointFromSSHConfig(p, "lima-box1")
	if err != nil || ep.IdentityFile != limaKey {
		t.Fatalf("IdentityFile %q, %v; want Lima's key %q", ep.IdentityFile, err, limaKey)
	}
	// Lima's key missing: never fall back to ~/.ssh.
	p, _ = limaTree(t, limaSSHConfig, false)
	ep, err = EndpointFromSSHConfig(p, "lima-box1")
	if err == nil || !strings.Contains(err.Error(), "never ~/.ssh keys") {
		t.Fatalf("got %+v, %v; want an error refusing the ~/.ssh key", ep, err)
	}
	// A key outside $LIMA_HOME/_config, even named "user", is not Lima's.
	other := strings.Replace(limaSSHConfig, `"LIMA/_config/user"`, `"HOME/.ssh/user"`, 1)
	p, _ = limaTree(t, other, true)
	writeFile(t, filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(p))), "home", ".ssh", "user"), "x")
	if ep, err := EndpointFromSSHConfig(p, "lima-box1"); err == nil {
		t.Fatalf("got %+v; want an error: the only key is not Lima's", ep)
	}
}

func TestEndpointFromSSHConfigErrors(t *testing.T) {
	cases := []struct {
		name, edit, with, host, want string
	}{
		{"unknown host", "", "", "lima-other", `no "Host lima-other" block`},
		{"bad port", "Port 60022", "Port 6x", "lima-box1", `:21: Port "6x" is not a port number`},
		{"port out of range", "Port 60022", "Port 70000", "lima-box1", `Port "70000"`},
		{"no port", "  Port 60022\n", "", "lima-box1", "no Port in the Host block"},
		{"remote host", "Hostname 127.0.0.1", "Hostname 192.0.2.1", "lima-box1", `Hostname "192.0.2.1" is not a loopback IP`},
		{"host name", "Hostname 127.0.0.1", "Hostname localhost", "lima-box1", `Hostname "localhost" is not a loopback IP`},
		{"no user", "  User corral\n", "", "lima-box1", "no User"},
		{"unterminated quote", `ControlPath "LIMA/box1/ssh.sock"`, `ControlPath "x`, "lima-box1", ":18: ControlPath: unterminated quote"},
		{"options of another host", "Host lima-box1\n", "Host lima-box1\nHost lima-box2\n", "lima-box1", "no Hostname, Port, User"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, _ := limaTree(t, strings.Replace(limaSSHConfig, c.edit, c.with, 1), true)
			_, err := EndpointFromSSHConfig(p, c.host)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v; want it to contain %q", err, c.want)
			}
		})
	}
	if _, err := EndpointFromSSHConfig(filepath.Join(t.TempDir(), "none"), "x"); err == nil {
		t.Error("missing file: no error")
	}
}

func TestSSHConfigHostAliasOfInstanceName(t *testing.T) {
	// Lima writes "Host lima-my-box-1" for the instance "my_box.1".
	cfg := "Host lima-my-box-1\n  Port 1\nHost lima-my_box.1\n  Port 2\n"
	for _, host := range []string{"my_box.1", "lima-my_box.1", "lima-my-box-1"} {
		opts, err := parseSSHConfig("cfg", []byte(cfg), host)
		if err != nil || len(opts) == 0 || opts[0].value != "1" {
			t.Errorf("%s: %+v, %v; want the options of Host lima-my-box-1", host, opts, err)
		}
	}
}

func TestSSHConfigSyntax(t *testing.T) {
	cfg := "Host lima-a other\n  hostname=127.0.0.2\n\tPORT = 2222\n  User first\n  User second\n" +
		"Match all\n  Port 1\nHost lima-b\n  Port 3\n"
	opts, err := parseSSHConfig("cfg", []byte(cfg), "lima-a")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range opts {
		got = append(got, o.key+"="+o.value)
	}
	want := "hostname=127.0.0.2 port=2222 user=first user=second"
	if strings.Join(got, " ") != want {
		t.Errorf("options %q, want %q (Match and other Host blocks ignored)", strings.Join(got, " "), want)
	}
}

func TestHostKeyPin(t *testing.T) {
	pin := filepath.Join(t.TempDir(), "new dir", "pin") // the directory is created
	k1 := pubKey(t, sshtest.NewKeyPEM(t))
	k2 := pubKey(t, sshtest.NewKeyPEM(t))
	if got, err := readHostKeyPin(pin); got != nil || err != nil {
		t.Fatalf("no pin yet: got %v, %v; want nil, nil", got, err)
	}
	if err := checkHostKey(pin, "a", nil, k1); err != nil {
		t.Fatalf("first use refused: %v", err)
	}
	if err := writeHostKeyPin(pin, k1); err != nil {
		t.Fatal(err)
	}
	got, err := readHostKeyPin(pin)
	if err != nil || string(got.Marshal()) != string(k1.Marshal()) {
		t.Fatalf("pin read back %v, %v", got, err)
	}
	if err := checkHostKey(pin, "a", got, k1); err != nil {
		t.Errorf("pinned key refused: %v", err)
	}
	err = checkHostKey(pin, "127.0.0.1:22", got, k2)
	if !errors.Is(err, ErrHostKeyChanged) || !strings.Contains(err.Error(), "rm "+pin) ||
		!strings.Contains(err.Error(), ssh.FingerprintSHA256(k2)) {
		t.Errorf("changed key: %v; want ErrHostKeyChanged naming the offered key and the rm hint", err)
	}
	writeFile(t, pin, "garbage\n")
	if _, err := readHostKeyPin(pin); err == nil || !strings.Contains(err.Error(), "remove it") {
		t.Errorf("corrupt pin: %v; want a refusal with a hint", err)
	}
	writeFile(t, pin, string(ssh.MarshalAuthorizedKey(k1))+string(ssh.MarshalAuthorizedKey(k2)))
	if _, err := readHostKeyPin(pin); err == nil {
		t.Error("pin with two keys accepted")
	}
}

func pubKey(t *testing.T, pemKey []byte) ssh.PublicKey {
	t.Helper()
	s, err := ssh.ParsePrivateKey(pemKey)
	if err != nil {
		t.Fatal(err)
	}
	return s.PublicKey()
}
