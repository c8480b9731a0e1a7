package broker

// Receive-pack request rules: what the broker reads of a push before it decides. The body of
// POST .../git-receive-pack is pkt-lines (four hex digits giving the length, those four
// included, then the payload; "0000" is a flush), then a pack:
//
//	OLD NEW REF\0CAPABILITIES   the first command, capabilities after a NUL
//	OLD NEW REF                 every further command
//	0000                        flush
//	OPTION…  0000               push options, only when the push-options capability is asked
//	PACK…                       the pack; absent when every command is a delete
//
// Everything else fails closed: a length that is not four lower- or upper-case hex digits, one
// of 1 to 3 or above 65520, a body that ends inside a line or before its flush, shallow lines
// and signed pushes (push-cert), an object name that is not 40 or 64 lower-case hex digits or
// not the length of the others, a ref name git would refuse (checkRefName), the same ref twice,
// a NUL anywhere but after the first command's ref, more than maxPushCommands commands. A body
// of a single flush is git's probe before a large push (remote-curl's probe_rpc): it carries no
// command and changes nothing.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// maxPktLen is the longest pkt-line git writes or accepts (LARGE_PACKET_MAX).
const maxPktLen = 65520

// maxPushCommands bounds the commands of one push (a --mirror of a large repository stays far
// below it).
const maxPushCommands = 100000

// errFlush is returned by readPkt for a flush packet.
var errFlush = errors.New("flush")

// readPkt reads one pkt-line and returns its payload; errFlush for "0000". Any other special
// packet (0001 delim, 0002 response-end) is an error here: receive-pack requests have none.
func readPkt(r *bufio.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if err == io.EOF {
			return nil, fmt.Errorf("pkt-line: body ends where a line or flush was due")
		}
		return nil, fmt.Errorf("pkt-line: body ends inside a length")
	}
	n, err := strconv.ParseUint(string(hdr[:]), 16, 16)
	if err != nil || strings.ContainsAny(string(hdr[:]), "+-xX") {
		return nil, fmt.Errorf("pkt-line: length %q is not four hex digits", hdr[:])
	}
	switch {
	case n == 0:
		return nil, errFlush
	case n < 4:
		return nil, fmt.Errorf("pkt-line: special packet %04x where a command was due", n)
	case n > maxPktLen:
		return nil, fmt.Errorf("pkt-line: length %d above %d", n, maxPktLen)
	}
	buf := make([]byte, n-4)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, fmt.Errorf("pkt-line: body ends inside a %d-byte line", n)
	}
	return buf, nil
}

// pktLine encodes one pkt-line.
func pktLine(s string) []byte {
	return fmt.Appendf(nil, "%04x%s", len(s)+4, s)
}

// RefUpdate is one command of a push: set Ref from Old to New (all zeros: create or delete).
type RefUpdate struct {
	Old string `json:"old"`
	New string `json:"new"`
	Ref string `json:"ref"`
}

// isZeroOID reports whether oid is the null object name (all zeros).
func isZeroOID(oid string) bool { return strings.Trim(oid, "0") == "" }

// pushRequest is the part of a receive-pack request before its pack.
type pushRequest struct {
	updates []RefUpdate
	caps    []string
	options []string
	// hashLen is the length of the object names in hex (40 SHA-1, 64 SHA-256); 0 for a probe.
	hashLen int
}

// has reports whether the client asked for capability c.
func (p *pushRequest) has(c string) bool {
	for _, x := range p.caps {
		if x == c || strings.HasPrefix(x, c+"=") {
			return true
		}
	}
	return false
}

