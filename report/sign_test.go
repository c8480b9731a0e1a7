package report

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// keygen makes a key with the real ssh-keygen; passphrase "" for none.
func keygen(t *testing.T, dir, typ, passphrase string) (priv, allowed string) {
	t.Helper()
	priv = filepath.Join(dir, "id_"+typ)
	args := []string{"-q", "-t", typ, "-N", passphrase, "-C", "reviewer", "-f", priv}
	if typ == "rsa" {
		args = append(args, "-b", "3072")
	}
	run(t, nil, "ssh-keygen", args...)
	pub, err := os.ReadFile(priv + ".pub")
	must(t, err)
	allowed = filepath.Join(dir, "allowed_signers_"+typ)
	must(t, os.WriteFile(allowed, []byte("reviewer@example.com namespaces=\""+Namespace+"\" "+string(pub)), 0o600))
	return priv, allowed
}

// run runs a program and fails the test when it fails; stdin may be nil.
func run(t *testing.T, stdin []byte, prog string, args ...string) string {
	t.Helper()
	out, err := runErr(stdin, nil, prog, args...)
	if err != nil {
		t.Fatalf("%s %s: %v: %s", prog, strings.Join(args, " "), err, out)
	}
	return out
}

func runErr(stdin []byte, env []string, prog string, args ...string) (string, error) {
	cmd := exec.Command(prog, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// sshKeygenVerify splits a report file with the man page's sed commands and runs ssh-keygen -Y
// verify and -Y check-novalidate on it; it returns their errors.
func sshKeygenVerify(t *testing.T, dir string, file []byte, allowed string) (verify, check error) {
	t.Helper()
	path := filepath.Join(dir, "report")
	must(t, os.WriteFile(path, file, 0o600))
	run(t, nil, "sh", "-c", `sed '/^-----BEGIN SSH SIGNATURE-----$/,$d' "$1" > "$1.json" && sed -n '/^-----BEGIN SSH SIGNATURE-----$/,$p' "$1" > "$1.sig"`, "split", path)
	body, err := os.ReadFile(path + ".json")
	must(t, err)
	if b, _ := Split(file); !bytes.Equal(body, b) {
		t.Fatalf("sed and Split disagree on the document")
	}
	out, verify := runErr(body, nil, "ssh-keygen", "-Y", "verify", "-f", allowed, "-I", "reviewer@example.com", "-n", Namespace, "-s", path+".sig")
	if verify != nil {
		verify = errors.New(out)
	}
	out, check = runErr(body, nil, "ssh-keygen", "-Y", "check-novalidate", "-n", Namespace, "-s", path+".sig")
	if check != nil {
		check = errors.New(out)
	}
	return verify, check
}

// TestSignedReportVerifiesWithSSHKeygen signs a real record with ed25519, ecdsa and RSA keys
// made by ssh-keygen: ssh-keygen -Y verify and check-novalidate accept it, and so does Verify;
// one changed byte in the document, or in the signature, fails all three.
func TestSignedReportVerifiesWithSSHKeygen(t *testing.T) {
	f := newFixture(t)
	_, body := encoded(t, f.options())
	for _, typ := range []string{"ed25519", "ecdsa", "rsa"} {
		t.Run(typ, func(t *testing.T) {
			dir := t.TempDir()
			priv, allowed := keygen(t, dir, typ, "")
			s, err := LoadSigner(priv, "")
			must(t, err)
			file, err := Signed(context.Background(), body, s)
			must(t, err)
			// Control: the file as signed passes.
			if v, c := sshKeygenVerify(t, dir, file, allowed); v != nil || c != nil {
				t.Fatalf("ssh-keygen refused the unchanged report: verify: %v; check-novalidate: %v", v, c)
			}
			v, err := Verify(file, VerifyOptions{AllowedSigners: allowed})
			if err != nil || len(v.Principals) != 1 || v.Principals[0] != "reviewer@example.com" {
				t.Fatalf("Verify(unchanged) = %+v, %v", v, err)
			}
			// One byte of the document: the first allowed count becomes another digit.
			i := bytes.Index(file, []byte(`"allow": 2`)) + len(`"allow": `)
			bad := bytes.Clone(file)
			bad[i] = '3'
			if v, c := sshKeygenVerify(t, dir, bad, allowed); v == nil || c == nil {
				t.Fatalf("ssh-keygen accepted a changed document: verify %v, check-novalidate %v", v, c)
			}
			if _, err := Verify(bad, VerifyOptions{AllowedSigners: allowed}); SectionOf(err) != "egress" {
				t.Fatalf("Verify(changed egress) = %v, want the egress section named", err)
			}
			// One byte of the signature: a base64 character in its middle.
			sigAt := bytes.Index(file, []byte(armorBegin)) + len(armorBegin) + 1
			j := sigAt + (len(file)-sigAt)/2
			for file[j] == '\n' || file[j] == '=' || file[j] == '-' {
				j++
			}
			bad = bytes.Clone(file)
			bad[j] ^= 0x01
			if !strings.ContainsRune("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", rune(bad[j])) {
				bad[j] ^= 0x03
			}
			if v, c := sshKeygenVerify(t, dir, bad, allowed); v == nil || c == nil {
				t.Fatalf("ssh-keygen accepted a changed signature: verify %v, check-novalidate %v", v, c)
			}
			if _, err := Verify(bad, VerifyOptions{AllowedSigners: allowed}); SectionOf(err) != "signature" {
				t.Fatalf("Verify(changed signature) = %v, want the signature named", err)
			}
		})
	}
}

// TestResealedReportFailsSignature: a change whose hashes and digest were recomputed passes
// Check but not the signature.
func TestResealedReportFailsSignature(t *testing.T) {
	f := newFixture(t)
	rec, body := encoded(t, f.options())
	dir := t.TempDir()
	priv, allowed := keygen(t, dir, "ed25519", "")
	s, err := LoadSigner(priv, "")
	must(t, err)
	file, err := Signed(context.Background(), body, s)
	must(t, err)
	_, sig := Split(file)
	rec.Sections.Egress.Counts["deny"] = 0
	forged, err := Encode(rec)
	must(t, err)
	if _, err := Check(forged); err != nil {
		t.Fatalf("the resealed record should pass Check: %v", err)
	}
	if _, err := Verify(append(forged, sig...), VerifyOptions{AllowedSigners: allowed}); SectionOf(err) != "signature" {
		t.Fatalf("Verify(resealed) = %v, want the signature to fail", err)
	}
}

// TestVerifyReadsSSHKeygenSignatures: a signature ssh-keygen -Y sign made verifies here (the
// framing is read as openssh writes it), and one for another namespace does not.
func TestVerifyReadsSSHKeygenSignatures(t *testing.T) {
	dir := t.TempDir()
	msg := []byte("{\"a\": 1}\n")
	must(t, os.WriteFile(filepath.Join(dir, "msg"), msg, 0o600))
	for _, typ := range []string{"ed25519", "ecdsa", "rsa"} {
		priv, _ := keygen(t, dir, typ, "")
		for _, ns := range []string{Namespace, "file"} {
			os.Remove(filepath.Join(dir, "msg.sig"))
			run(t, nil, "ssh-keygen", "-q", "-Y", "sign", "-f", priv, "-n", ns, filepath.Join(dir, "msg"))
			sig, err := os.ReadFile(filepath.Join(dir, "msg.sig"))
			must(t, err)
			_, err = VerifySignature(sig, Namespace, msg)
			if (ns == Namespace) != (err == nil) {
				t.Fatalf("%s key, namespace %q: VerifySignature = %v", typ, ns, err)
			}
		}
	}
}

// TestAllowedSignersNamespaces: a key listed only for another namespace, or not yet valid, is
// not allowed; listed for the report's namespace, it is.
func TestAllowedSignersNamespaces(t *testing.T) {
	dir := t.TempDir()
	priv, _ := keygen(t, dir, "ed25519", "")
	pub, err := os.ReadFile(priv + ".pub")
	must(t, err)
	s, err := LoadSigner(priv, "")
	must(t, err)
	file, err := Signed(context.Background(), []byte(`{"x": 1}`+"\n"), s)
	must(t, err)
	body, sig := Split(file)
	key := s.PublicKey()
	for _, c := range []struct {
		line string
		ok   bool
	}{
		{`a@x namespaces="` + Namespace + `" ` + string(pub), true},
		{`a@x ` + string(pub), true},
		{`a@x namespaces="git" ` + string(pub), false},
		{`a@x valid-after="20990101" ` + string(pub), false},
		{`a@x cert-authority ` + string(pub), false},
	} {
		allowed := filepath.Join(dir, "allowed")
		must(t, os.WriteFile(allowed, []byte("# reviewers\n\n"+c.line), 0o600))
		got, err := AllowedSigners(allowed, key, Namespace, time.Now())
		if err != nil || (len(got) == 1) != c.ok {
			t.Errorf("%q: principals %v, err %v; want allowed=%v", c.line, got, err, c.ok)
		}
		_, verr := runErr(body, nil, "ssh-keygen", "-Y", "verify", "-f", allowed, "-I", "a@x", "-n", Namespace, "-s", writeTemp(t, dir, sig))
		if (verr == nil) != c.ok {
			t.Errorf("%q: ssh-keygen -Y verify err = %v, want allowed=%v (the two must agree)", c.line, verr, c.ok)
		}
	}
}

func writeTemp(t *testing.T, dir string, b []byte) string {
	p := filepath.Join(dir, "sig")
	must(t, os.WriteFile(p, b, 0o600))
	return p
}

// TestPassphraseKeyRefused: a key under a passphrase is refused with an error saying what to
// do; control: the same key loaded into a real ssh-agent signs, and ssh-keygen accepts it.
func TestPassphraseKeyRefused(t *testing.T) {
	dir := t.TempDir()
	for _, typ := range []string{"ed25519", "rsa"} {
		priv, allowed := keygen(t, dir, typ, "correct horse")
		_, err := LoadSigner(priv, "")
		if !errors.Is(err, ErrPassphrase) || !strings.Contains(err.Error(), "ssh-add "+priv) || !strings.Contains(err.Error(), "never takes a passphrase") {
			t.Fatalf("%s: LoadSigner(passphrase key, no agent) = %v", typ, err)
		}
		sock := startAgent(t)
		_, err = LoadSigner(priv, sock)
		if !errors.Is(err, ErrPassphrase) || !strings.Contains(err.Error(), "does not hold it") {
			t.Fatalf("%s: LoadSigner(agent without the key) = %v", typ, err)
		}
		askpass := filepath.Join(dir, "askpass")
		must(t, os.WriteFile(askpass, []byte("#!/bin/sh\necho 'correct horse'\n"), 0o700))
		if out, err := runErr(nil, []string{"SSH_AUTH_SOCK=" + sock, "SSH_ASKPASS=" + askpass, "SSH_ASKPASS_REQUIRE=force", "DISPLAY=none"}, "ssh-add", priv); err != nil {
			t.Fatalf("ssh-add: %v: %s", err, out)
		}
		s, err := LoadSigner(priv, sock)
		if err != nil || !s.ViaAgent {
			t.Fatalf("%s: LoadSigner(agent holding the key) = %v", typ, err)
		}
		body := []byte("{\"x\": 1}\n")
		file, err := Signed(context.Background(), body, s)
		s.Close()
		must(t, err)
		if v, c := sshKeygenVerify(t, dir, file, allowed); v != nil || c != nil {
			t.Fatalf("%s via agent: ssh-keygen verify %v, check-novalidate %v", typ, v, c)
		}
	}
}

// startAgent starts a real ssh-agent on a socket in the test's directory and stops it after.
func startAgent(t *testing.T) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "agent.sock")
	cmd := exec.Command("ssh-agent", "-D", "-a", sock)
	must(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for range 100 {
		if _, err := os.Stat(sock); err == nil {
			return sock
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("ssh-agent did not make %s", sock)
	return ""
}
