package session

// This file keeps the agents' per-box state on the host (agent_state). Its rules:
//
//   - isolated: the box starts with no agent state; what an agent writes into its state
//     directories in the box (a login, history) lands in $CORRAL_HOME/agents/state/BOX/AGENT,
//     mounted at vm.AgentStateGuest, so it survives stop/start and no other box sees it.
//   - seeded: as isolated, but the first session of the agent in the box copies the host's own
//     agent state in once (regular files and directories only; a symlink is never followed,
//     not even at the top, and never copied; nothing of the host's directory is ever written).
//   - shared: the host's agent directories themselves are mounted (vm.SharedMount); trusted
//     layers only may choose it (policy). A file entry (~/.claude.json) cannot be mounted and is
//     not shared.
//   - The host never executes or parses anything a box wrote into its state directory: it
//     only makes directories there, copies into it and removes it, always through os.Root, so a
//     symlink the box planted there is never followed out of it. Directories are 0700, files
//     0600.
//   - ~/.claude and the like are never read or written except by the seeded copy, which only
//     reads.

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/git-corral/git-corral/agents"
	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/internal/atomicfile"
	"github.com/git-corral/git-corral/vm"
)

// The values of agent_state.
const (
	AgentStateShared   = "shared"
	AgentStateSeeded   = "seeded"
	AgentStateIsolated = "isolated"
)

// AgentMounts makes the agent store and box's state directory (0700) and returns the box's
// agent mounts for agent_state mode (AgentMountSet), each host directory checked first
// (home.CheckAgentMount; shared ones home.CheckExtraMount).
func AgentMounts(h home.Home, box, mode, hostHome string, getenv func(string) string) (vm.AgentMounts, error) {
	a := AgentMountSet(h, box, mode, hostHome)
	for _, d := range []string{h.Agents(), h.AgentStore(), h.AgentStateRoot(), a.State} {
		if err := h.MkdirAll(d); err != nil {
			return vm.AgentMounts{}, fmt.Errorf("agent mounts of box %s: %w", box, err)
		}
	}
	for _, d := range []string{a.Store, a.State} {
		if err := h.CheckAgentMount(d, box); err != nil {
			return vm.AgentMounts{}, err
		}
	}
	for _, s := range a.Shared {
		if err := h.CheckExtraMount(s.Host, getenv); err != nil {
			return vm.AgentMounts{}, fmt.Errorf("agent_state = \"shared\": %w", err)
		}
	}
	return a, nil
}

// AgentMountSet is the agent mounts of a mount-mode box, without making or checking anything:
// what its template is rendered with (also for drift checks and golden builds). hostHome is
// the host user's home, looked at only with agent_state = "shared" (its agent directories that
// exist; a file cannot be mounted).
func AgentMountSet(h home.Home, box, mode, hostHome string) vm.AgentMounts {
	a := vm.AgentMounts{Store: h.AgentStore(), State: h.AgentState(box)}
	if mode != AgentStateShared {
		return a
	}
	for _, ag := range agents.Catalogue() {
		for _, rel := range ag.StateDirs {
			p := filepath.Join(hostHome, rel)
			if fi, err := os.Stat(p); err == nil && fi.IsDir() {
				a.Shared = append(a.Shared, vm.SharedMount{Agent: ag.Name, Rel: rel, Host: p})
			}
		}
	}
	return a
}

// PrepareAgentState makes box's state directory of agent a (0700, and each of its state
// directories), and with seeded copies the host's state in the first time. It returns what
// the seed skipped (symlinks, special files), for a notice.
func PrepareAgentState(h home.Home, box string, a agents.Agent, mode, hostHome string) (skipped []string, err error) {
	root, err := os.OpenRoot(h.AgentState(box))
	if err != nil {
		return nil, fmt.Errorf("agent state of box %s: %w", box, err)
	}
	defer root.Close()
	if err := mkdirNoFollow(root, a.Name); err != nil {
		return nil, fmt.Errorf("agent state %s of box %s: %w", a.Name, box, err)
	}
	mark := seededMark(h, box, a.Name)
	if mode == AgentStateSeeded {
		if _, err := os.Stat(mark); errors.Is(err, fs.ErrNotExist) {
			if skipped, err = seedAgent(root, a, hostHome); err != nil {
				return skipped, fmt.Errorf("seed agent state %s of box %s: %w", a.Name, box, err)
			}
			if err := h.MkdirAll(h.Boxes()); err != nil {
				return skipped, err
			}
			if err := atomicfile.Write(mark, []byte(a.Name+"\n"), 0o600); err != nil {
				return skipped, err
			}
		}
	}
	for _, rel := range a.StateDirs { // a state file is made by the agent, through its link
		if err := root.MkdirAll(filepath.Join(a.Name, rel), 0o700); err != nil {
			return skipped, fmt.Errorf("agent state %s of box %s: %w", a.Name, box, err)
		}
	}
	return skipped, nil
}

