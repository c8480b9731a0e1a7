package vm

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/provision"
)

// TestLimaWarnsNothing: Lima's validator, run in-process on every kind of template git corral
// renders (each mode, clone mode, the golden base and golden state build boxes with their seal
// scripts), warns about nothing, so a first box prints git corral's progress and nothing of
// Lima's (issue #30). The control: a provision script that names Lima's cidata variables gets
// Lima's warning back from ValidateWarnings, so an empty list is not a capture that sees nothing.
func TestLimaWarnsNothing(t *testing.T) {
	seal := func(s provision.Script) func(*TemplateOptions) {
		return func(o *TemplateOptions) { o.Bundle.Scripts = append(o.Bundle.Scripts, s) }
	}
	for _, tc := range []struct {
		name string
		edit func(*TemplateOptions)
	}{
		{"full", nil},
		{"broker", func(o *TemplateOptions) { o.Config.Network = policy.NetworkBroker }},
		{"offline", func(o *TemplateOptions) { o.Config.Network = policy.NetworkOffline }},
		{"clone", func(o *TemplateOptions) { o.NoProjectMount = true }},
		{"golden base build", seal(goldenSealScript())},
		{"golden state build", seal(stateSealScript("0123456789abcdef", "/home/dev/src/project", []string{"00"}))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := renderFor(t, HostLinux, "amd64", tc.edit)
			warns, err := ValidateWarnings(b, filepath.Join(t.TempDir(), "lima.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if len(warns) != 0 {
				t.Errorf("Lima's validator warns about the rendered template: %q", warns)
			}
		})
	}
	t.Run("control: a script naming LIMA_CIDATA is warned about", func(t *testing.T) {
		b := renderFor(t, HostLinux, "amd64", seal(provision.Script{Name: "90-x.sh", Mode: provision.ModeSystem,
			Body: "#!/bin/sh\necho \"$LIMA_CIDATA_USER\"\n"}))
		warns, err := ValidateWarnings(b, filepath.Join(t.TempDir(), "lima.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.Join(warns, "\n"), "LIMA_CIDATA") {
			t.Errorf("warnings = %q, want Lima's warning about LIMA_CIDATA", warns)
		}
	})
}
