package diff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	"gopkg.in/yaml.v3"
)

// lifecycle names the package.json scripts a package manager runs by itself, and when.
var lifecycle = map[string]string{
	"preinstall": "npm install", "install": "npm install", "postinstall": "npm install",
	"prepare": "npm install and git dependencies", "preprepare": "npm install", "postprepare": "npm install",
	"prepublish": "npm install (legacy)", "prepack": "npm pack/publish and git dependencies",
	"postpack": "npm pack/publish", "prepublishOnly": "npm publish", "preuninstall": "npm uninstall",
	"uninstall": "npm uninstall", "postuninstall": "npm uninstall", "dependencies": "any change to node_modules",
	"prestart": "npm start", "pretest": "npm test", "preversion": "npm version",
}

// packageJSONDiff lists the changed scripts of a package.json one per line, then the other
// changed top-level keys (one level deep). It returns nil when either side is not a JSON object,
// so the caller falls back to the line diff.
func packageJSONDiff(old, cur []byte, added bool) []string {
	var o, n map[string]json.RawMessage
	if err := json.Unmarshal(cur, &n); err != nil {
		return nil
	}
	if !added {
		if err := json.Unmarshal(old, &o); err != nil {
			return nil
		}
	}
	var os, ns map[string]string
	_ = json.Unmarshal(o["scripts"], &os)
	if err := json.Unmarshal(n["scripts"], &ns); err != nil && n["scripts"] != nil {
		return nil
	}
	var out []string
	for _, k := range unionKeys(os, ns) {
		ov, oh := os[k]
		nv, nh := ns[k]
		when := ""
		if w, ok := lifecycle[k]; ok {
			when = " [runs on " + w + "]"
		}
		switch {
		case !oh:
			out = append(out, fmt.Sprintf("scripts.%s added%s: %s", k, when, nv))
		case !nh:
			out = append(out, fmt.Sprintf("scripts.%s removed%s (was: %s)", k, when, ov))
		case ov != nv:
			out = append(out, fmt.Sprintf("scripts.%s changed%s:", k, when), "-  "+ov, "+  "+nv)
		}
	}
	delete(o, "scripts")
	delete(n, "scripts")
	return append(out, rawMapDiff("", o, n)...)
}

// rawMapDiff compares two JSON objects key by key, descending one level into objects.
func rawMapDiff(prefix string, o, n map[string]json.RawMessage) []string {
	var out []string
	for _, k := range unionKeys(o, n) {
		ov, nv := o[k], n[k]
		if bytes.Equal(compact(ov), compact(nv)) {
			continue
		}
		var om, nm map[string]json.RawMessage
		if prefix == "" && json.Unmarshal(ov, &om) == nil && json.Unmarshal(nv, &nm) == nil && om != nil && nm != nil {
			out = append(out, rawMapDiff(k+".", om, nm)...)
			continue
		}
		out = append(out, fmt.Sprintf("%s%s: %s → %s", prefix, k, short(ov), short(nv)))
	}
	return out
}

func compact(b json.RawMessage) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}

func short(b json.RawMessage) string {
	if b == nil {
		return "(none)"
	}
	s := string(compact(b))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

func unionKeys[V any](a, b map[string]V) []string {
	seen := map[string]bool{}
	var keys []string
	for _, m := range []map[string]V{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	return keys
}

// preCommitConfig is the part of .pre-commit-config.yaml that decides what runs.
type preCommitConfig struct {
	Repos []struct {
		Repo  string           `yaml:"repo"`
		Rev   string           `yaml:"rev"`
		Hooks []map[string]any `yaml:"hooks"`
	} `yaml:"repos"`
}

// preCommitDiff lists hooks added, removed or changed (keyed by repo and id) and changed repo
// revisions. It returns nil when either side does not parse.
func preCommitDiff(old, cur []byte) []string {
	hooks := func(b []byte) (map[string]string, map[string]string, bool) {
		var c preCommitConfig
		if len(b) > 0 {
			if err := yaml.Unmarshal(b, &c); err != nil {
				return nil, nil, false
			}
		}
		hs, revs := map[string]string{}, map[string]string{}
		for _, r := range c.Repos {
			revs[r.Repo] = r.Rev
			for _, h := range r.Hooks {
				j, _ := json.Marshal(h)
				hs[fmt.Sprintf("%s (repo %s)", h["id"], r.Repo)] = string(j)
			}
		}
		return hs, revs, true
	}
	oh, orv, ok1 := hooks(old)
	nh, nrv, ok2 := hooks(cur)
	if !ok1 || !ok2 {
		return nil
	}
	var out []string
	for _, k := range unionKeys(orv, nrv) {
		if orv[k] != nrv[k] {
			out = append(out, fmt.Sprintf("repo %s rev: %q → %q", k, orv[k], nrv[k]))
		}
	}
	for _, k := range unionKeys(oh, nh) {
		switch o, n := oh[k], nh[k]; {
		case o == "":
			out = append(out, "hook "+k+" added: "+n)
		case n == "":
			out = append(out, "hook "+k+" removed")
		case o != n:
			out = append(out, "hook "+k+" changed:", "-  "+o, "+  "+n)
		}
	}
	out = append(out, topLevelYAMLDiff(old, cur, "repos")...)
	if out == nil {
		return nil // formatting only: the line diff says what moved
	}
	return out
}

// topLevelYAMLDiff lists changed top-level keys other than skip (default_install_hook_types,
// default_stages and the like decide which hooks git runs).
func topLevelYAMLDiff(old, cur []byte, skip string) []string {
	var o, n map[string]any
	_ = yaml.Unmarshal(old, &o)
	_ = yaml.Unmarshal(cur, &n)
	var out []string
	for _, k := range unionKeys(o, n) {
		if k == skip {
			continue
		}
		oj, _ := json.Marshal(o[k])
		nj, _ := json.Marshal(n[k])
		if !bytes.Equal(oj, nj) {
			out = append(out, fmt.Sprintf("%s: %s → %s", k, oj, nj))
		}
	}
	return out
}
