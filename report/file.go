package report

// The signed file's layout: the record's JSON document, byte for byte as Encode wrote it
// (ending in a newline), then the armored SSHSIG signature of exactly those bytes. The
// document is indented JSON, so none of its lines is the armor's BEGIN line (every line of it
// starts with a brace, a bracket or a space); the signature starts at the first line that is.
// That keeps the two parts apart with plain tools, as the man page shows:
//
//	sed '/^-----BEGIN SSH SIGNATURE-----$/,$d' FILE > FILE.json
//	sed -n '/^-----BEGIN SSH SIGNATURE-----$/,$p' FILE > FILE.sig
//	ssh-keygen -Y verify -f allowed_signers -I ID -n git-corral-report -s FILE.sig < FILE.json

import (
	"bytes"
	"context"
	"fmt"
)

// Signed returns the signed file of body: body, then its signature by signer.
func Signed(ctx context.Context, body []byte, signer *Signer) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !bytes.HasSuffix(body, []byte("\n")) {
		return nil, fmt.Errorf("sign report: the document must end in a newline")
	}
	sig, err := Sign(signer.Signer, Namespace, body)
	if err != nil {
		return nil, err
	}
	return append(append([]byte{}, body...), sig...), nil
}

// Split returns a report file's document and its armored signature (nil when unsigned).
func Split(file []byte) (body, sig []byte) {
	marker := []byte(armorBegin + "\n")
	if bytes.HasPrefix(file, marker) {
		return nil, file
	}
	if i := bytes.Index(file, append([]byte("\n"), marker...)); i >= 0 {
		return file[:i+1], file[i+1:]
	}
	if bytes.HasSuffix(file, []byte("\n"+armorBegin)) { // a BEGIN line cut short
		return file[:len(file)-len(armorBegin)], file[len(file)-len(armorBegin):]
	}
	return file, nil
}
