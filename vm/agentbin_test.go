package vm

import (
	"testing"

	"github.com/git-corral/git-corral/provision"
)

// TestAgentBinMatchesProfile: the login shells' profile script (provision) names the same
// directory the store is mounted with (vm), else `git corral shell` would miss the agents.
func TestAgentBinMatchesProfile(t *testing.T) {
	if provision.AgentBinGuest != AgentBinGuest {
		t.Errorf("provision.AgentBinGuest = %q, vm.AgentBinGuest = %q", provision.AgentBinGuest, AgentBinGuest)
	}
}
