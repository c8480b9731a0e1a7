package home

// This file is the one exception to the mount guard's rule that nothing of $CORRAL_HOME is
// mounted: the two directories of agent data the product itself makes for boxes. Its rules:
//
//   - Only AgentStore (read-only in the box) and AgentState(box) of the box being made may be
//     mounted; any other path of $CORRAL_HOME, a parent of these, a narrower directory inside
//     them, or another box's state is refused.
//   - Every path element from $CORRAL_HOME down to the mounted directory must be a real
//     directory, not a symlink, and the mounted directory must belong to the user running git
//     corral and not be writable by group or others: a planted symlink or a foreign-owned
//     directory would hand the box another place.
//   - The state directory holds only what boxes write; the host never executes or parses
//     anything in it, it only copies into it and removes it (package session), through os.Root
//     so that a symlink a box made there is never followed out of it.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Agents is the root of the agent store, caches and per-box agent state (package agents).
func (h Home) Agents() string { return filepath.Join(h.Dir, "agents") }

// AgentStore is the agent store every mount-mode box mounts read-only.
func (h Home) AgentStore() string { return filepath.Join(h.Agents(), "store") }

// AgentStateRoot holds one directory of agent state per box.
func (h Home) AgentStateRoot() string { return filepath.Join(h.Agents(), "state") }

// AgentState is box's agent state directory, mounted writable in that box only.
func (h Home) AgentState(box string) string { return filepath.Join(h.AgentStateRoot(), box) }

// ErrAgentMount is matched (errors.Is) by every refusal of CheckAgentMount.
var ErrAgentMount = errors.New("not a product-made agent directory of this box")

// CheckAgentMount refuses p unless it is h.AgentStore() or h.AgentState(box), made as the rules
// above say.
func (h Home) CheckAgentMount(p, box string) error {
	if box == "" || box == "." || box == ".." || strings.ContainsAny(box, "/\\\x00\n\r") {
		return fmt.Errorf("check agent mount %q: box name %q: %w", p, box, ErrAgentMount)
	}
	if p != h.AgentStore() && p != h.AgentState(box) {
		return fmt.Errorf("check agent mount %q: only %q and %q may be mounted: %w", p, h.AgentStore(), h.AgentState(box), ErrAgentMount)
	}
	rel, err := filepath.Rel(h.Dir, p)
	if err != nil {
		return fmt.Errorf("check agent mount %q: %w", p, err)
	}
	at := h.Dir
	for _, elem := range append([]string{""}, strings.Split(rel, string(filepath.Separator))...) {
		at = filepath.Join(at, elem)
		fi, err := os.Lstat(at)
		if err != nil {
			return fmt.Errorf("check agent mount %q: %w", p, err)
		}
		if !fi.IsDir() {
			return fmt.Errorf("check agent mount %q: %q is not a directory (a symlink or file is in the way): %w", p, at, ErrAgentMount)
		}
		if at == p {
			return checkOwned(p, fi)
		}
	}
	return nil
}

// checkOwned refuses a directory another user owns or that group or others may write.
func checkOwned(p string, fi os.FileInfo) error {
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("check agent mount %q: mode %v lets others write it (chmod 700 it): %w", p, fi.Mode().Perm(), ErrAgentMount)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("check agent mount %q: owned by uid %d, not by you (uid %d): %w", p, st.Uid, os.Getuid(), ErrAgentMount)
	}
	return nil
}
