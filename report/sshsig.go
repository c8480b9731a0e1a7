package report

// This file is SSHSIG (openssh's PROTOCOL.sshsig), the format `ssh-keygen -Y sign` writes and
// `ssh-keygen -Y verify` checks. golang.org/x/crypto/ssh signs and verifies but has no SSHSIG
// framing, and no SSHSIG library is in this module's reach, so the two small blobs are here:
//
//	signed data:    "SSHSIG" string(namespace) string(reserved="") string(hash_alg) string(H(message))
//	signature blob: "SSHSIG" uint32(1) string(publickey) string(namespace) string(reserved="")
//	                string(hash_alg) string(signature)
//
// armored as "-----BEGIN SSH SIGNATURE-----", base64 in lines of 70, "-----END SSH SIGNATURE-----".
// Rules: the hash is always sha512 when signing (what ssh-keygen uses); sha256 and sha512 are
// accepted when verifying. RSA keys sign with rsa-sha2-512, never ssh-rsa (SHA-1), which
// ssh-keygen refuses. The reserved field must be empty and the version 1; anything else is
// refused rather than skipped.

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/ssh"
)

// Namespace is the SSHSIG namespace of a report's signature (ssh-keygen -n).
const Namespace = "git-corral-report"

const (
	sigMagic   = "SSHSIG"
	sigVersion = 1
	armorBegin = "-----BEGIN SSH SIGNATURE-----"
	armorEnd   = "-----END SSH SIGNATURE-----"
)

// sshsigSigned is the data an SSHSIG signature signs.
type sshsigSigned struct {
	Namespace string
	Reserved  string
	HashAlg   string
	Hash      string
}

// sshsigBlob is the body of an armored SSHSIG signature, after the magic preamble.
type sshsigBlob struct {
	Version   uint32
	PublicKey string
	Namespace string
	Reserved  string
	HashAlg   string
	Signature string
}

// signedData returns the bytes an SSHSIG signature over message in namespace signs.
func signedData(namespace, hashAlg string, message []byte) ([]byte, error) {
	var h []byte
	switch hashAlg {
	case "sha512":
		s := sha512.Sum512(message)
		h = s[:]
	case "sha256":
		s := sha256.Sum256(message)
		h = s[:]
	default:
		return nil, fmt.Errorf("ssh signature: hash algorithm %q is not sha256 or sha512", hashAlg)
	}
	return append([]byte(sigMagic), ssh.Marshal(sshsigSigned{Namespace: namespace, HashAlg: hashAlg, Hash: string(h)})...), nil
}

// signFunc signs data with a key; it returns the SSH signature (format and blob).
type signFunc func(data []byte) (*ssh.Signature, error)

// Sign returns the armored SSHSIG signature of message by signer in namespace. An RSA signer
// signs with rsa-sha2-512.
func Sign(signer ssh.Signer, namespace string, message []byte) ([]byte, error) {
	sign := func(data []byte) (*ssh.Signature, error) { return signer.Sign(rand.Reader, data) }
	if signer.PublicKey().Type() == ssh.KeyAlgoRSA {
		as, ok := signer.(ssh.AlgorithmSigner)
		if !ok {
			return nil, errors.New("ssh signature: this RSA key cannot sign with rsa-sha2-512")
		}
		sign = func(data []byte) (*ssh.Signature, error) {
			return as.SignWithAlgorithm(rand.Reader, data, ssh.KeyAlgoRSASHA512)
		}
	}
	return signWith(signer.PublicKey(), sign, namespace, message)
}

func signWith(pub ssh.PublicKey, sign signFunc, namespace string, message []byte) ([]byte, error) {
	data, err := signedData(namespace, "sha512", message)
	if err != nil {
		return nil, err
	}
	sig, err := sign(data)
	if err != nil {
		return nil, fmt.Errorf("ssh signature: sign with %s key: %w", pub.Type(), err)
	}
	blob := append([]byte(sigMagic), ssh.Marshal(sshsigBlob{Version: sigVersion, PublicKey: string(pub.Marshal()),
		Namespace: namespace, HashAlg: "sha512", Signature: string(ssh.Marshal(sig))})...)
	return armor(blob), nil
}

