package vm

import (
	"context"
	"errors"
	"testing"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/policy"
)

// TestCreateSaysWhatIsMissingBeforeAsking: with no base image anywhere, creating a box fails
// with ErrNoImage before the user is asked "Create box…?" (the control: with Create off, the
// box is simply missing and nothing is asked either).
func TestCreateSaysWhatIsMissingBeforeAsking(t *testing.T) {
	t.Setenv("CORRAL_SYSTEM_IMAGES", t.TempDir())
	t.Setenv("LIMA_HOME", t.TempDir())
	m := &Manager{Home: home.Home{Dir: t.TempDir()}}
	asked := 0
	spec := BoxSpec{Box: "b-123456", ProjectDir: t.TempDir(), Config: policy.Default(), Create: true,
		Confirm: func() (bool, error) { asked++; return true, nil }}
	if err := m.create(context.Background(), spec); !errors.Is(err, ErrNoImage) {
		t.Fatalf("create without an image = %v, want ErrNoImage", err)
	}
	if asked != 0 {
		t.Errorf("the user was asked %d times before being told there is no base image", asked)
	}
	spec.Create = false
	if err := m.create(context.Background(), spec); !errors.Is(err, ErrNoBox) || asked != 0 {
		t.Errorf("create without Create = %v (asked %d), want ErrNoBox and no question", err, asked)
	}
}
