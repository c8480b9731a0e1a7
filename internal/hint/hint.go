// Package hint attaches an age-style hint to an error: the next thing the user can do about it.
// Any package may attach one; cmd/git-corral prints it after the error as "corral: hint: …".
// It owns no exit codes (main does) and prints nothing.
package hint

import "errors"

// Error is an error with a hint.
type Error struct {
	Err  error
	Hint string
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// With attaches hint to err. A nil err stays nil, so that "return hint.With(f(), …)" reads
// naturally.
func With(err error, hint string) error {
	if err == nil {
		return nil
	}
	return &Error{Err: err, Hint: hint}
}

// Of returns the outermost hint attached to err, or "".
func Of(err error) string {
	var h *Error
	if errors.As(err, &h) {
		return h.Hint
	}
	return ""
}
