package diff

// The light tier in the review: for a changed script the host would run directly, the text
// output suggests trying it under 'git corral sandbox' (no VM) before running it on the host.
// Rules:
//   - a hint is text only; nothing is run;
//   - it is given only for a file that is itself the program or script: a git or hook-manager
//     hook, .envrc, configure or autogen.sh, a package.json's scripts, a new executable, a
//     *.sh, *.bash, *.py or *.js file; never for a makefile (its targets are not files to name)
//     or a configuration another tool reads, and never for a deletion;
//   - the path is one single-quoted shell word (internal/shellquote); a path holding a line
//     break gets no hint.

import (
	"path"
	"strings"

	"github.com/git-corral/git-corral/internal/shellquote"
)

// SandboxManifestNote says what the FILE of every hint must grant.
const SandboxManifestNote = "FILE is a sandbox manifest granting this checkout read-only (fs.read) and the interpreter (exec.allow); 'git corral sandbox -h' lists its keys"

// hookDirs hold scripts git or a hook manager runs as hooks.
var hookDirs = []string{".git/hooks/", ".husky/", ".githooks/", ".lefthook/"}

// interpreters run a script by its extension.
var interpreters = map[string]string{".sh": "sh", ".bash": "bash", ".py": "python3", ".js": "node", ".cjs": "node", ".mjs": "node"}

// SandboxHint returns the command that tries f's file in the light tier, or "".
func SandboxHint(f Finding) string {
	if f.Status != "added" && f.Status != "modified" && f.Status != "modeChanged" {
		return ""
	}
	q, err := shellquote.Line("./" + f.Path)
	if err != nil {
		return ""
	}
	run := "git corral sandbox --manifest FILE -- "
	lower := strings.ToLower(f.Path)
	base := path.Base(lower)
	switch {
	case base == "package.json":
		if dir := path.Dir(f.Path); dir != "." {
			d, err := shellquote.Line("./" + dir)
			if err != nil {
				return ""
			}
			return run + "npm --prefix " + d + " run SCRIPT"
		}
		return run + "npm run SCRIPT"
	case base == ".envrc":
		return run + "bash " + q
	case base == "configure" || base == "autogen.sh":
		return run + "sh " + q
	case f.Group == "make":
		return ""
	case underHookDir(lower):
		return run + "sh " + q
	case interpreters[path.Ext(base)] != "":
		return run + interpreters[path.Ext(base)] + " " + q
	case f.Group == "filesystem" && (f.Reason == reasonNewExec || f.Reason == reasonExecBit):
		return run + q
	}
	return ""
}

// Reasons of the filesystem findings that make a file a program.
const (
	reasonNewExec = "a new executable file"
	reasonExecBit = "the execute bit was set"
)

// underHookDir reports whether the lower-cased path lies in a hook directory (at the top level
// for .git/hooks, at any depth for the hook managers' directories).
func underHookDir(p string) bool {
	for _, d := range hookDirs {
		if strings.HasPrefix(p, d) || (d != ".git/hooks/" && strings.Contains(p, "/"+d)) {
			return true
		}
	}
	return false
}
