package report

// Signing keys. Rules: the key file is an OpenSSH (or PEM) private key, read once; a key under a
// passphrase is never decrypted here, because git corral never takes a passphrase (not on the
// command line, not on a prompt): when SSH_AUTH_SOCK names an agent that holds the same key, the
// agent signs; otherwise the key is refused and the error says how to load it into an agent.

import (
	"errors"
	"fmt"
	"net"
	"os"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// ErrPassphrase means a key file is protected by a passphrase and no agent holds the key.
var ErrPassphrase = errors.New("the key is protected by a passphrase")

// Signer is a loaded signing key; Close releases an agent connection.
type Signer struct {
	ssh.Signer
	// ViaAgent is true when the agent at SSH_AUTH_SOCK signs.
	ViaAgent bool
	close    func() error
}

// Close releases the agent connection, if any.
func (s *Signer) Close() error {
	if s.close != nil {
		return s.close()
	}
	return nil
}

// LoadSigner reads the private key at path. A key under a passphrase is signed with by the
// agent at agentSock when it holds the key; "" means no agent.
func LoadSigner(path, agentSock string) (*Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read signing key: %w", err)
	}
	s, err := ssh.ParsePrivateKey(b)
	if err == nil {
		return &Signer{Signer: s}, nil
	}
	var pm *ssh.PassphraseMissingError
	if !errors.As(err, &pm) {
		return nil, fmt.Errorf("read signing key %s: %w", path, err)
	}
	if pm.PublicKey == nil {
		return nil, fmt.Errorf("signing key %s: %w, and its public key cannot be read to ask an agent for it", path, ErrPassphrase)
	}
	if agentSock == "" {
		return nil, fmt.Errorf("signing key %s: %w and SSH_AUTH_SOCK is not set: git corral never takes a passphrase; load the key into ssh-agent (ssh-add %s) and run again", path, ErrPassphrase, path)
	}
	return agentSigner(path, agentSock, pm.PublicKey)
}

// agentSigner returns the agent's signer of pub.
func agentSigner(path, sock string, pub ssh.PublicKey) (*Signer, error) {
	conn, err := net.Dial("unix", sock)
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %w, and the agent at SSH_AUTH_SOCK %q cannot be reached: %v", path, ErrPassphrase, sock, err)
	}
	signers, err := agent.NewClient(conn).Signers()
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("signing key %s: list the agent's keys: %w", path, err)
	}
	want := pub.Marshal()
	for _, s := range signers {
		if string(s.PublicKey().Marshal()) == string(want) {
			return &Signer{Signer: s, ViaAgent: true, close: conn.Close}, nil
		}
	}
	conn.Close()
	return nil, fmt.Errorf("signing key %s: %w and the agent at SSH_AUTH_SOCK does not hold it (%s): load it with 'ssh-add %s' and run again", path, ErrPassphrase, ssh.FingerprintSHA256(pub), path)
}
