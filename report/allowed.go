package report

// The allowed-signers file of ssh-keygen(1) ("ALLOWED SIGNERS"): one key per line as
//
//	principals [options] keytype base64 [comment]
//
// Rules kept here as ssh-keygen keeps them: '#' lines and blank lines are skipped; principals
// are comma-separated patterns; the options namespaces="…" (patterns), valid-after and
// valid-before (YYYYMMDD[HHMM[SS]][Z]) restrict the line; a cert-authority line names a CA,
// which a report's plain-key signature never matches, so it is skipped; any other option makes
// the file an error (as in ssh-keygen), naming file:line.

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// AllowedSigners returns the principals the allowed-signers file at file lists for key in
// namespace at time now; none means the key is not allowed.
func AllowedSigners(file string, key ssh.PublicKey, namespace string, now time.Time) ([]string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read allowed signers: %w", err)
	}
	want := key.Marshal()
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		principals, rest := splitPrincipals(line)
		pub, _, opts, _, err := ssh.ParseAuthorizedKey([]byte(rest))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: not principals, options and a public key: %v", file, n, err)
		}
		ok, err := optionsAllow(opts, namespace, now)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, n, err)
		}
		if ok && string(pub.Marshal()) == string(want) {
			out = append(out, strings.Split(principals, ",")...)
		}
	}
	return out, sc.Err()
}

// splitPrincipals splits the first field (quoted or not) off line.
func splitPrincipals(line string) (principals, rest string) {
	if strings.HasPrefix(line, `"`) {
		if end := strings.IndexByte(line[1:], '"'); end >= 0 {
			return line[1 : end+1], strings.TrimSpace(line[end+2:])
		}
	}
	i := strings.IndexAny(line, " \t")
	if i < 0 {
		return line, ""
	}
	return line[:i], strings.TrimSpace(line[i:])
}

// optionsAllow applies a line's options; false means the line does not apply.
func optionsAllow(opts []string, namespace string, now time.Time) (bool, error) {
	for _, o := range opts {
		name, val, hasVal := strings.Cut(o, "=")
		val = strings.Trim(val, `"`)
		switch strings.ToLower(name) {
		case "cert-authority":
			return false, nil
		case "namespaces":
			if !hasVal || !matchList(namespace, val) {
				return false, nil
			}
		case "valid-after", "valid-before":
			t, err := parseSignerTime(val)
			if err != nil {
				return false, fmt.Errorf("option %s=%q: %w", name, val, err)
			}
			if name == "valid-after" && now.Before(t) || name == "valid-before" && now.After(t) {
				return false, nil
			}
		default:
			return false, fmt.Errorf("unknown option %q (known: cert-authority, namespaces, valid-after, valid-before)", o)
		}
	}
	return true, nil
}

// matchList reports whether s matches one of the comma-separated patterns (* and ?; a leading
// ! negates, as in ssh's match_pattern_list).
func matchList(s, list string) bool {
	matched := false
	for _, p := range strings.Split(list, ",") {
		neg := strings.HasPrefix(p, "!")
		if ok, _ := path.Match(strings.TrimPrefix(p, "!"), s); ok {
			if neg {
				return false
			}
			matched = true
		}
	}
	return matched
}

// parseSignerTime parses YYYYMMDD[HHMM[SS]][Z]: local time, or UTC with Z.
func parseSignerTime(v string) (time.Time, error) {
	loc := time.Local
	if strings.HasSuffix(v, "Z") || strings.HasSuffix(v, "z") {
		v, loc = v[:len(v)-1], time.UTC
	}
	for _, layout := range []string{"20060102", "200601021504", "20060102150405"} {
		if len(v) == len(layout) {
			return time.ParseInLocation(layout, v, loc)
		}
	}
	return time.Time{}, fmt.Errorf("want YYYYMMDD[HHMM[SS]][Z]")
}
