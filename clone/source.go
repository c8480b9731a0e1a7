package clone

// Source rules: which repository addresses clone mode accepts.
//   - https:// (TLS, so the content cannot be swapped on the way; everything is validated anyway).
//   - ssh:// and scp-like user@host:path, through go-git's SSH client with host key checking.
//   - A local path to a repository, read through its object and ref storage only.
//
// Refused: git:// (no authentication, no integrity: anyone on the path can serve other code),
// http:// (same), file:// (git's file transport runs git-upload-pack and reads the source's
// config; use the plain path), ext:: and any other transport helper ("<scheme>::…"), anything
// starting with "-" (option injection into whatever reads it next), control characters
// (CR/LF smuggle lines into configs and protocol), and user-info passwords in URLs (secrets never
// in argv).

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/git-corral/git-corral/internal/lazyre"
)

// Kind is the transport of a Source.
type Kind string

const (
	// KindHTTPS is a smart-HTTP remote over TLS.
	KindHTTPS Kind = "https"
	// KindSSH is an SSH remote (ssh:// or user@host:path).
	KindSSH Kind = "ssh"
	// KindLocal is a repository on the host's disk, read object by object.
	KindLocal Kind = "local"
)

// Source is a repository address clone mode accepts.
type Source struct {
	// Kind is the transport.
	Kind Kind
	// URL is the address as given (https and ssh) or the absolute path (local).
	URL string
}

// ErrSource is wrapped by every refusal of a repository address.
var ErrSource = errors.New("repository address refused")

// scpLike matches user@host:path (git's scp-like syntax); the host part has no slash.
var scpLike = lazyre.New(`^(?:[A-Za-z0-9._~][A-Za-z0-9._~-]*@)?[A-Za-z0-9][A-Za-z0-9.-]*:[^-].*$`)

// ParseSource checks raw against the source rules. A local path is made absolute relative to
// cwd ("" means the process's working directory) and must be a directory.
func ParseSource(raw, cwd string) (Source, error) {
	refuse := func(why string) (Source, error) {
		return Source{}, fmt.Errorf("%w: %q: %s", ErrSource, raw, why)
	}
	switch {
	case raw == "":
		return refuse("empty")
	case strings.HasPrefix(raw, "-"):
		return refuse("starts with '-' (it would be read as an option)")
	case strings.IndexFunc(raw, unicode.IsControl) >= 0:
		return refuse("contains a control character (CR, LF, NUL, ESC…)")
	case strings.Contains(raw, "::"):
		return refuse("transport helpers such as ext:: run programs; only https://, ssh:// and local paths are accepted")
	}
	if i := strings.Index(raw, "://"); i > 0 {
		return parseURLSource(raw, strings.ToLower(raw[:i]), refuse)
	}
	if !filepath.IsAbs(raw) && !strings.HasPrefix(raw, ".") && scpLike.MatchString(raw) {
		if _, err := os.Stat(filepath.Join(cwd, raw)); err != nil {
			return Source{Kind: KindSSH, URL: raw}, nil
		}
	}
	return parseLocalSource(raw, cwd, refuse)
}

func parseURLSource(raw, scheme string, refuse func(string) (Source, error)) (Source, error) {
	switch scheme {
	case "https", "ssh":
	case "git":
		return refuse("git:// has no authentication or integrity; use https:// or ssh://")
	case "http":
		return refuse("plain http:// can be altered on the way; use https://")
	case "file":
		return refuse("file:// goes through git's file transport; give the plain path instead")
	default:
		return refuse(fmt.Sprintf("scheme %q is not accepted; use https://, ssh:// or a local path", scheme))
	}
	u, err := url.Parse(raw)
	if err != nil {
		return refuse(fmt.Sprintf("not a URL: %v", err))
	}
	if u.Host == "" || strings.HasPrefix(u.Host, "-") {
		return refuse("no host, or a host starting with '-'")
	}
	if _, has := u.User.Password(); has {
		return refuse("a password in the URL would end up in logs and process lists; use a credential helper or an SSH key")
	}
	if strings.HasPrefix(u.User.Username(), "-") {
		return refuse("user name starts with '-'")
	}
	if scheme == "https" {
		return Source{Kind: KindHTTPS, URL: raw}, nil
	}
	return Source{Kind: KindSSH, URL: raw}, nil
}

func parseLocalSource(raw, cwd string, refuse func(string) (Source, error)) (Source, error) {
	p := raw
	if !filepath.IsAbs(p) {
		if cwd == "" {
			wd, err := os.Getwd()
			if err != nil {
				return Source{}, fmt.Errorf("resolve %q: %w", raw, err)
			}
			cwd = wd
		}
		p = filepath.Join(cwd, p)
	}
	fi, err := os.Stat(p)
	if err != nil {
		return refuse("not an https:// or ssh:// URL, and not a local directory: " + errors.Unwrap(err).Error())
	}
	if !fi.IsDir() {
		return refuse("a local source must be a repository directory")
	}
	return Source{Kind: KindLocal, URL: filepath.Clean(p)}, nil
}
