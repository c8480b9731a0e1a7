package hint

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

func TestWithAndOf(t *testing.T) {
	if With(nil, "x") != nil {
		t.Fatal("With(nil) is not nil")
	}
	err := With(fs.ErrNotExist, "create it")
	if Of(err) != "create it" || !errors.Is(err, fs.ErrNotExist) || err.Error() != fs.ErrNotExist.Error() {
		t.Fatalf("With: hint %q, is %v, text %q", Of(err), errors.Is(err, fs.ErrNotExist), err)
	}
	// Wrapped further up, the hint is still found; the outermost one wins.
	wrapped := fmt.Errorf("open box: %w", err)
	if Of(wrapped) != "create it" {
		t.Fatalf("Of(wrapped) = %q", Of(wrapped))
	}
	if Of(With(wrapped, "outer")) != "outer" {
		t.Fatal("the outermost hint does not win")
	}
	if Of(errors.New("plain")) != "" {
		t.Fatal("a plain error has a hint")
	}
}
