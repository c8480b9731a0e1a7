package report

// Verifying a report file. Rules: the hashes are checked first, so that a changed byte is
// named by its section; then the signature over the whole document, which also catches a
// record whose hashes were recomputed after a change. With an allowed-signers file the signing
// key must be listed in it for Namespace, as ssh-keygen -Y verify requires; without one, the
// signature is checked against the key it carries and the caller must say that the signer is
// not vouched for. A file with no signature fails when an allowed-signers file is given.

import (
	"errors"
	"fmt"
	"time"
)

// VerifyOptions tunes Verify.
type VerifyOptions struct {
	// AllowedSigners is an ssh-keygen allowed-signers file; "" checks no signer.
	AllowedSigners string
	// Now is the time valid-after and valid-before are checked at; zero means time.Now.
	Now time.Time
}

// Verified is what Verify checked.
type Verified struct {
	*Checked
	// Signature is the checked signature; nil for an unsigned file.
	Signature *Signature
	// Principals are the allowed-signers principals of the signing key (with AllowedSigners).
	Principals []string
}

// Verify checks a report file: every section hash, the digest, and the signature when there
// is one. A failure is an *IntegrityError naming the section ("signature" for the signature).
func Verify(file []byte, o VerifyOptions) (*Verified, error) {
	body, sig := Split(file)
	if len(body) == 0 {
		return nil, &IntegrityError{Section: "document", Problem: "the file holds no record before its signature"}
	}
	c, err := Check(body)
	if err != nil {
		return nil, err
	}
	v := &Verified{Checked: c}
	if sig == nil {
		if o.AllowedSigners != "" {
			return nil, &IntegrityError{Section: "signature", Problem: "the file is not signed (no " + armorBegin + " line)"}
		}
		return v, nil
	}
	if v.Signature, err = VerifySignature(sig, Namespace, body); err != nil {
		return nil, &IntegrityError{Section: "signature", Problem: err.Error()}
	}
	if o.AllowedSigners == "" {
		return v, nil
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	v.Principals, err = AllowedSigners(o.AllowedSigners, v.Signature.Key, Namespace, o.Now)
	if err != nil {
		return nil, err
	}
	if len(v.Principals) == 0 {
		return nil, &IntegrityError{Section: "signature", Problem: fmt.Sprintf("signed by %s, which %s does not list for namespace %q", v.Signature.Fingerprint, o.AllowedSigners, Namespace)}
	}
	return v, nil
}

// SectionOf returns the section an error of Verify names, or "".
func SectionOf(err error) string {
	var ie *IntegrityError
	if errors.As(err, &ie) {
		return ie.Section
	}
	return ""
}
