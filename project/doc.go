// Package project finds the repository a command runs in, through git itself (git rev-parse), so
// that subdirectories, git -C, GIT_DIR and linked worktrees behave as git users expect, and derives
// the box identity from it.
//
// A box is named <slug>-<6 hex of sha256(realpath of the top level)>: running from a subdirectory
// finds the same box, and a linked worktree is its own box.
package project
