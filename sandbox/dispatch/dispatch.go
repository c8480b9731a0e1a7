// Package dispatch decides, from git corral's command line alone, whether the front that make
// install puts on PATH as git-corral (cmd/git-corral-front) runs `git corral sandbox` itself,
// and where git corral's other binaries are installed beside it.
//
// It owns the one rule for both: which argv shapes the front takes (Takes) and where a binary
// lies beside git-corral (Beside). It does not own the command itself (package front) nor the
// exec of the full binary (cmd/git-corral-front).
//
// Rules:
//   - The front takes only a run: global -C flags, "sandbox", the flags --manifest and
//     --no-landlock, and a command. Everything else (help, --box, --stage, an unknown or
//     misspelt flag, no command) goes to the full binary, which answers it as it always has,
//     so the front never has to reproduce a usage error or a help page.
//   - It imports nothing but syscall, so that the front links nothing for it.
package dispatch

import "syscall"

// FullName is the full git corral binary (cmd/git-corral): PREFIX/lib/git-corral/FullName
// after make install, bin/FullName in a build tree. The front on PATH execs it for every
// command line it does not take.
const FullName = "git-corral-full"

// Takes reports whether args (git corral's arguments, without the program name) are a
// sandbox run the front takes: any number of -C DIR or -CDIR, then "sandbox", then only
// --manifest FILE, --manifest=FILE and --no-landlock, then (after an optional "--") at least
// one word of a command.
func Takes(args []string) bool {
	i := 0
	for i < len(args) && hasPrefix(args[i], "-C") {
		if args[i] == "-C" {
			if i+1 >= len(args) {
				return false
			}
			i++
		}
		i++
	}
	if i >= len(args) || args[i] != "sandbox" {
		return false
	}
	for i++; i < len(args); {
		switch a := args[i]; {
		case a == "--":
			return i+1 < len(args)
		case a == "--no-landlock", hasPrefix(a, "--manifest="):
			i++
		case a == "--manifest" && i+1 < len(args):
			i += 2
		case hasPrefix(a, "-"):
			return false
		default:
			return true
		}
	}
	return false
}

// Stage returns the step named by 'sandbox --stage NAME' (the inside steps, when the inside
// helper is not installed), and whether args are that.
func Stage(args []string) (string, bool) {
	if len(args) == 3 && args[0] == "sandbox" && args[1] == "--stage" {
		return args[2], true
	}
	return "", false
}

// Beside returns the helper called name installed for the git-corral binary self (an absolute
// path): ../lib/git-corral/NAME (make install) or NAME in self's directory (a build tree's
// bin/), whichever is first a regular executable file; "" when neither is.
func Beside(self, name string) string {
	dir := parent(self)
	for _, p := range []string{parent(dir) + "/lib/git-corral/" + name, dir + "/" + name} {
		var st syscall.Stat_t
		if syscall.Stat(p, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFREG && st.Mode&0o111 != 0 {
			return p
		}
	}
	return ""
}

// parent is the directory of the absolute path p, without its trailing slash ("" for "/").
func parent(p string) string {
	for len(p) > 1 && p[len(p)-1] == '/' {
		p = p[:len(p)-1]
	}
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return "."
}

func hasPrefix(s, prefix string) bool {
	return len(s) >= len(prefix) && s[:len(prefix)] == prefix
}
