package provision

// This file reads a repository's provision scripts for review. Rules:
//   - A script path is repository-relative and clean; no component may be a symlink; the file
//     must be regular, at most MaxScriptSize bytes, and not a binary (NUL bytes, ELF magic).
//     Anything else is a problem that blocks approval.
//   - Files a script sources (". ./x", "source x", also after ";", "&&", "||", "then", "do")
//     are read under the same rules, recursively, relative to the top level (scripts run with
//     the project directory as their working directory). A sourced path the review cannot
//     resolve (variables, command substitution) or that lies outside the repository is flagged:
//     its content is not covered by the hash.
//   - The content hash covers the script, every sourced file (path and bytes, or "missing")
//     and who the script runs as, so a change to any of them re-prompts.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
)

// MaxScriptSize is the largest provision script or sourced file review accepts.
const MaxScriptSize = 256 << 10

// maxSourceDepth bounds how deep sourced files are followed.
const maxSourceDepth = 8

// SystemMarker is the line that asks for a script to run as root (network mode full only).
const SystemMarker = "# corral: system"

// readRepoFile reads rel under top under the rules above; a non-nil problem explains a refusal.
func readRepoFile(ctx context.Context, top, rel string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkLine("path", rel); err != nil {
		return nil, err
	}
	if rel == "" || filepath.IsAbs(rel) || filepath.Clean(rel) != filepath.FromSlash(rel) || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil, fmt.Errorf("path %q is not a clean path inside the repository", rel)
	}
	cur := top
	for _, part := range strings.Split(rel, "/") {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", rel, err)
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return nil, fmt.Errorf("%s is or passes through a symlink", rel)
		}
	}
	f, err := os.OpenFile(cur, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", rel, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", rel, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", rel)
	}
	if fi.Size() > MaxScriptSize {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d a provision script may have", rel, fi.Size(), MaxScriptSize)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxScriptSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", rel, err)
	}
	if len(b) > MaxScriptSize {
		return nil, fmt.Errorf("%s grew past %d bytes while being read", rel, MaxScriptSize)
	}
	if bytes.IndexByte(b, 0) >= 0 || bytes.HasPrefix(b, []byte("\x7fELF")) {
		return nil, fmt.Errorf("%s is a binary file, not a script", rel)
	}
	return b, nil
}

var sourceRE = regexp.MustCompile(`(?:^|[;&|]|\bthen|\bdo|\belse)\s*(?:\.|source)\s+("[^"]*"|'[^']*'|[^\s;&|)]+)`)

// sourcedPaths returns the operands of every ". x" and "source x" in script, unquoted.
func sourcedPaths(script []byte) []string {
	var out []string
	for _, line := range strings.Split(string(script), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		for _, m := range sourceRE.FindAllStringSubmatch(line, -1) {
			out = append(out, strings.Trim(m[1], `"'`))
		}
	}
	return out
}

// scanned is one script with what it pulls in.
type scanned struct {
	body     []byte
	sources  []Source
	contents map[string][]byte
	flags    []string
	problems []string
}

// scanScript reads a script and, recursively, what it sources.
func scanScript(ctx context.Context, top, rel string) scanned {
	s := scanned{contents: map[string][]byte{}}
	body, err := readRepoFile(ctx, top, rel)
	if err != nil {
		s.problems = append(s.problems, err.Error())
		return s
	}
	s.body = body
	seen := map[string]bool{rel: true}
	s.follow(ctx, top, rel, body, seen, 0)
	return s
}

func (s *scanned) follow(ctx context.Context, top, from string, body []byte, seen map[string]bool, depth int) {
	for _, p := range sourcedPaths(body) {
		switch {
		case strings.ContainsAny(p, "$`*?[~"):
			s.flags = append(s.flags, fmt.Sprintf("%s sources %q, which review cannot resolve: its content is not covered by the approval", from, p))
			continue
		case filepath.IsAbs(p):
			s.flags = append(s.flags, fmt.Sprintf("%s sources %q, outside the repository: its content is not covered by the approval", from, p))
			continue
		}
		rel := filepath.ToSlash(filepath.Clean(p))
		if seen[rel] {
			continue
		}
		seen[rel] = true
		if depth >= maxSourceDepth {
			s.problems = append(s.problems, fmt.Sprintf("%s: sourced files nest deeper than %d", from, maxSourceDepth))
			return
		}
		b, err := readRepoFile(ctx, top, rel)
		switch {
		case errors.Is(err, os.ErrNotExist):
			s.sources = append(s.sources, Source{Path: rel, SHA256: "missing"})
			continue
		case err != nil:
			s.problems = append(s.problems, fmt.Sprintf("%s sources %s", from, err))
			continue
		}
		s.sources = append(s.sources, Source{Path: rel, SHA256: hexSum(b)})
		s.contents[rel] = b
		s.follow(ctx, top, rel, b, seen, depth+1)
	}
}

// contentHash is the approval hash: who the script runs as, the script, and every sourced file.
func contentHash(rel string, runsAs string, body []byte, sources []Source, contents map[string][]byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "corral-provision-v1\x00%s\x00%s\x00%d\x00", runsAs, rel, len(body))
	h.Write(body)
	for _, src := range sources {
		b := contents[src.Path]
		fmt.Fprintf(h, "\x00%s\x00%s\x00%d\x00", src.Path, src.SHA256, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func hexSum(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// hasSystemMarker reports whether a line of the script is exactly the system marker.
func hasSystemMarker(body []byte) bool {
	for _, line := range strings.Split(string(body), "\n") {
		if strings.TrimSpace(line) == SystemMarker {
			return true
		}
	}
	return false
}
