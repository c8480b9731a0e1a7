package casefs

import (
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// Fold returns the key two names are compared by: Unicode full case folding, then NFD.
func Fold(name string) string {
	return norm.NFD.String(cases.Fold().String(name)) // a Caser is not safe to share
}
