package vm

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/provision"
)

// fakeGuest answers the guard check as a guest would (the SSH boundary).
type fakeGuest struct {
	out  string
	code int
	err  error
	argv []string
}

func (f *fakeGuest) Output(_ context.Context, argv []string) ([]byte, int, error) {
	f.argv = argv
	return []byte(f.out), f.code, f.err
}

func TestCheckGuards(t *testing.T) {
	some := provision.Bundle{Scripts: []provision.Script{{Name: "10-lockdown.sh", Mode: provision.ModeSystem, Body: "#!/bin/sh\n"}}}
	missing := fakeGuest{out: "", code: 1}
	for _, tc := range []struct {
		name    string
		guest   fakeGuest
		network policy.Network
		bundle  provision.Bundle
		wantErr string // "" means allowed
		absent  bool
	}{
		{"all hold", fakeGuest{out: `{"ok":true,"mode":"broker","failures":[]}`}, policy.NetworkBroker, some, "", false},
		{"one fails", fakeGuest{out: `{"ok":false,"mode":"broker","failures":["nftables ruleset differs"]}`, code: 1}, policy.NetworkBroker, some, "nftables ruleset differs", false},
		{"ok but failures listed", fakeGuest{out: `{"ok":true,"failures":["shadow not mounted"]}`}, policy.NetworkFull, some, "shadow not mounted", false},
		{"ok json but nonzero exit", fakeGuest{out: `{"ok":true,"failures":[]}`, code: 3}, policy.NetworkFull, some, "exited 3", false},
		{"missing in offline", missing, policy.NetworkOffline, provision.Bundle{}, "missing or unreadable", false},
		{"missing in broker", missing, policy.NetworkBroker, provision.Bundle{}, "broker-mode guards", false},
		{"missing in full with scripts", missing, policy.NetworkFull, some, "missing or unreadable", false},
		{"garbage output", fakeGuest{out: "sudo: a password is required", code: 1}, policy.NetworkBroker, some, "missing or unreadable", false},
		{"missing in full, nothing rendered", missing, policy.NetworkFull, provision.Bundle{}, "", true},
		{"ssh fails", fakeGuest{err: errors.New("connection refused")}, policy.NetworkFull, provision.Bundle{}, "connection refused", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := tc.guest
			got, err := CheckGuards(context.Background(), &g, tc.network, tc.bundle)
			if strings.Join(g.argv, " ") != strings.Join(provision.GuardCheckArgv(), " ") {
				t.Errorf("ran %q, want the guard check", g.argv)
			}
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
			} else if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want one naming %q", err, tc.wantErr)
			}
			if got.Absent != tc.absent {
				t.Errorf("Absent = %v, want %v", got.Absent, tc.absent)
			}
		})
	}
}
