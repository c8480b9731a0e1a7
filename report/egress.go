package report

// The broker's egress log ($CORRAL_HOME/logs/egress-<box>.jsonl, written by broker.Log on the
// host). Rules:
//   - Read through broker.ScanLog, as broker.ReadLog reads it (the rotated generation first; lines that are not one
//     entry are counted, never fatal), but each line is also kept as its members, so that
//     fields this version does not know — a newer broker's — reach the record in Extra rather
//     than being dropped.
//   - A git-push decision is any entry with a "ref" or "refs" member: the pushes section takes
//     them generically, allowed and refused, with every member, so a broker that logs pushes
//     per ref lands there without a change here.
//   - Entries are taken from the window by their time; every refusal is kept in full.

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/git-corral/git-corral/broker"
	"github.com/git-corral/git-corral/internal/visible"
)

// pushKeys are the members that make an egress entry a git-push decision.
var pushKeys = []string{"ref", "refs"}

// knownKeys are broker.Entry's JSON member names.
var knownKeys = func() map[string]bool {
	m := map[string]bool{}
	t := reflect.TypeOf(broker.Entry{})
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		m[name] = true
	}
	return m
}()

// readEgress reads the log at path (and path.1).
func readEgress(path string) (entries []EgressEntry, bad int, err error) {
	bad, err = broker.ScanLog(path, func(line []byte) bool {
		e, ok := parseEgress(line)
		if ok {
			entries = append(entries, e)
		}
		return ok
	})
	if err != nil {
		return nil, 0, err
	}
	return entries, bad, nil
}

func parseEgress(line []byte) (EgressEntry, bool) {
	var e EgressEntry
	var members map[string]json.RawMessage
	if json.Unmarshal(line, &e.Entry) != nil || e.Decision == "" || json.Unmarshal(line, &members) != nil {
		return e, false
	}
	for _, k := range pushKeys {
		if _, ok := members[k]; ok {
			e.push = true
		}
	}
	for k, v := range members {
		if !knownKeys[k] {
			if e.Extra == nil {
				e.Extra = map[string]json.RawMessage{}
			}
			e.Extra[visible.String(k)] = v
		}
	}
	e.Host, e.Addr, e.Reason, e.Rule, e.Path = visible.String(e.Host), visible.String(e.Addr), visible.String(e.Reason), visible.String(e.Rule), visible.String(e.Path)
	return e, true
}

// egressSection summarises the entries in w.
func egressSection(path string, entries []EgressEntry, bad int, w Window) (Egress, Pushes) {
	eg := Egress{Log: path, BadLines: bad, Counts: map[string]int{}, Destinations: []Destination{}, Refusals: []EgressEntry{}}
	pu := Pushes{Counts: map[string]int{}, Entries: []EgressEntry{}}
	idx := map[Destination]int{}
	for _, e := range entries {
		if !inWindow(e.Time, w) {
			continue
		}
		eg.Counts[e.Decision]++
		idx[Destination{Host: e.Host, Port: e.Port, Decision: e.Decision}]++
		if e.Decision != broker.Allow {
			eg.Refusals = append(eg.Refusals, e)
		}
		if e.push {
			pu.Counts[e.Decision]++
			pu.Entries = append(pu.Entries, e)
		}
	}
	for d, n := range idx {
		d.Count = n
		eg.Destinations = append(eg.Destinations, d)
	}
	sort.Slice(eg.Destinations, func(i, j int) bool {
		a, b := eg.Destinations[i], eg.Destinations[j]
		if a.Decision != b.Decision {
			return a.Decision == broker.Deny
		}
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return a.Host < b.Host || a.Host == b.Host && a.Port < b.Port
	})
	return eg, pu
}

func inWindow(t time.Time, w Window) bool {
	return !t.Before(w.Start) && !t.After(w.End)
}
