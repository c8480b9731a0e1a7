package clone

// .gitmodules rules. The host never acts on any of these values (submodules are fetched inside
// the box), but a value that could make any git act against its user refuses the fetch, the way
// git fsck refuses it, because the same file will be read by git in the box and, after a merge,
// by git on the host:
//   - Blob: at most 1 MiB, no NUL, no CR except in a CRLF line ending, parses as git config.
//   - Submodule names: no ".." component (also HFS+/NTFS aliases, '\' as separator), not
//     absolute, no leading or trailing separator, no drive letter, no leading '-', no control
//     characters, and not nested in another entry's name ("hippo" and "hippo/hooks": the git
//     dir .git/modules/hippo/hooks of one would be the hooks directory of the other's), compared
//     without case and with '\' as a separator.
//   - path: a relative path passing the tree entry rules, no leading '-'.
//   - url: https://, ssh://, scp-like user@host:path, or relative ./ ../ (resolved against the
//     superproject's remote, in the box), under the rules of gitmodules_url.go (git fsck's, and
//     stricter).
//   - update: checkout, rebase, merge or none; "!command" is refused.
//   - branch and every other value: no control characters, no leading '-'.

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	format "github.com/go-git/go-git/v5/plumbing/format/config"
)

// checkGitmodulesBlob validates one .gitmodules blob.
func (c *checker) checkGitmodulesBlob(h plumbing.Hash) {
	data, err := c.readBlob(h, maxGitmodules)
	if err != nil {
		c.refuse(Finding{Class: ClassGitmodules, Object: h.String(), Reason: err.Error()})
		return
	}
	for _, f := range GitmodulesProblems(data) {
		f.Object = h.String()
		if f.Class == ClassGitmodules && strings.HasPrefix(f.Reason, "warning: ") {
			f.Reason = strings.TrimPrefix(f.Reason, "warning: ")
			c.warn(f)
			continue
		}
		c.refuse(f)
	}
}

// GitmodulesProblems returns every problem with a .gitmodules file; a Reason starting with
// "warning: " is flagged rather than refused.
func GitmodulesProblems(data []byte) []Finding {
	var out []Finding
	add := func(key, reason string) {
		out = append(out, Finding{Class: ClassGitmodules, Path: key, Reason: reason})
	}
	if bytes.IndexByte(data, 0) >= 0 {
		add("", "contains a NUL byte")
	}
	if bytes.Count(data, []byte("\r")) != bytes.Count(data, []byte("\r\n")) {
		add("", "contains a carriage return outside a CRLF line ending")
	}
	cfg := format.New()
	if err := format.NewDecoder(bytes.NewReader(data)).Decode(cfg); err != nil {
		add("", "does not parse as git config: "+err.Error())
		return out
	}
	for _, sec := range cfg.Sections {
		if !strings.EqualFold(sec.Name, "submodule") {
			continue
		}
		for _, o := range sec.Options {
			add("submodule."+o.Key, "value outside a named submodule section")
		}
		out = append(out, nestedNames(sec.Subsections)...)
		for _, sub := range sec.Subsections {
			if why := submoduleNameProblem(sub.Name); why != "" {
				add("submodule."+sub.Name, "name "+why)
			}
			for _, o := range sub.Options {
				if why := submoduleValueProblem(strings.ToLower(o.Key), o.Value); why != "" {
					add("submodule."+sub.Name+"."+o.Key, why)
				}
			}
		}
	}
	return out
}

func submoduleNameProblem(name string) string {
	switch {
	case name == "":
		return "is empty"
	case hasControl(name):
		return "contains a control character"
	case strings.HasPrefix(name, "-"):
		return "starts with '-'"
	case strings.HasPrefix(name, "/") || strings.HasPrefix(name, `\`) || strings.HasSuffix(name, "/") || strings.HasSuffix(name, `\`):
		return "starts or ends with a path separator"
	case len(name) >= 2 && name[1] == ':':
		return "starts with a drive letter"
	}
	for _, part := range strings.FieldsFunc(name, func(r rune) bool { return r == '/' || r == '\\' }) {
		if isDotLike(part) {
			return "has a '..' component (it would place the submodule's git dir outside .git/modules)"
		}
	}
	return ""
}

func submoduleValueProblem(key, v string) string {
	if hasControl(v) {
		return fmt.Sprintf("value %q contains a control character (CR/LF smuggling)", v)
	}
	switch key {
	case "path":
		if strings.HasPrefix(v, "-") {
			return fmt.Sprintf("path %q starts with '-'", v)
		}
		if why := pathProblem(v); why != "" {
			return fmt.Sprintf("path %q: %s", v, why)
		}
	case "url":
		return submoduleURLProblem(v)
	case "update":
		switch v {
		case "checkout", "rebase", "merge", "none":
		default:
			if strings.HasPrefix(v, "!") {
				return fmt.Sprintf("update %q runs a command", v)
			}
			return fmt.Sprintf("update %q is not checkout, rebase, merge or none", v)
		}
	default:
		if strings.HasPrefix(v, "-") {
			return fmt.Sprintf("value %q starts with '-'", v)
		}
	}
	return ""
}

// nestedNames refuses every submodule name that lies inside another's as a path ("hippo" and
// "hippo/hooks"), without case and with '\' as a separator, as the git dirs under
// .git/modules/ would nest (git refuses such a pair at clone time).
func nestedNames(subs format.Subsections) []Finding {
	var out []Finding
	norm := func(n string) string { return strings.ToLower(strings.ReplaceAll(n, `\`, "/")) }
	for _, outer := range subs {
		for _, inner := range subs {
			if strings.HasPrefix(norm(inner.Name), norm(outer.Name)+"/") {
				out = append(out, Finding{Class: ClassGitmodules, Path: "submodule." + inner.Name,
					Reason: fmt.Sprintf("name is nested in submodule %q's: its git dir would lie inside .git/modules/%s", outer.Name, outer.Name)})
			}
		}
	}
	return out
}
