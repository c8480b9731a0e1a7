package httpheader

import (
	"testing"

	"golang.org/x/net/http/httpguts"
)

// TestSameAsHTTPGuts holds ValidName and ValidValue to httpguts' checks for every byte alone,
// every byte after a valid name or value, the empty string and some UTF-8.
func TestSameAsHTTPGuts(t *testing.T) {
	inputs := []string{"", "Authorization", "x-api-key", "Bearer ", "a b", "é", "x\u00e9", "\xff", "ok\t"}
	for b := 0; b < 256; b++ {
		inputs = append(inputs, string([]byte{byte(b)}), "X-Key"+string([]byte{byte(b)}), "Bearer"+string([]byte{byte(b)})+"x")
	}
	names, values := 0, 0
	for _, s := range inputs {
		if got, want := ValidName(s), httpguts.ValidHeaderFieldName(s); got != want {
			t.Errorf("ValidName(%q) = %v, httpguts says %v", s, got, want)
		} else if got {
			names++
		}
		if got, want := ValidValue(s), httpguts.ValidHeaderFieldValue(s); got != want {
			t.Errorf("ValidValue(%q) = %v, httpguts says %v", s, got, want)
		} else if got {
			values++
		}
	}
	// The control: both accept some inputs and refuse others, so neither is constant.
	if names == 0 || names == len(inputs) || values == 0 || values == len(inputs) {
		t.Errorf("of %d inputs, %d valid names and %d valid values: a check is constant", len(inputs), names, values)
	}
}
