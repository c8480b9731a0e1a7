package gitshadow

// The config keys whose values make the host's git run a program or read a file, and how each
// value is read. A key matches when its section and name match (case-insensitively, as git
// compares them) and, for a pattern with a "*" in the middle, whatever its subsection. The list
// follows git-config(1) (git help -c) plus keys of tools git runs for you (git-lfs custom
// transfers); it is the input of the host-executed paths, so a key missing here is a path left
// writable to the box. When in doubt a key is in the list: naming a harmless file costs one
// read-only mount.

import "strings"

// valueKind says how git reads a config value that names something.
type valueKind int

const (
	// vShell is a shell command: git runs it with sh -c when it holds shell metacharacters, or
	// looks its first word up on PATH.
	vShell valueKind = iota + 1
	// vBoolShell is a boolean (git's own behaviour) or else a shell command (core.fsmonitor,
	// pager.<cmd>).
	vBoolShell
	// vProgram is one program, run without a shell: a path, or a name looked up on PATH.
	vProgram
	// vProgramPath is a program only when the value is a path (sendemail.smtpServer names a
	// host otherwise).
	vProgramPath
	// vHelper is a credential helper: "!cmd", an absolute command, or NAME for
	// "git credential-NAME ...".
	vHelper
	// vAlias is an alias: "!cmd" is a shell command, anything else a git subcommand.
	vAlias
	// vRemoteHelper names git-remote-<value> on PATH (remote.<name>.vcs).
	vRemoteHelper
	// vFile is a file git reads.
	vFile
	// vDir is a directory git runs programs from or copies them out of (core.hooksPath,
	// init.templateDir).
	vDir
	// vInclude is a config file git reads, relative to the file that includes it.
	vInclude
	// vSubmoduleUpdate is submodule.<name>.update: "!cmd" is a shell command.
	vSubmoduleUpdate
)

// keyPattern is one row of the table: section, subsection ("*" for any, "" for none) and name.
type keyPattern struct {
	pattern string
	kind    valueKind
}

// namingKeys is the table. A pattern "a.*.b" needs a subsection; "a.b" matches only without
// one; "a.?.b" matches with or without (credential.helper and credential.<url>.helper).
var namingKeys = []keyPattern{
	{"core.fsmonitor", vBoolShell},
	{"core.hookspath", vDir},
	{"core.pager", vShell},
	{"core.editor", vShell},
	{"core.sshcommand", vShell},
	{"core.askpass", vProgram},
	{"core.gitproxy", vShell},
	{"core.alternaterefscommand", vShell},
	{"core.excludesfile", vFile},
	{"core.attributesfile", vFile},
	{"sequence.editor", vShell},
	{"pager.*", vBoolShell},
	{"interactive.difffilter", vShell},
	{"diff.external", vShell},
	{"diff.*.command", vShell},
	{"diff.*.textconv", vShell},
	{"diff.orderfile", vFile},
	{"difftool.*.cmd", vShell},
	{"difftool.*.path", vProgram},
	{"filter.*.clean", vShell},
	{"filter.*.smudge", vShell},
	{"filter.*.process", vShell},
	{"merge.*.driver", vShell},
	{"mergetool.*.cmd", vShell},
	{"mergetool.*.path", vProgram},
	{"credential.?.helper", vHelper},
	{"alias.*", vAlias},
	{"gpg.program", vProgram},
	{"gpg.*.program", vProgram},
	{"gpg.ssh.defaultkeycommand", vShell},
	{"gpg.ssh.allowedsignersfile", vFile},
	{"gpg.ssh.revocationfile", vFile},
	{"include.path", vInclude},
	{"includeif.*.path", vInclude},
	{"init.templatedir", vDir},
	{"commit.template", vFile},
	{"mailmap.file", vFile},
	{"blame.ignorerevsfile", vFile},
	{"format.signaturefile", vFile},
	{"browser.*.cmd", vShell},
	{"browser.*.path", vProgram},
	{"man.*.cmd", vShell},
	{"man.*.path", vProgram},
	{"web.browser", vProgram},
	{"help.browser", vProgram},
	{"guitool.*.cmd", vShell},
	{"imap.tunnel", vShell},
	{"sendemail.smtpserver", vProgramPath},
	{"sendemail.sendmailcmd", vShell},
	{"sendemail.tocmd", vShell},
	{"sendemail.cccmd", vShell},
	{"sendemail.headercmd", vShell},
	{"sendemail.aliasesfile", vFile},
	{"trailer.*.command", vShell},
	{"trailer.*.cmd", vShell},
	{"hook.*.command", vShell},
	{"remote.*.uploadpack", vShell},
	{"remote.*.receivepack", vShell},
	{"remote.*.vcs", vRemoteHelper},
	{"uploadpack.packobjectshook", vShell},
	{"submodule.*.update", vSubmoduleUpdate},
	{"http.cookiefile", vFile},
	{"http.sslcainfo", vFile},
	{"http.sslcapath", vDir},
	{"http.sslcert", vFile},
	{"http.sslkey", vFile},
	{"http.*.sslcainfo", vFile},
	{"http.*.sslcert", vFile},
	{"http.*.sslkey", vFile},
	{"lfs.customtransfer.*.path", vProgram},
	{"lfs.extension.*.clean", vShell},
	{"lfs.extension.*.smudge", vShell},
}

// keyKind returns how the value of key (as git config --list spells it: section and name
// lower-case, subsection as written) names something, or 0 when it names nothing.
func keyKind(key string) valueKind {
	section, rest, ok := strings.Cut(key, ".")
	if !ok {
		return 0
	}
	sub, name := "", rest
	if i := strings.LastIndex(rest, "."); i >= 0 {
		sub, name = rest[:i], rest[i+1:]
	}
	section, name = strings.ToLower(section), strings.ToLower(name)
	for _, k := range namingKeys {
		if matchKey(k.pattern, section, sub, name) {
			return k.kind
		}
	}
	return 0
}

// matchKey matches one pattern of namingKeys. Subsections compare exactly except for
// lfs.customtransfer.* and lfs.extension.*, whose fixed first part is compared lower-case.
func matchKey(pattern, section, sub, name string) bool {
	ps, prest, _ := strings.Cut(pattern, ".")
	if ps != section {
		return false
	}
	psub, pname := "", prest
	if i := strings.LastIndex(prest, "."); i >= 0 {
		psub, pname = prest[:i], prest[i+1:]
	}
	if pname == "*" { // alias.*: any name, no subsection
		return sub == "" && name != ""
	}
	if pname != name {
		return false
	}
	switch {
	case psub == "":
		return sub == ""
	case psub == "?":
		return true
	case psub == "*":
		return sub != ""
	case strings.HasSuffix(psub, ".*"):
		head, _, ok := strings.Cut(sub, ".")
		return ok && strings.EqualFold(head, strings.TrimSuffix(psub, ".*"))
	}
	return strings.EqualFold(psub, sub)
}

// isGitBool reports whether v is one of git's boolean spellings (an empty value, a number, or
// true/false/yes/no/on/off in any case).
func isGitBool(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "true", "false", "yes", "no", "on", "off":
		return true
	}
	for _, r := range strings.TrimSpace(v) {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
