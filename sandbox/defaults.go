package sandbox

// Default limit rules: deny by default holds for resources too. A run whose manifest leaves
// limits.timeout, memory, pids or scratch unset gets DefaultLimits' value for it; a manifest
// raises (or lowers) one by setting it, up to the key's maximum (a year, 1 PiB, 2^20 pids).
// There is no value for "no limit": a larger value is the explicit raise. cpu and output have
// no default (a run within the timeout may use its CPU; output reaches the caller's own
// streams). The run's log line lists the defaults that applied (defaultLimits) and says when
// one of them ended the run (limitDefault).
//
// The defaults do not make a run take the init step (Direct reads only what the manifest
// sets): the timeout is the host's timer, memory and pids are rlimits the exec step sets (pids
// as root: the run's pids cgroup, joined by the exec step), and on the direct path the host
// itself gathers the evidence that names pids and memory (hostwatch.go).

import (
	"strconv"
	"time"
)

// DefaultLimits are the limits of a run whose manifest does not set them. A variable so that
// tests can lower them; nothing else changes it.
var DefaultLimits = Limits{Timeout: 10 * time.Minute, Memory: 8 << 30, Pids: 1024, Scratch: DefaultScratch}

// withDefaults returns l with every unset limit that has a default set to it, and the defaults
// it used.
func (l Limits) withDefaults() (eff, used Limits) {
	eff, d := l, DefaultLimits
	if l.Timeout == 0 {
		eff.Timeout, used.Timeout = d.Timeout, d.Timeout
	}
	if l.Memory == 0 {
		eff.Memory, used.Memory = d.Memory, d.Memory
	}
	if l.Pids == 0 {
		eff.Pids, used.Pids = d.Pids, d.Pids
	}
	if l.Scratch == 0 {
		eff.Scratch, used.Scratch = d.Scratch, d.Scratch
	}
	return eff, used
}

// WithDefaults returns l with every unset limit that has a default set to it: what a run of a
// manifest with limits l is held to.
func (l Limits) WithDefaults() Limits {
	eff, _ := l.withDefaults()
	return eff
}

// Unset returns l, the limits of written filled by WithDefaults and then changed (narrowed),
// with every limit that written left unset and that still holds its default unset again, so
// that the run logs it as a default and keeps the direct path.
func (l Limits) Unset(written Limits) Limits {
	_, used := written.withDefaults()
	if used.Timeout != 0 && l.Timeout == used.Timeout {
		l.Timeout = 0
	}
	if used.Memory != 0 && l.Memory == used.Memory {
		l.Memory = 0
	}
	if used.Pids != 0 && l.Pids == used.Pids {
		l.Pids = 0
	}
	if used.Scratch != 0 && l.Scratch == used.Scratch {
		l.Scratch = 0
	}
	return l
}

// isDefault reports whether the limit named name (LimitTimeout, …) ended a run at its default:
// written, the manifest's limits, leaves it unset and it has one.
func isDefault(name string, written Limits) bool {
	_, used := written.withDefaults()
	switch name {
	case LimitTimeout:
		return used.Timeout != 0
	case LimitMemory:
		return used.Memory != 0
	case LimitPids:
		return used.Pids != 0
	case LimitScratch:
		return used.Scratch != 0
	}
	return false
}

// DefaultText returns the default of the limit named name (LimitTimeout, …) as a manifest
// would write it, or "" when it has none.
func DefaultText(name string) string {
	d := DefaultLimits
	switch name {
	case LimitTimeout:
		return `"` + d.Timeout.String() + `"`
	case LimitMemory:
		return sizeText(d.Memory)
	case LimitPids:
		return strconv.Itoa(d.Pids)
	case LimitScratch:
		return sizeText(d.Scratch)
	}
	return ""
}

// sizeText writes n as the manifest's sizes are written: "8GiB", "256MiB", or bytes.
func sizeText(n int64) string {
	for _, u := range []string{"TiB", "GiB", "MiB", "KiB"} {
		if m := sizeUnits[u]; n >= m && n%m == 0 {
			return `"` + strconv.FormatInt(n/m, 10) + u + `"`
		}
	}
	return strconv.FormatInt(n, 10)
}
