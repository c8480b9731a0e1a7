// Package oauthtest is a stand-in for a subscription provider, on loopback, for tests: an
// OAuth token endpoint whose refresh token rotates on use (a spent one is refused, as the real
// providers do) and an API that accepts only the current access token.
package oauthtest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// Marker is in every token the stand-in issues, so a test can look for any of them anywhere.
const Marker = "HOSTHELD"

// Server is the stand-in. Its counters are read with Stats.
type Server struct {
	*httptest.Server
	// Lifetime is the expires_in (whole seconds) of every access token issued.
	Lifetime time.Duration
	// Delay holds each refresh answer back this long, widening the window of a race.
	Delay time.Duration

	mu       sync.Mutex
	access   string
	expires  time.Time
	refresh  string
	spent    map[string]bool
	stats    Stats
	authSeen map[string]int
}

// Stats counts what the stand-in saw.
type Stats struct {
	// Refreshes is how many refreshes succeeded; Rejected how many presented a spent or
	// unknown refresh token.
	Refreshes, Rejected int
	// Needless counts refreshes made while the access token they replaced was still valid.
	Needless int
	// APIOK and APIUnauthorized count API requests with the current token and with anything
	// else.
	APIOK, APIUnauthorized int
}

// Start runs a stand-in whose tokens live lifetime (at least a second).
func Start(lifetime time.Duration) *Server {
	s := &Server{Lifetime: lifetime, spent: map[string]bool{}, authSeen: map[string]int{}}
	s.refresh = newToken("rt")
	s.access = newToken("at")
	s.expires = time.Now() // the seed's access token has expired: the first use refreshes
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

func newToken(kind string) string {
	var b [12]byte
	rand.Read(b[:])
	return kind + "-" + Marker + "-" + hex.EncodeToString(b[:])
}

// TokenURL is the stand-in's token endpoint.
func (s *Server) TokenURL() string { return s.URL + "/oauth/token" }

// Seed returns the current access token (expired) and refresh token, as a login would hold
// them right after sign-in.
func (s *Server) Seed() (access, refresh string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.access, s.refresh
}

// Stats returns the counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// AuthSeen returns every Authorization value the API was sent, with its count.
func (s *Server) AuthSeen() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.authSeen {
		out[k] = v
	}
	return out
}

// Revoke makes the provider refuse the current access token from now on (as when a provider
// ends a session early); the refresh token stays valid.
func (s *Server) Revoke() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expires = time.Now().Add(-time.Second)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/oauth/token" {
		s.token(w, r)
		return
	}
	auth := r.Header.Get("Authorization")
	s.mu.Lock()
	s.authSeen[auth]++
	ok := auth == "Bearer "+s.access && time.Now().Before(s.expires)
	if ok {
		s.stats.APIOK++
	} else {
		s.stats.APIUnauthorized++
	}
	s.mu.Unlock()
	if !ok {
		http.Error(w, `{"error":"invalid or expired token"}`, http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(`{"ok":true}`))
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	var body struct {
		GrantType    string `json:"grant_type"`
		RefreshToken string `json:"refresh_token"`
		ClientID     string `json:"client_id"`
	}
	if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&body) != nil || body.GrantType != "refresh_token" || body.ClientID == "" {
		http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest)
		return
	}
	time.Sleep(s.Delay)
	s.mu.Lock()
	defer s.mu.Unlock()
	if body.RefreshToken != s.refresh || s.spent[body.RefreshToken] || !strings.Contains(body.RefreshToken, Marker) {
		s.stats.Rejected++
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"error":"invalid_grant"}`))
		return
	}
	if time.Now().Before(s.expires) {
		s.stats.Needless++
	}
	s.spent[s.refresh] = true
	s.refresh, s.access = newToken("rt"), newToken("at")
	s.expires = time.Now().Add(s.Lifetime)
	s.stats.Refreshes++
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"access_token": s.access, "refresh_token": s.refresh,
		"expires_in": int64(s.Lifetime / time.Second), "token_type": "Bearer"})
}
