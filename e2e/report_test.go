package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// reportOnBox: `git corral report --all --sign KEY` of the group's box (after the git push
// scenario) is a record that plain OpenSSH verifies, split as the manual says, and that
// `git corral report --verify` accepts against the same allowed signers; it holds the refused
// push to main. One changed byte of the record fails both, and so does the unchanged record
// against another signer (the controls run the same commands).
func reportOnBox(t *testing.T, dir string) {
	t.Run("report: the box's record, SSH-signed, verifies with ssh-keygen; one changed byte fails it", func(t *testing.T) {
		// The test user's own directory (t.TempDir's parent is the test process's alone).
		d, err := os.MkdirTemp(suite.home, "e2e-report-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		if err := chown(d); err != nil {
			t.Fatal(err)
		}
		key := filepath.Join(d, "key")
		if r := runCmd(t, asUser([]string{"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "e2e", "-f", key}), "ssh-keygen"); r.code != 0 {
			t.Fatalf("ssh-keygen: %s", r.stderr)
		}
		r := corral(t, dir, nil, "report", "--all", "--sign", key)
		if r.code != 0 {
			t.Fatalf("report --sign: exit %d: %s", r.code, r.stderr)
		}
		const armor = "-----BEGIN SSH SIGNATURE-----\n"
		body, sig, ok := strings.Cut(r.stdout, armor)
		if !ok || !strings.Contains(body, `"git-corral-report/1"`) {
			t.Fatalf("the signed report is not a record followed by its signature:\n%s", r.stdout)
		}
		if !strings.Contains(body, "refs/heads/main") {
			t.Errorf("the record holds no push to refs/heads/main (refused in the git scenario)")
		}
		pub, err := os.ReadFile(key + ".pub")
		if err != nil {
			t.Fatal(err)
		}
		signers := filepath.Join(d, "allowed_signers")
		write := func(p, s string) {
			t.Helper()
			if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		write(signers, `e2e@corral namespaces="git-corral-report" `+string(pub))
		write(filepath.Join(d, "report.sig"), armor+sig)
		sshVerify := func(record string) (bool, string) {
			cmd := exec.Command("ssh-keygen", "-Y", "verify", "-f", signers, "-I", "e2e@corral", "-n", "git-corral-report", "-s", filepath.Join(d, "report.sig"))
			cmd.Stdin = strings.NewReader(record)
			out, err := cmd.CombinedOutput()
			return err == nil, string(out)
		}
		corralVerify := func(file string) result {
			t.Helper()
			return corral(t, dir, nil, "report", "--verify", file, "--allowed-signers", signers)
		}
		if ok, out := sshVerify(body); !ok {
			t.Fatalf("ssh-keygen -Y verify refused the record: %s", out)
		}
		whole := filepath.Join(d, "report")
		write(whole, r.stdout)
		if v := corralVerify(whole); v.code != 0 {
			t.Fatalf("report --verify refused the record: exit %d: %s", v.code, v.stderr)
		}
		// One byte changed: the record's first digit, replaced by another (the JSON stays valid).
		i := strings.IndexAny(body, "0123456789")
		changed := body[:i] + string("1023456789"[body[i]-'0']) + body[i+1:]
		if ok, _ := sshVerify(changed); ok {
			t.Errorf("ssh-keygen -Y verify accepted the record with one byte changed")
		}
		write(whole, changed+armor+sig)
		if v := corralVerify(whole); v.code == 0 {
			t.Errorf("report --verify accepted the record with one byte changed: %s", v.stdout)
		}
		// Control for the signer: the unchanged record against a list that names another key.
		other := filepath.Join(d, "other")
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", other).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v: %s", err, out)
		}
		otherPub, _ := os.ReadFile(other + ".pub")
		write(signers, `e2e@corral namespaces="git-corral-report" `+string(otherPub))
		if ok, _ := sshVerify(body); ok {
			t.Errorf("ssh-keygen -Y verify accepted the record against another signer's key")
		}
	})
}
