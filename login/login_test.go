package login_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-corral/git-corral/internal/oauthtest"
	"github.com/git-corral/git-corral/login"
)

// seed stores a login holding the stand-in's current (expired) access token and refresh token.
func seed(t *testing.T, home string, srv *oauthtest.Server, name string) string {
	t.Helper()
	at, rt := srv.Seed()
	r := login.Record{Agent: "claude", Kind: login.KindOAuth, AccessToken: at, RefreshToken: rt,
		ExpiresAt: time.Now().Add(-time.Minute), TokenURL: srv.TokenURL(), ClientID: "test-client"}
	if err := login.Save(home, name, r); err != nil {
		t.Fatal(err)
	}
	return login.Path(home, name)
}

// TestStoreFiles: a login is a 0600 file in a 0700 directory; a file others can read, a bad
// name or an incomplete record is refused, and no error or listing shows a token.
func TestStoreFiles(t *testing.T) {
	home := t.TempDir()
	srv := oauthtest.Start(time.Hour)
	defer srv.Close()
	file := seed(t, home, srv, "work")
	for p, want := range map[string]os.FileMode{file: 0o600, login.Dir(home): 0o700} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, %v; want %v", p, fi.Mode().Perm(), err, want)
		}
	}
	r, err := login.Load(home, "work")
	if err != nil || r.Agent != "claude" || r.Kind != login.KindOAuth {
		t.Fatalf("Load: %+v %v", r, err)
	}
	list, err := login.List(home)
	if err != nil || len(list) != 1 || list[0].Name != "work" || list[0].Problem != "" {
		t.Fatalf("List: %+v %v", list, err)
	}
	if s := fmt.Sprintf("%+v", list); strings.Contains(s, oauthtest.Marker) {
		t.Errorf("the listing shows a token: %s", s)
	}
	if _, err := login.Load(home, "absent"); !errors.Is(err, login.ErrNoLogin) {
		t.Errorf("missing login: %v", err)
	}
	for _, bad := range []string{"Work", "../x", "", "a b", "-x", "none"} {
		if err := login.Save(home, bad, r); !errors.Is(err, login.ErrBadName) {
			t.Errorf("name %q: %v", bad, err)
		}
	}
	inc := r
	inc.RefreshToken, inc.TokenURL = "", "http://example.com/token"
	err = login.Save(home, "inc", inc)
	if !errors.Is(err, login.ErrBadRecord) || !strings.Contains(err.Error(), "refresh_token") || !strings.Contains(err.Error(), "token_url") ||
		strings.Contains(err.Error(), oauthtest.Marker) {
		t.Errorf("incomplete record: %v", err)
	}
	os.Chmod(file, 0o644)
	if _, err := login.Load(home, "work"); err == nil || !strings.Contains(err.Error(), "0600") {
		t.Errorf("a login others can read was used: %v", err)
	}
	// Control: the same file at 0600 loads.
	os.Chmod(file, 0o600)
	if _, err := login.Load(home, "work"); err != nil {
		t.Errorf("control: %v", err)
	}
}

// TestTokenRefreshesOnceUnderLock: eight users of one login whose token has expired, at the
// same moment, against a provider that rotates the refresh token: exactly one refresh, none
// refused, all get the new token. Control: without the lock, several present the same refresh
// token and the provider refuses all but one.
func TestTokenRefreshesOnceUnderLock(t *testing.T) {
	run := func(nolock bool) (oauthtest.Stats, []error, map[string]bool) {
		home := t.TempDir()
		srv := oauthtest.Start(time.Hour)
		defer srv.Close()
		srv.Delay = 150 * time.Millisecond
		file := seed(t, home, srv, "claude")
		var wg sync.WaitGroup
		var mu sync.Mutex
		var errs []error
		tokens := map[string]bool{}
		start := make(chan struct{})
		for range 8 {
			s := login.NewSource(file, login.Options{})
			if nolock {
				s.WithoutLock()
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				tok, err := s.Token(context.Background())
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
				} else {
					tokens[tok] = true
				}
			}()
		}
		close(start)
		wg.Wait()
		return srv.Stats(), errs, tokens
	}
	st, errs, tokens := run(false)
	if st.Refreshes != 1 || st.Rejected != 0 || len(errs) != 0 || len(tokens) != 1 {
		t.Errorf("with the lock: %+v, errors %v, %d distinct tokens", st, errs, len(tokens))
	}
	st, errs, _ = run(true)
	if st.Rejected == 0 || len(errs) == 0 || !errors.Is(errs[0], login.ErrRefreshSpent) {
		t.Errorf("control without the lock: %+v, errors %v; want refused refreshes", st, errs)
	}
	for _, err := range errs {
		if strings.Contains(err.Error(), oauthtest.Marker) {
			t.Errorf("an error shows a token: %v", err)
		}
	}
}

