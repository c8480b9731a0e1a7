package login

// This file is the store: one JSON record per login, named [a-z0-9-], under
// $CORRAL_HOME/logins (0700), each file 0600 and replaced atomically.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/git-corral/git-corral/internal/atomicfile"
	"github.com/git-corral/git-corral/login/loginname"
)

// Kinds of login.
const (
	// KindToken is a long-lived token with no refresh (`claude setup-token`).
	KindToken = "token"
	// KindOAuth is an access token with a refresh token and a token endpoint.
	KindOAuth = "oauth"
)

// Record is one host-held login. Its tokens never leave the host's broker.
type Record struct {
	// Agent is the catalogue agent the login is for (claude, codex).
	Agent string `json:"agent"`
	// Kind is KindToken or KindOAuth.
	Kind string `json:"kind"`
	// AccessToken is the credential the upstream accepts.
	AccessToken string `json:"access_token"`
	// RefreshToken (KindOAuth) obtains a new access token; providers rotate it on use.
	RefreshToken string `json:"refresh_token,omitempty"`
	// ExpiresAt (KindOAuth) is when AccessToken stops working; zero means unknown.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// TokenURL (KindOAuth) is the provider's token endpoint.
	TokenURL string `json:"token_url,omitempty"`
	// ClientID (KindOAuth) is the OAuth client the login was issued to.
	ClientID string `json:"client_id,omitempty"`
	// Scope (KindOAuth), when set, is sent with a refresh.
	Scope string `json:"scope,omitempty"`
	// Refreshed is when the store last refreshed the login (for `agents logins`).
	Refreshed time.Time `json:"refreshed,omitzero"`
}

// Errors.
var (
	ErrNoLogin      = errors.New("no such host-held login")
	ErrBadName      = loginname.ErrBad
	ErrBadRecord    = errors.New("login record is incomplete")
	ErrRefreshSpent = errors.New("the provider refused the refresh token")
)

// CheckName checks a login name (it becomes a file name; "none" is agent_login's word for no
// login): loginname.Check, which policy checks agent_login by.
func CheckName(name string) error { return loginname.Check(name) }

// Dir is the store of the git corral home corralHome.
func Dir(corralHome string) string { return filepath.Join(corralHome, "logins") }

// Path is the file of login name in the store of corralHome (name must pass CheckName).
func Path(corralHome, name string) string { return filepath.Join(Dir(corralHome), name+".json") }

// Check reports every problem of r, each naming the field (never a value of a token).
func (r Record) Check() error {
	var errs []error
	if r.Agent == "" {
		errs = append(errs, errors.New("agent is empty"))
	}
	if r.AccessToken == "" || strings.ContainsAny(r.AccessToken, "\r\n\x00 ") {
		errs = append(errs, errors.New("access_token is empty or holds a space, line break or NUL"))
	}
	switch r.Kind {
	case KindToken:
	case KindOAuth:
		if r.RefreshToken == "" || strings.ContainsAny(r.RefreshToken, "\r\n\x00") {
			errs = append(errs, errors.New("refresh_token is empty or holds a line break or NUL"))
		}
		if err := CheckTokenURL(r.TokenURL); err != nil {
			errs = append(errs, err)
		}
		if r.ClientID == "" {
			errs = append(errs, errors.New("client_id is empty"))
		}
	default:
		errs = append(errs, fmt.Errorf("kind %q is neither %q nor %q", r.Kind, KindToken, KindOAuth))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrBadRecord, err)
	}
	return nil
}

// CheckTokenURL accepts an https URL, or an http one to a loopback address (a stand-in).
func CheckTokenURL(s string) error {
	u, err := url.Parse(s)
	if err == nil && u.Host != "" && u.User == nil && u.Fragment == "" {
		if u.Scheme == "https" {
			return nil
		}
		if a, perr := netip.ParseAddr(u.Hostname()); u.Scheme == "http" && perr == nil && a.IsLoopback() {
			return nil
		}
	}
	return fmt.Errorf("token_url %q must be an https URL (http only to a loopback address)", s)
}

// Load reads login name from the store of corralHome.
func Load(corralHome, name string) (Record, error) {
	if err := CheckName(name); err != nil {
		return Record{}, err
	}
	return readRecord(Path(corralHome, name))
}

// readRecord reads and checks the record in file, refusing one that others can read.
func readRecord(file string) (Record, error) {
	fi, err := os.Lstat(file)
	if errors.Is(err, fs.ErrNotExist) {
		return Record{}, fmt.Errorf("read login %s: %w", file, ErrNoLogin)
	}
	if err != nil {
		return Record{}, fmt.Errorf("read login %s: %w", file, err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 != 0 {
		return Record{}, fmt.Errorf("read login %s: not a regular file of mode 0600 (mode %v); run 'git corral agents login' again", file, fi.Mode())
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return Record{}, fmt.Errorf("read login %s: %w", file, err)
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return Record{}, fmt.Errorf("read login %s: not a login record (%v)", file, jsonErrKind(err))
	}
	if err := r.Check(); err != nil {
		return Record{}, fmt.Errorf("read login %s: %w", file, err)
	}
	return r, nil
}

// jsonErrKind describes a decode error without quoting the input (which may hold a token).
func jsonErrKind(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("syntax error at byte %d", se.Offset)
	}
	return "wrong field types"
}

// Save checks r and writes it as login name of corralHome: 0600, atomically.
func Save(corralHome, name string, r Record) error {
	if err := CheckName(name); err != nil {
		return err
	}
	if err := r.Check(); err != nil {
		return fmt.Errorf("save login %q: %w", name, err)
	}
	if err := os.MkdirAll(Dir(corralHome), 0o700); err != nil {
		return fmt.Errorf("save login %q: %w", name, err)
	}
	if err := os.Chmod(Dir(corralHome), 0o700); err != nil {
		return fmt.Errorf("save login %q: %w", name, err)
	}
	return writeRecord(Path(corralHome, name), r)
}

func writeRecord(file string, r Record) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(file, append(data, '\n'), 0o600)
}

// Remove forgets login name; removed is false when there was none.
func Remove(corralHome, name string) (removed bool, err error) {
	if err := CheckName(name); err != nil {
		return false, err
	}
	err = os.Remove(Path(corralHome, name))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("forget login %q: %w", name, err)
	}
	os.Remove(lockPath(Path(corralHome, name)))
	return true, nil
}

// Entry is one login as `agents logins` shows it: no token.
type Entry struct {
	Name      string    `json:"name"`
	Agent     string    `json:"agent"`
	Kind      string    `json:"kind"`
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
	Refreshed time.Time `json:"refreshed,omitzero"`
	Problem   string    `json:"problem,omitempty"`
}

// List returns every login of corralHome, sorted by name.
func List(corralHome string) ([]Entry, error) {
	names, err := filepath.Glob(filepath.Join(Dir(corralHome), "*.json"))
	if err != nil {
		return nil, err
	}
	out := []Entry{}
	for _, f := range names {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		if CheckName(name) != nil {
			continue
		}
		r, err := readRecord(f)
		e := Entry{Name: name, Agent: r.Agent, Kind: r.Kind, ExpiresAt: r.ExpiresAt, Refreshed: r.Refreshed}
		if err != nil {
			e.Problem = err.Error()
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
