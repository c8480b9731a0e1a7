package provision

// This file reads a repository's provision scripts for review. Rules:
//   - A script path is repository-relative and clean; no component may be a symlink; the file
//     must be regular, at most MaxScriptSize bytes, and not a binary (NUL bytes, ELF magic).
//     Anything else is a problem that blocks approval.
//   - Every repository file a script pulls in (deps.go: sourced, run by a shell or by path,
//     evaluated, fed to a shell, handed to an interpreter or make) is read under the same
//     rules, recursively, relative to the working directory the script has there (the top of
//     the repository at its start, followed through "cd"). Where that cannot be determined
//     (a path built at run time, an interpreter or make that may load files beside the one
//     named), every file of the directory concerned is part of the approval (scandir.go), and
//     review says why. A path outside the repository is flagged: its content is not covered.
//     Code read from the live project (an absolute path into it, $CORRAL_PROJECT_DIR) is
//     refused: the approved copy cannot stand in for it.
//   - The content hash covers the script, every file pulled in (path and bytes, or
//     "missing"), the directories approved whole and who the script runs as, so a change to
//     any of them, or a file added to such a directory, re-prompts.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"mvdan.cc/sh/v3/syntax"
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

// scanned is one script with what it pulls in.
type scanned struct {
	body     []byte
	sources  []Source
	contents map[string][]byte
	dirs     []string
	flags    []string
	problems []string
	self     string
}

// scanScript reads a script and, recursively, every repository file it pulls in (deps.go),
// then every file of the directories it needs approved whole.
func scanScript(ctx context.Context, top, rel string) scanned {
	s := scanned{contents: map[string][]byte{}, self: rel}
	body, err := readRepoFile(ctx, top, rel)
	if err != nil {
		s.problems = append(s.problems, err.Error())
		return s
	}
	s.body = body
	var needs []dirNeed
	s.follow(ctx, top, rel, body, ".", depExec, map[string]bool{rel: true}, 0, &needs)
	s.approveDirs(ctx, top, needs)
	return s
}

// follow finds what one file pulls in and reads each of those files in turn.
func (s *scanned) follow(ctx context.Context, top, rel string, body []byte, cwd string, kind depKind, seen map[string]bool, depth int, needs *[]dirNeed) {
	sc := fileDeps(body, rel, top, cwd, kind)
	s.flags = append(s.flags, sc.outside...)
	s.problems = append(s.problems, sc.problems...)
	*needs = append(*needs, sc.dirs...)
	for _, d := range sc.deps {
		if seen[d.path] {
			continue
		}
		seen[d.path] = true
		if depth >= maxSourceDepth {
			s.problems = append(s.problems, fmt.Sprintf("%s: files pulled in nest deeper than %d", rel, maxSourceDepth))
			return
		}
		verb := map[depKind]string{depShell: "sources", depRead: "reads"}[d.kind]
		if verb == "" {
			verb = "runs"
		}
		b, err := readRepoFile(ctx, top, d.path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			s.sources = append(s.sources, Source{Path: d.path, SHA256: "missing"})
			continue
		case err != nil:
			s.problems = append(s.problems, fmt.Sprintf("%s %s %s", rel, verb, err))
			continue
		}
		s.sources = append(s.sources, Source{Path: d.path, SHA256: hexSum(b)})
		s.contents[d.path] = b
		s.follow(ctx, top, d.path, b, d.cwd, d.kind, seen, depth+1, needs)
	}
}

// fileDeps reads one file as its kind says: a file run by path goes by its first line (a
// shell, env -S with a command line, or another program that may load files beside it).
func fileDeps(body []byte, rel, top, cwd string, kind depKind) depScan {
	if kind == depTree {
		return depScan{}
	}
	if kind == depShell || kind == depRead {
		return scriptDeps(body, rel, top, cwd, kind == depRead)
	}
	prog, split := shebang(body)
	var out depScan
	if split != "" {
		q, err := syntax.Quote(rel, syntax.LangBash)
		if err != nil {
			out.problems = append(out.problems, fmt.Sprintf("%s: its first line cannot be read", rel))
			return out
		}
		out = scriptDeps([]byte("env "+split+" "+q), rel, top, ".", false)
		prog = splitProgram(split)
	}
	if prog != "" && !shells[prog] {
		out.dirs = append(out.dirs, dirNeed{dir: path.Dir(rel), why: fmt.Sprintf("%s runs with %s, which may load files beside it", rel, prog)})
		return out
	}
	in := scriptDeps(body, rel, top, cwd, false)
	out.deps = append(out.deps, in.deps...)
	out.dirs = append(out.dirs, in.dirs...)
	out.outside = append(out.outside, in.outside...)
	out.problems = append(out.problems, in.problems...)
	return out
}

// shebang returns the program of a "#!" first line (its base name, env's operand for
// "env PROG") and, for "env -S", the command line env would split.
func shebang(body []byte) (prog, split string) {
	first, _, _ := strings.Cut(string(body), "\n")
	rest, ok := strings.CutPrefix(first, "#!")
	if !ok {
		return "", ""
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return "", ""
	}
	prog = path.Base(f[0])
	if prog != "env" || len(f) < 2 {
		return prog, ""
	}
	if envSplit(f[1]) {
		// Linux hands env everything after the program as one argument.
		return "env", strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(rest), f[0]))
	}
	for _, w := range f[1:] {
		if !strings.HasPrefix(w, "-") && !strings.Contains(w, "=") {
			return path.Base(w), ""
		}
	}
	return "env", ""
}

// splitProgram returns the base name of the program an "env -S" string runs.
func splitProgram(split string) string {
	f := strings.Fields(split)
	if len(f) == 0 {
		return ""
	}
	if i := strings.Index(f[0], "S"); i >= 0 && i+1 < len(f[0]) && !strings.HasPrefix(f[0], "--") {
		return path.Base(f[0][i+1:])
	}
	for _, w := range f[1:] {
		if !strings.HasPrefix(w, "-") && !strings.Contains(w, "=") {
			return path.Base(w)
		}
	}
	return ""
}

// envSplit reports whether an env option word asks for -S (--split-string).
func envSplit(w string) bool {
	return strings.HasPrefix(w, "--split-string") || (strings.HasPrefix(w, "-") && !strings.HasPrefix(w, "--") && strings.Contains(w, "S"))
}

// contentHash is the approval hash: who the script runs as, the script, every file it pulls
// in, and the directories approved whole (so a file added to one re-prompts).
func contentHash(rel string, runsAs string, body []byte, sources []Source, contents map[string][]byte, dirs []string) string {
	h := sha256.New()
	fmt.Fprintf(h, "corral-provision-v1\x00%s\x00%s\x00%d\x00", runsAs, rel, len(body))
	h.Write(body)
	for _, src := range sources {
		b := contents[src.Path]
		fmt.Fprintf(h, "\x00%s\x00%s\x00%d\x00", src.Path, src.SHA256, len(b))
		h.Write(b)
	}
	for _, d := range dirs {
		fmt.Fprintf(h, "\x00dir\x00%s", d)
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