// seededMark is the host-only file saying box's agent state was seeded (never in the state
// directory, which the box can write).
func seededMark(h home.Home, box, agent string) string {
	return filepath.Join(h.Boxes(), box+".agent-seeded-"+agent)
}

// mkdirNoFollow makes dir in root (0700) unless it is there; a symlink or file in its place
// is refused.
func mkdirNoFollow(root *os.Root, dir string) error {
	if err := root.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	fi, err := root.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%q is not a directory (the box put a symlink or file there; 'git corral agents logout' removes it)", dir)
	}
	return nil
}

// seedAgent copies each of a's state paths that exists under hostHome, as the kind the
// catalogue says (a directory or a regular file), into root/a.Name, unless that path is there
// already. Only regular files and directories are copied; the host side is
// opened read-only through its own os.Root and never followed through a symlink.
func seedAgent(root *os.Root, a agents.Agent, hostHome string) (skipped []string, err error) {
	host, err := os.OpenRoot(hostHome)
	if err != nil {
		return nil, err
	}
	defer host.Close()
	for _, sp := range a.StatePaths() {
		rel, dst := sp.Rel, filepath.Join(a.Name, sp.Rel)
		if fi, err := root.Lstat(dst); err == nil && (!fi.IsDir() || root.Remove(dst) != nil) {
			continue // the box has state of its own (not an empty directory): kept
		}
		if fi, err := host.Lstat(rel); err != nil || fi.IsDir() != sp.Dir || !fi.IsDir() && !fi.Mode().IsRegular() {
			if err == nil {
				skipped = append(skipped, "~/"+rel)
			}
			continue // absent, a symlink (never followed, not even at the top) or not the kind the catalogue says
		}
		s, err := copyTree(host, rel, root, dst)
		skipped = append(skipped, s...)
		if err != nil {
			return skipped, err
		}
	}
	return skipped, nil
}

// copyTree copies src (in from) to dst (in to): directories 0700, regular files 0600; a
// symlink, device, FIFO or socket is skipped and named in skipped. A missing src copies nothing.
func copyTree(from *os.Root, src string, to *os.Root, dst string) (skipped []string, err error) {
	err = fs.WalkDir(from.FS(), src, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == src {
			return fs.SkipAll
		}
		if err != nil {
			return err
		}
		out := filepath.Join(dst, strings.TrimPrefix(p, src))
		switch {
		case d.Type()&fs.ModeSymlink != 0 || !d.Type().IsRegular() && !d.IsDir():
			skipped = append(skipped, "~/"+p)
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		case d.IsDir():
			return to.Mkdir(out, 0o700)
		}
		return copyFile(from, p, to, out)
	})
	return skipped, err
}

// copyFile copies the regular file src of from to the new file dst of to (0600), refusing to
// open anything but a regular file on the host side.
func copyFile(from *os.Root, src string, to *os.Root, dst string) error {
	in, err := from.OpenFile(src, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	if fi, err := in.Stat(); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("copy ~/%s: not a regular file", src)
	}
	out, err := to.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// LogoutAgent removes box's login state of the agent called name (`git corral agents logout
// NAME`): its whole state directory on the host, through os.Root. The next session starts it
// empty; a seeded box is not seeded again.
func LogoutAgent(h home.Home, box, name string) error {
	if _, err := agents.Lookup(name); err != nil {
		return err
	}
	root, err := os.OpenRoot(h.AgentState(box))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("logout %s of box %s: %w", name, box, err)
	}
	defer root.Close()
	if err := root.RemoveAll(name); err != nil {
		return fmt.Errorf("logout %s of box %s: %w", name, box, err)
	}
	return nil
}

// RemoveAgentState removes box's whole agent state and seed marks (git corral delete). A
// symlink the box planted in its state directory is removed, never followed (os.RemoveAll
// unlinks it); a box name that is not one path element is refused before anything is removed.
func RemoveAgentState(h home.Home, box string) error {
	if box == "" || box == "." || box == ".." || strings.ContainsAny(box, `/\`+"\x00") {
		return fmt.Errorf("remove agent state: box name %q is not one path element", box)
	}
	for _, a := range agents.Catalogue() {
		_ = os.Remove(seededMark(h, box, a.Name))
	}
	if err := os.RemoveAll(h.AgentState(box)); err != nil {
		return fmt.Errorf("remove agent state of box %s: %w", box, err)
	}
	return nil
}