// TestRotationSavedAndInvalidate: a refresh saves the rotated refresh token for every later
// user; Invalidate with a token already replaced reuses the new one, with the current one it
// refreshes.
func TestRotationSavedAndInvalidate(t *testing.T) {
	home := t.TempDir()
	srv := oauthtest.Start(time.Hour)
	defer srv.Close()
	file := seed(t, home, srv, "claude")
	_, firstRT := srv.Seed()
	ctx := context.Background()
	a := login.NewSource(file, login.Options{})
	t1, err := a.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := login.Load(home, "claude"); r.RefreshToken == firstRT || r.AccessToken != t1 || r.ExpiresAt.Before(time.Now().Add(50*time.Minute)) {
		t.Errorf("the rotated tokens were not saved: %+v", r)
	}
	b := login.NewSource(file, login.Options{})
	if t2, err := b.Token(ctx); err != nil || t2 != t1 || srv.Stats().Refreshes != 1 {
		t.Errorf("a second user refreshed again: %v, %+v", err, srv.Stats())
	}
	if t3, err := b.Invalidate(ctx, "an-older-token"); err != nil || t3 != t1 || srv.Stats().Refreshes != 1 {
		t.Errorf("Invalidate of a replaced token refreshed: %v %+v", err, srv.Stats())
	}
	if t4, err := b.Invalidate(ctx, t1); err != nil || t4 == t1 || srv.Stats().Refreshes != 2 || srv.Stats().Rejected != 0 {
		t.Errorf("Invalidate of the current token: %v %+v", err, srv.Stats())
	}
}

// TestLongLivedToken: a token login is handed out as it is and never refreshed.
func TestLongLivedToken(t *testing.T) {
	home := t.TempDir()
	if err := login.Save(home, "claude", login.Record{Agent: "claude", Kind: login.KindToken, AccessToken: "sk-ant-oat01-x"}); err != nil {
		t.Fatal(err)
	}
	s := login.NewSource(login.Path(home, "claude"), login.Options{})
	if tok, err := s.Token(context.Background()); err != nil || tok != "sk-ant-oat01-x" {
		t.Errorf("Token: %q %v", tok, err)
	}
	if _, err := s.Invalidate(context.Background(), "sk-ant-oat01-x"); err == nil || strings.Contains(err.Error(), "sk-ant") {
		t.Errorf("Invalidate of a long-lived token: %v", err)
	}
}

// TestRefreshAcrossProcesses: three processes (this test binary again) use one expired login at
// once; the flock makes it one refresh. Control: the same without the lock is refused.
func TestRefreshAcrossProcesses(t *testing.T) {
	for _, nolock := range []bool{false, true} {
		home := t.TempDir()
		srv := oauthtest.Start(time.Hour)
		srv.Delay = 300 * time.Millisecond
		file := seed(t, home, srv, "claude")
		var cmds []*exec.Cmd
		at := time.Now().Add(500 * time.Millisecond).UnixNano()
		for range 3 {
			c := exec.Command(os.Args[0], "-test.run=^$")
			c.Env = append(os.Environ(), "LOGIN_CHILD_FILE="+file, fmt.Sprintf("LOGIN_CHILD_AT=%d", at), fmt.Sprintf("LOGIN_CHILD_NOLOCK=%v", nolock))
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			cmds = append(cmds, c)
		}
		failed := 0
		for _, c := range cmds {
			if c.Wait() != nil {
				failed++
			}
		}
		st := srv.Stats()
		srv.Close()
		switch {
		case !nolock && (st.Refreshes != 1 || st.Rejected != 0 || failed != 0):
			t.Errorf("three processes with the lock: %+v, %d failed", st, failed)
		case nolock && (st.Rejected == 0 || failed == 0):
			t.Errorf("control, three processes without the lock: %+v, %d failed; want refused refreshes", st, failed)
		}
	}
}

// TestMain runs the child of TestRefreshAcrossProcesses when this binary is started as one.
func TestMain(m *testing.M) {
	if file := os.Getenv("LOGIN_CHILD_FILE"); file != "" {
		os.Exit(childToken(file))
	}
	os.Exit(m.Run())
}

// childToken waits for the agreed moment, takes the login's token once and exits 0 on success.
func childToken(file string) int {
	var at int64
	fmt.Sscan(os.Getenv("LOGIN_CHILD_AT"), &at)
	time.Sleep(time.Until(time.Unix(0, at)))
	s := login.NewSource(file, login.Options{})
	if os.Getenv("LOGIN_CHILD_NOLOCK") == "true" {
		s.WithoutLock()
	}
	if _, err := s.Token(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestClaudeInputs: the token is found in setup-token's whole output; text with none or two is
// refused; Claude Code's credentials file becomes a refreshable login with its expiry.
func TestClaudeInputs(t *testing.T) {
	r, err := login.ClaudeToken("Your token:\n\n  sk-ant-oat01-abc  \n\nStore it.")
	if err != nil || r.AccessToken != "sk-ant-oat01-abc" || r.Kind != login.KindToken {
		t.Errorf("ClaudeToken: %+v %v", r, err)
	}
	for _, bad := range []string{"", "hello", "sk-ant-a sk-ant-b"} {
		if _, err := login.ClaudeToken(bad); !errors.Is(err, login.ErrBadRecord) {
			t.Errorf("ClaudeToken(%q): %v", bad, err)
		}
	}
	r, err = login.ImportClaude([]byte(`{"claudeAiOauth":{"accessToken":"a","refreshToken":"r","expiresAt":1999999999000}}`))
	if err != nil || r.Kind != login.KindOAuth || r.TokenURL != login.ClaudeTokenURL || r.ExpiresAt.Year() != 2033 {
		t.Errorf("ImportClaude: %+v %v", r, err)
	}
	if _, err := login.ImportClaude([]byte(`{"claudeAiOauth":{"accessToken":"a"}}`)); !errors.Is(err, login.ErrBadRecord) {
		t.Errorf("ImportClaude without a refresh token: %v", err)
	}
}
