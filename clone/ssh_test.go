package clone

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/storer"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
)

// TestFetchSSH clones over ssh:// from a real sshd on loopback (run by the test, as root) with
// go-git's SSH client, the host key pinned: the ssh transport gets the same caps and checks, and
// no git process runs on the client side.
func TestFetchSSH(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test runs its own sshd, which must be root to log a user in")
	}
	sshd, err := exec.LookPath("sshd")
	if err != nil {
		sshd = "/usr/sbin/sshd"
		if _, err := os.Stat(sshd); err != nil {
			t.Skip("sshd not installed (openssh-server)")
		}
	}
	root := hermetic(t)
	work := filepath.Join(root, "work")
	makeRepo(t, work, map[string]string{"README": "over ssh\n"})
	srv := bareCopy(t, root, work, "s")
	hostile := filepath.Join(root, "srv", "h.git")
	git(t, root, "init", "-q", "--bare", hostile)
	treeWith(dirWith(".GIT", "config", "100644", "x"))(t, hostile)

	signer, hostPub, port := startSSHD(t, sshd, root)
	auth := &gitssh.PublicKeys{User: "root", Signer: signer}
	auth.HostKeyCallback = ssh.FixedHostKey(hostPub)
	check := recordGit(t, root)

	store := filepath.Join(root, "home", ".corral", "clones", "ssh.git")
	res, err := Fetch(bg(), fmt.Sprintf("ssh://root@127.0.0.1:%d%s", port, srv), store, Options{Auth: auth})
	if err != nil {
		t.Fatalf("Fetch over ssh: %v", err)
	}
	if res.Head != "refs/heads/main" || len(res.Refs) != 1 {
		t.Errorf("result %+v", res)
	}
	store2 := filepath.Join(root, "home", ".corral", "clones-hostile", "hostile.git")
	_, err = Fetch(bg(), fmt.Sprintf("ssh://root@127.0.0.1:%d%s", port, hostile), store2, Options{Auth: auth})
	var re *RefusedError
	if !errors.As(err, &re) || !re.Has(ClassTree) {
		t.Errorf("hostile repository over ssh: %v, want a tree refusal", err)
	}
	assertNothingLeft(t, store2)
	// The ref cap holds over ssh too: counted once go-git has read the advertisement, before any
	// pack is asked for. The control is the first Fetch above, of the same server.
	many := filepath.Join(root, "work-many")
	makeRepo(t, many, map[string]string{"README": "refs\n"})
	addRefsStdin(t, many, refNames("refs/heads/b", 21))
	manySrv := bareCopy(t, root, many, "many")
	_, err = Fetch(bg(), fmt.Sprintf("ssh://root@127.0.0.1:%d%s", port, manySrv), store2, Options{Auth: auth, Limits: Limits{MaxRefs: 20}})
	wantRefCap(t, err, "more than 20 branches and tags")
	assertNothingLeft(t, store2)
	check()
	if got := git(t, store, "show", "HEAD:README"); got != "over ssh" {
		t.Errorf("README = %q", got)
	}
}

// startSSHD runs sshd on a free loopback port with a fresh host key and one authorised client
// key, and returns the client signer, the host key and the port.
func startSSHD(t *testing.T, sshd, root string) (ssh.Signer, ssh.PublicKey, int) {
	t.Helper()
	dir := filepath.Join(root, "sshd")
	must(t, os.MkdirAll(dir, 0o700))
	hostSigner := writeKey(t, filepath.Join(dir, "host_key"))
	clientPub, clientPriv, _ := ed25519.GenerateKey(rand.Reader)
	clientSigner, err := ssh.NewSignerFromKey(clientPriv)
	must(t, err)
	sshPub, err := ssh.NewPublicKey(clientPub)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "authorized_keys"), ssh.MarshalAuthorizedKey(sshPub), 0o600))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cfg := fmt.Sprintf("Port %d\nListenAddress 127.0.0.1\nHostKey %s\nAuthorizedKeysFile %s\nPidFile none\n"+
		"PermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"+
		"StrictModes no\nSetEnv PATH=%s:/usr/bin:/bin\n", port, filepath.Join(dir, "host_key"), filepath.Join(dir, "authorized_keys"), filepath.Dir(realGit))
	must(t, os.WriteFile(filepath.Join(dir, "sshd_config"), []byte(cfg), 0o600))
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Skip("cannot create /run/sshd:", err)
	}
	cmd := exec.Command(sshd, "-D", "-e", "-f", filepath.Join(dir, "sshd_config"))
	log := filepath.Join(dir, "log")
	lf, err := os.Create(log)
	must(t, err)
	cmd.Stdout, cmd.Stderr = lf, lf
	must(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		lf.Close()
		if t.Failed() {
			data, _ := os.ReadFile(log)
			t.Logf("sshd log:\n%s", data)
		}
	})
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
			break
		}
		if i > 100 {
			t.Fatalf("sshd did not listen: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return clientSigner, hostSigner.PublicKey(), port
}

func writeKey(t *testing.T, path string) ssh.Signer {
	t.Helper()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKey(priv, "")
	must(t, err)
	must(t, os.WriteFile(path, pem.EncodeToMemory(block), 0o600))
	s, err := ssh.NewSignerFromKey(priv)
	must(t, err)
	return s
}

// TestTransferRetriesClosingInputEOF: go-git's "closing input: EOF" (the server closed before
// the client's side after "done"; nothing received yet) gets one more attempt; any other error,
// or that one twice, is returned as it is.
func TestTransferRetriesClosingInputEOF(t *testing.T) {
	saved := transferAttempt
	t.Cleanup(func() { transferAttempt = saved })
	flaky := fmt.Errorf("fetch %q: closing input: EOF", "ssh://x/y")
	for _, tc := range []struct {
		name  string
		errs  []error
		calls int
		ok    bool
	}{
		{"once, then fine", []error{flaky, nil}, 2, true},
		{"twice", []error{flaky, flaky}, 2, false},
		{"another error", []error{errors.New("fetch: unexpected EOF")}, 1, false},
		{"fine", []error{nil}, 1, true},
	} {
		calls := 0
		transferAttempt = func(context.Context, Source, storer.Storer, *os.File, Limits, Options, *findings) (*wanted, error) {
			err := tc.errs[calls]
			calls++
			if err != nil {
				return nil, err
			}
			return &wanted{}, nil
		}
		_, err := transferRemote(bg(), Source{URL: "ssh://x/y"}, nil, nil, Limits{}, Options{}, &findings{})
		if calls != tc.calls || (err == nil) != tc.ok {
			t.Errorf("%s: %d attempts, error %v; want %d attempts, ok %v", tc.name, calls, err, tc.calls, tc.ok)
		}
	}
}
