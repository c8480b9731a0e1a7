package policy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// Snapshot is the effective configuration as a record keeps it: every setting with its origin
// (Settings), `env` values replaced by their sha256 so that no value is repeated, and the
// digest of that list. A session takes one at its start (session.preflight) and stores it by
// digest under $CORRAL_HOME/logs/policies; its start record names the digest, so that a report
// made later shows the policy the session ran under, not the one in force when it is made.
type Snapshot struct {
	// Digest is "sha256:" and the hex sha256 of Settings encoded as compact JSON (Encode).
	Digest   string    `json:"digest"`
	Settings []Setting `json:"settings"`
}

// Snapshot returns e's snapshot.
func (e *Effective) Snapshot() (Snapshot, error) {
	s := Snapshot{Settings: []Setting{}}
	for _, st := range e.Settings() {
		if strings.HasPrefix(st.Key, "env.") {
			if v, ok := st.Value.(string); ok {
				st.Value = Redact(v)
			}
		}
		s.Settings = append(s.Settings, st)
	}
	raw, err := EncodeSettings(s.Settings)
	if err != nil {
		return Snapshot{}, err
	}
	s.Digest = digestOf(raw)
	return s, nil
}

// Redact replaces a value by its sha256: a record names it, a reviewer who knows the value can
// match it, and it is not repeated.
func Redact(v string) string {
	return "redacted " + digestOf([]byte(v))
}

// EncodeSettings is the compact JSON a snapshot's digest is taken over (HTML not escaped).
func EncodeSettings(settings []Setting) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(settings); err != nil {
		return nil, fmt.Errorf("encode the configuration: %w", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// CheckSnapshot decodes a stored snapshot and checks that its settings hash to its digest and
// that the digest is want (the name it was stored and recorded under).
func CheckSnapshot(raw []byte, want string) (Snapshot, error) {
	var s Snapshot
	if err := json.Unmarshal(raw, &s); err != nil {
		return Snapshot{}, fmt.Errorf("decode policy snapshot: %w", err)
	}
	enc, err := EncodeSettings(s.Settings)
	if err != nil {
		return Snapshot{}, err
	}
	if got := digestOf(enc); got != s.Digest || got != want {
		return Snapshot{}, fmt.Errorf("policy snapshot does not hold: its settings hash to %s, it says %s, the session recorded %s", got, s.Digest, want)
	}
	return s, nil
}

func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}
