package gitshadow

// Finding the line a config value was set on, so a report can say "core.fsmonitor in
// ~/.gitconfig:3": git config --show-origin names the file but not the line. The file is read
// as data; the nth value of a key in git's listing (or go-git's parse) is the nth line that
// sets that key. A line that cannot be found is left out of the origin, never guessed.

import "strings"

// keyLines maps each key set in a config file (section and name lower-case, subsection as
// written, as git config --list spells it) to the 1-based lines that set it, in order.
func keyLines(data string) map[string][]int {
	out := map[string][]int{}
	section := ""
	lines := strings.Split(data, "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimLeft(lines[i], " \t")
		if strings.HasPrefix(line, "[") {
			end := headerEnd(line)
			if end < 0 {
				continue
			}
			section = headerKey(line[1:end])
			line = strings.TrimLeft(line[end+1:], " \t") // [core] fsmonitor = x on one line
		}
		name := keyName(line)
		if name == "" || section == "" {
			continue
		}
		key := section + "." + strings.ToLower(name)
		out[key] = append(out[key], i+1)
		for continued(lines[i]) && i+1 < len(lines) {
			i++
		}
	}
	return out
}

// headerEnd returns the index of the "]" closing a section header, skipping a quoted
// subsection, or -1.
func headerEnd(line string) int {
	quoted := false
	for i := 1; i < len(line); i++ {
		switch {
		case line[i] == '\\' && quoted:
			i++
		case line[i] == '"':
			quoted = !quoted
		case line[i] == ']' && !quoted:
			return i
		}
	}
	return -1
}

// headerKey turns the inside of a header into the key prefix: `section "Sub"` keeps the
// subsection as written; the old `section.sub` form is lower-cased, as git does.
func headerKey(h string) string {
	h = strings.TrimSpace(h)
	name, sub, ok := strings.Cut(h, " ")
	if !ok {
		return strings.ToLower(h)
	}
	sub = strings.TrimSpace(sub)
	sub = strings.TrimSuffix(strings.TrimPrefix(sub, `"`), `"`)
	sub = strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(sub)
	return strings.ToLower(name) + "." + sub
}

// keyName returns the variable name a line starts with, or "" for a blank or comment line.
func keyName(line string) string {
	n := 0
	for n < len(line) && (line[n] == '-' || line[n] >= 'a' && line[n] <= 'z' || line[n] >= 'A' && line[n] <= 'Z' || n > 0 && line[n] >= '0' && line[n] <= '9') {
		n++
	}
	if n == 0 {
		return ""
	}
	rest := strings.TrimLeft(line[n:], " \t")
	if rest != "" && rest[0] != '=' && rest[0] != '#' && rest[0] != ';' && rest[0] != '\r' {
		return ""
	}
	return line[:n]
}

// continued reports whether a value line ends in a backslash that continues it on the next
// line (outside a comment; an escaped backslash does not count).
func continued(line string) bool {
	line = strings.TrimRight(line, "\r")
	quoted := false
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == '\\':
			if i == len(line)-1 {
				return true
			}
			i++
		case c == '"':
			quoted = !quoted
		case (c == '#' || c == ';') && !quoted:
			return false
		}
	}
	return false
}
