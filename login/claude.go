package login

// This file reads the logins the host's own agents keep, for `git corral agents login
// --import`. Only Claude Code's is read: it is the one catalogue agent whose subscription
// credential a box can use through the broker (docs/AGENT-LOGINS.md).

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Claude Code's OAuth client and token endpoint, as its refresh uses them.
const (
	ClaudeTokenURL = "https://platform.claude.com/v1/oauth/token"
	ClaudeClientID = "9d1c250a-e61b-44d9-88ed-5944d1962f5e"
)

// ClaudeToken is the long-lived token from `claude setup-token` (KindToken) in text: its one word
// starting with "sk-ant-", so the whole output of setup-token may be pasted.
func ClaudeToken(text string) (Record, error) {
	var found []string
	for _, w := range strings.Fields(text) {
		if strings.HasPrefix(w, "sk-ant-") {
			found = append(found, w)
		}
	}
	r := Record{Agent: "claude", Kind: KindToken}
	if len(found) == 1 {
		r.AccessToken = found[0]
	}
	if len(found) != 1 {
		return r, fmt.Errorf("%w: the text does not hold exactly one token from 'claude setup-token' (sk-ant-…)", ErrBadRecord)
	}
	return r, r.Check()
}

// ImportClaude reads Claude Code's credentials file (~/.claude/.credentials.json) into a
// refreshable record. The refresh family then belongs to the store: the host's own claude must
// not keep refreshing the same login.
func ImportClaude(data []byte) (Record, error) {
	var f struct {
		OAuth *struct {
			AccessToken  string   `json:"accessToken"`
			RefreshToken string   `json:"refreshToken"`
			ExpiresAt    int64    `json:"expiresAt"`
			Scopes       []string `json:"scopes"`
		} `json:"claudeAiOauth"`
	}
	if err := json.Unmarshal(data, &f); err != nil || f.OAuth == nil {
		return Record{}, fmt.Errorf("%w: not a Claude Code credentials file (no claudeAiOauth object)", ErrBadRecord)
	}
	r := Record{Agent: "claude", Kind: KindOAuth, AccessToken: f.OAuth.AccessToken, RefreshToken: f.OAuth.RefreshToken,
		TokenURL: ClaudeTokenURL, ClientID: ClaudeClientID}
	if f.OAuth.ExpiresAt > 0 {
		r.ExpiresAt = time.UnixMilli(f.OAuth.ExpiresAt)
	}
	return r, r.Check()
}
