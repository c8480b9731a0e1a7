package login

// This file hands out a login's current access token and refreshes it. Rules:
//   - the record is read from the store at every call, so a refresh made by another broker (one
//     per box, each its own process) is used at once;
//   - a refresh takes the login's exclusive flock (NAME.json.lock), then reads the record again:
//     when another process already replaced the token it was about to refresh, that token is
//     used and nothing is sent to the provider, so a rotated refresh token is never presented
//     twice;
//   - the answer's rotated refresh token is written (atomically) before the new access token
//     is handed out; a provider that returns none keeps the old one;
//   - errors name the login file and the provider's OAuth error code, never a token or a body.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"syscall"
	"time"
)

// Options tune a Source.
type Options struct {
	// Client sends refresh requests; nil means one with a 30s timeout and the host's roots.
	Client *http.Client
	// Skew refreshes a token this long before it expires; 0 means 60s, negative means none.
	Skew time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Source hands out the access token of one login file, shared by every process that uses it.
type Source struct {
	file   string
	client *http.Client
	skew   time.Duration
	now    func() time.Time
	// nolock skips the flock: only tests set it (export_test.go), to show what it prevents.
	nolock bool
}

// NewSource returns the source of the login in file (Path of the store).
func NewSource(file string, o Options) *Source {
	s := &Source{file: file, client: o.Client, skew: o.Skew, now: o.Now}
	if s.client == nil {
		s.client = &http.Client{Timeout: 30 * time.Second}
	}
	switch {
	case s.skew == 0:
		s.skew = 60 * time.Second
	case s.skew < 0:
		s.skew = 0
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s
}

// File is the login file the source reads.
func (s *Source) File() string { return s.file }

// Token returns the login's access token, refreshed first when it has expired.
func (s *Source) Token(ctx context.Context) (string, error) {
	r, err := readRecord(s.file)
	if err != nil {
		return "", err
	}
	if !s.expired(r) {
		return r.AccessToken, nil
	}
	return s.refresh(ctx, r.AccessToken, false)
}

// Invalidate says the upstream refused stale (it answered 401): the login is refreshed unless
// another process already replaced stale. It returns the token to use from now on.
func (s *Source) Invalidate(ctx context.Context, stale string) (string, error) {
	return s.refresh(ctx, stale, true)
}

// expired says r's access token is expired or within the skew of it. A token that lives
// shorter than four skews gets a quarter of its lifetime instead, so it is not refreshed at
// every use.
func (s *Source) expired(r Record) bool {
	if r.Kind != KindOAuth || r.ExpiresAt.IsZero() {
		return false
	}
	skew := s.skew
	if life := r.ExpiresAt.Sub(r.Refreshed); !r.Refreshed.IsZero() && life > 0 && life/4 < skew {
		skew = life / 4
	}
	return !s.now().Add(skew).Before(r.ExpiresAt)
}

// refresh replaces stale under the login's lock; force refreshes a token that has not expired.
func (s *Source) refresh(ctx context.Context, stale string, force bool) (string, error) {
	unlock, err := s.lock()
	if err != nil {
		return "", err
	}
	defer unlock()
	r, err := readRecord(s.file)
	if err != nil {
		return "", err
	}
	if (r.AccessToken != stale || !force) && !s.expired(r) {
		return r.AccessToken, nil // another process refreshed it meanwhile
	}
	if r.Kind != KindOAuth {
		return "", fmt.Errorf("login %s: the upstream refused its long-lived token, which cannot be refreshed; make a new one and run 'git corral agents login' again", s.file)
	}
	nr, err := s.exchange(ctx, r)
	if err != nil {
		return "", err
	}
	if err := writeRecord(s.file, nr); err != nil {
		return "", fmt.Errorf("login %s: refreshed, but saving the new tokens failed: %w", s.file, err)
	}
	return nr.AccessToken, nil
}

// lockPath is the lock file of a login file.
func lockPath(file string) string { return file + ".lock" }

// lock takes the login's exclusive flock and returns its release.
func (s *Source) lock() (func(), error) {
	if s.nolock {
		return func() {}, nil
	}
	f, err := os.OpenFile(lockPath(s.file), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock login %s: %w", s.file, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock login %s: %w", s.file, err)
	}
	return func() { f.Close() }, nil // closing releases the flock
}

// tokenAnswer is a token endpoint's answer (RFC 6749 section 5).
type tokenAnswer struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	ExpiresIn    int64  `json:"expires_in"`
	Error        string `json:"error"`
}

// exchange sends r's refresh token to its token endpoint and returns the record with the new
// tokens.
func (s *Source) exchange(ctx context.Context, r Record) (Record, error) {
	body := map[string]string{"grant_type": "refresh_token", "refresh_token": r.RefreshToken, "client_id": r.ClientID}
	if r.Scope != "" {
		body["scope"] = r.Scope
	}
	data, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.TokenURL, bytes.NewReader(data))
	if err != nil {
		return r, fmt.Errorf("refresh login %s: %w", s.file, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return r, fmt.Errorf("refresh login %s at %s: %w", s.file, r.TokenURL, errors.Unwrap(err))
	}
	defer resp.Body.Close()
	var a tokenAnswer
	dec := json.NewDecoder(io.LimitReader(resp.Body, 64<<10))
	decErr := dec.Decode(&a)
	if resp.StatusCode != http.StatusOK {
		code := a.Error
		if !printableCode(code) {
			code = "?"
		}
		err := fmt.Errorf("refresh login %s at %s: HTTP %d, OAuth error %q", s.file, r.TokenURL, resp.StatusCode, code)
		if resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusUnauthorized {
			err = fmt.Errorf("%w: %w; log in again ('git corral agents login')", ErrRefreshSpent, err)
		}
		return r, err
	}
	if decErr != nil || a.AccessToken == "" {
		return r, fmt.Errorf("refresh login %s at %s: the answer holds no access_token", s.file, r.TokenURL)
	}
	now := s.now()
	r.AccessToken, r.Refreshed = a.AccessToken, now
	if a.RefreshToken != "" {
		r.RefreshToken = a.RefreshToken
	}
	r.ExpiresAt = time.Time{}
	if a.ExpiresIn > 0 {
		r.ExpiresAt = now.Add(time.Duration(a.ExpiresIn) * time.Second)
	}
	if err := r.Check(); err != nil {
		return r, fmt.Errorf("refresh login %s: %w", s.file, err)
	}
	return r, nil
}

// printableCode accepts an OAuth error code as RFC 6749 spells them (safe to print).
func printableCode(s string) bool {
	if len(s) > 64 {
		return false
	}
	for _, c := range []byte(s) {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
