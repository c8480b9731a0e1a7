package agents

// This file writes the launchers in store/bin. Rules:
//   - a launcher finds the store from its own path, so the same file works on the host and at
//     BoxMount in the box;
//   - every value written into it is checked by shellWord first (a newline, quote or $ would
//     change the script), and that check has its own test;
//   - bin/<name>.version is a symbolic link naming the version the launcher runs, so listing
//     can say which version is current without parsing the script.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/git-corral/git-corral/internal/atomicfile"
	"github.com/git-corral/git-corral/internal/lazyre"
)

// shellWordRE is what a launcher may interpolate: names, versions and package paths.
var shellWordRE = lazyre.New(`^[A-Za-z0-9@/._+-]+$`)

// shellWord refuses a value that is not safe inside double quotes in sh.
func shellWord(what, v string) error {
	if !shellWordRE.MatchString(v) || strings.Contains(v, "..") {
		return fmt.Errorf("launcher %s %q holds characters a launcher may not contain", what, v)
	}
	return nil
}

// launcherScript is the launcher of agent at version, run with the Node runtime node if any.
func launcherScript(a Agent, version, node string, p Platform) (string, error) {
	prog := a.Name + "/" + version + "/" + a.Program(p)
	for what, v := range map[string]string{"agent": a.Name, "version": version, "program": prog, "node": node} {
		if v == "" && what == "node" {
			continue
		}
		if err := shellWord(what, v); err != nil {
			return "", err
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/sh\n# Written by git corral: runs %s %s from the read-only agent store. Do not edit.\n", a.Name, version)
	b.WriteString("store=$(CDPATH= cd -- \"$(dirname -- \"$0\")/..\" && pwd) || exit 127\n")
	if node == "" {
		fmt.Fprintf(&b, "exec \"$store/%s\" \"$@\"\n", prog)
		return b.String(), nil
	}
	fmt.Fprintf(&b, "PATH=\"$store/node/%s/bin:$PATH\"\nexport PATH\n", node)
	fmt.Fprintf(&b, "exec \"$store/node/%s/bin/node\" \"$store/%s\" \"$@\"\n", node, prog)
	return b.String(), nil
}

// writeLauncher points store/bin/<name> at agent@version and returns the launcher's path.
func (s *Store) writeLauncher(a Agent, version, node string) (string, error) {
	script, err := launcherScript(a, version, node, s.opt.Platform)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(StoreDir(s.home), "bin")
	if err := realDir(dir, nil); err != nil {
		return "", fmt.Errorf("write launcher: %w", err)
	}
	name := filepath.Join(dir, a.Name)
	if err := atomicfile.Write(name, []byte(script), 0o755); err != nil {
		return "", err
	}
	mark := name + ".version"
	tmp := mark + ".tmp"
	os.Remove(tmp)
	if err := os.Symlink(version, tmp); err != nil {
		return "", fmt.Errorf("write launcher: %w", err)
	}
	if err := os.Rename(tmp, mark); err != nil {
		return "", fmt.Errorf("write launcher: %w", err)
	}
	return name, nil
}
