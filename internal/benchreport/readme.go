package benchreport

import (
	"regexp"
	"strings"
)

// timing matches a timing figure as prose writes one: a number with a unit of time (850 ms,
// 1.5 s, 20s, 3 minutes) or a ratio (1.57×, 0.2x).
var timing = regexp.MustCompile(`(?:^|[^\w.])(\d[\d,]*(?:\.\d+)?(?:\s?(?:ms|µs|us|s|sec|secs|seconds?|min|mins|minutes?|hours?)\b|\s?×|x\b))`)

// Settings are the durations README.md may name although no benchmark measured them, each
// with why: a setting or a default is not a measurement.
var Settings = map[string]string{
	"20s": "FUZZTIME's default in `make fuzz` (a setting)",
}

// TimingFigures returns every timing figure in text, in order, each as written.
func TimingFigures(text string) []string {
	var out []string
	for _, m := range timing.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	return out
}

// Unbacked returns the timing figures of readme that are neither in section nor in Settings:
// figures the README quotes from nowhere.
func Unbacked(readme, section string) []string {
	var out []string
	for _, f := range TimingFigures(readme) {
		if _, ok := Settings[f]; ok {
			continue
		}
		if !strings.Contains(section, f) {
			out = append(out, f)
		}
	}
	return out
}