// readPushRequest reads the commands (and push options) of a receive-pack request, leaving r at
// the pack.
func readPushRequest(r *bufio.Reader) (*pushRequest, error) {
	p := &pushRequest{}
	seen := map[string]bool{}
	for {
		line, err := readPkt(r)
		if err == errFlush {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(p.updates) == maxPushCommands {
			return nil, fmt.Errorf("push: more than %d commands", maxPushCommands)
		}
		first := len(p.updates) == 0
		u, caps, err := parseCommand(line, first)
		if err != nil {
			return nil, err
		}
		if first {
			p.caps, p.hashLen = caps, len(u.Old)
			if p.has("push-cert") {
				return nil, errors.New("push: signed pushes (push-cert) are not supported through the broker")
			}
		}
		if len(u.Old) != p.hashLen {
			return nil, fmt.Errorf("push: command for %q mixes object name lengths", u.Ref)
		}
		if seen[u.Ref] {
			return nil, fmt.Errorf("push: %q is updated twice", u.Ref)
		}
		seen[u.Ref] = true
		p.updates = append(p.updates, u)
	}
	if len(p.updates) > 0 && p.has("push-options") {
		for {
			line, err := readPkt(r)
			if err == errFlush {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("push options: %w", err)
			}
			if bytes.IndexByte(line, 0) >= 0 || len(p.options) == maxPushCommands {
				return nil, errors.New("push options: a NUL byte or too many options")
			}
			p.options = append(p.options, strings.TrimSuffix(string(line), "\n"))
		}
	}
	return p, nil
}

// parseCommand parses "OLD NEW REF" (and, on the first line, "\0CAPS").
func parseCommand(line []byte, first bool) (RefUpdate, []string, error) {
	s := strings.TrimSuffix(string(line), "\n")
	var caps []string
	if i := strings.IndexByte(s, 0); i >= 0 {
		if !first {
			return RefUpdate{}, nil, errors.New("push: a NUL byte in a command after the first")
		}
		if strings.IndexByte(s[i+1:], 0) >= 0 {
			return RefUpdate{}, nil, errors.New("push: two NUL bytes in the first command")
		}
		caps = strings.Fields(s[i+1:])
		s = s[:i]
	}
	if strings.HasPrefix(s, "shallow ") {
		return RefUpdate{}, nil, errors.New("push: pushes from shallow repositories are not supported through the broker")
	}
	f := strings.Split(s, " ")
	if len(f) != 3 {
		return RefUpdate{}, nil, fmt.Errorf("push: command %q is not \"OLD NEW REF\"", clip(s))
	}
	u := RefUpdate{Old: f[0], New: f[1], Ref: f[2]}
	if !validOID(u.Old) || !validOID(u.New) || len(u.Old) != len(u.New) {
		return RefUpdate{}, nil, fmt.Errorf("push: command %q does not name objects as 40 or 64 lower-case hex digits", clip(s))
	}
	if err := checkRefName(u.Ref); err != nil {
		return RefUpdate{}, nil, err
	}
	return u, caps, nil
}

func validOID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// checkRefName accepts the ref names git's check-ref-format accepts under refs/, and only
// those: no "..", "@{", "//", component starting with "." or ending in ".lock", no control
// character, space, ~ ^ : ? * [ \ DEL, no trailing "/" or ".".
func checkRefName(ref string) error {
	bad := func(why string) error { return fmt.Errorf("push: ref name %q %s", clip(ref), why) }
	if !strings.HasPrefix(ref, "refs/") || len(ref) > 1024 {
		return bad("is not a ref under refs/ of at most 1024 bytes")
	}
	if strings.Contains(ref, "..") || strings.Contains(ref, "@{") || strings.HasSuffix(ref, ".") || ref == "@" {
		return bad("holds \"..\" or \"@{\", or ends in \".\"")
	}
	for _, c := range []byte(ref) {
		if c < 0x20 || c == 0x7f || strings.IndexByte(" ~^:?*[\\", c) >= 0 {
			return bad("holds a control character, space or one of ~^:?*[\\")
		}
	}
	for _, comp := range strings.Split(ref, "/") {
		if comp == "" || comp[0] == '.' || strings.HasSuffix(comp, ".lock") {
			return bad("has an empty component, one starting with \".\" or ending in \".lock\"")
		}
	}
	return nil
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}