// armor wraps blob as ssh-keygen does: base64 in lines of 70 characters between the markers.
func armor(blob []byte) []byte {
	enc := base64.StdEncoding.EncodeToString(blob)
	var b bytes.Buffer
	b.WriteString(armorBegin + "\n")
	for len(enc) > 70 {
		b.WriteString(enc[:70] + "\n")
		enc = enc[70:]
	}
	b.WriteString(enc + "\n" + armorEnd + "\n")
	return b.Bytes()
}

// Signature is a checked SSHSIG signature: the key that made it.
type Signature struct {
	// Key is the signer's public key.
	Key ssh.PublicKey
	// Fingerprint is the key's SHA256 fingerprint, as ssh-keygen -l prints it.
	Fingerprint string
}

// VerifySignature checks the armored SSHSIG signature armored over message in namespace and
// returns the key that made it. It does not say whether that key is trusted: the caller checks
// it against an allowed-signers file.
func VerifySignature(armored []byte, namespace string, message []byte) (*Signature, error) {
	blob, err := dearmor(armored)
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(blob, []byte(sigMagic)) {
		return nil, errors.New("ssh signature: not an SSHSIG blob (no SSHSIG preamble)")
	}
	var sb sshsigBlob
	if err := ssh.Unmarshal(blob[len(sigMagic):], &sb); err != nil {
		return nil, fmt.Errorf("ssh signature: malformed blob: %w", err)
	}
	switch {
	case sb.Version != sigVersion:
		return nil, fmt.Errorf("ssh signature: version %d, want %d", sb.Version, sigVersion)
	case sb.Namespace != namespace:
		return nil, fmt.Errorf("ssh signature: namespace %q, want %q", sb.Namespace, namespace)
	case sb.Reserved != "":
		return nil, errors.New("ssh signature: the reserved field is not empty")
	}
	pub, err := ssh.ParsePublicKey([]byte(sb.PublicKey))
	if err != nil {
		return nil, fmt.Errorf("ssh signature: public key: %w", err)
	}
	var sig ssh.Signature
	if err := ssh.Unmarshal([]byte(sb.Signature), &sig); err != nil {
		return nil, fmt.Errorf("ssh signature: malformed signature: %w", err)
	}
	if pub.Type() == ssh.KeyAlgoRSA && sig.Format == ssh.KeyAlgoRSA {
		return nil, errors.New("ssh signature: an ssh-rsa (SHA-1) signature is refused; sign with rsa-sha2-512")
	}
	data, err := signedData(sb.Namespace, sb.HashAlg, message)
	if err != nil {
		return nil, err
	}
	if err := pub.Verify(data, &sig); err != nil {
		return nil, fmt.Errorf("ssh signature: does not match the report body (signed by %s): %w", ssh.FingerprintSHA256(pub), err)
	}
	return &Signature{Key: pub, Fingerprint: ssh.FingerprintSHA256(pub)}, nil
}

// dearmor returns the blob of an armored signature.
func dearmor(armored []byte) ([]byte, error) {
	s := strings.TrimSpace(strings.ReplaceAll(string(armored), "\r\n", "\n"))
	if !strings.HasPrefix(s, armorBegin) || !strings.HasSuffix(s, armorEnd) {
		return nil, fmt.Errorf("ssh signature: not between %q and %q", armorBegin, armorEnd)
	}
	body := strings.Join(strings.Fields(s[len(armorBegin):len(s)-len(armorEnd)]), "")
	blob, err := base64.StdEncoding.DecodeString(body)
	if err != nil {
		return nil, fmt.Errorf("ssh signature: base64: %w", err)
	}
	return blob, nil
}
