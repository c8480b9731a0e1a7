package home

// This file is the mount guard: what a box may mount from the host. Its rules:
//
//   - A mount (the project directory, or an extra `mounts` entry) may not be, contain, or lie
//     inside a place the host trusts: $CORRAL_HOME, Lima's homes ($LIMA_HOME, ~/.lima), ~/.ssh,
//     ~/.gnupg, cloud credential directories (~/.aws, ~/.azure, ~/.kube, ~/.docker,
//     ~/.config/gcloud), the configuration, data and cache directories (~/.config, ~/.local,
//     ~/.cache and their $XDG_* overrides, git's $XDG_CONFIG_HOME/git), ~/bin, ~/Library, and
//     the host's system directories (/etc, /usr, /proc, /sys, /dev, /run, /root, /var/lib …).
//   - It may lie inside $HOME, /home, /tmp, /var/tmp, /var or the directory of
//     $GIT_CONFIG_GLOBAL (~/src/proj is the normal case), but may not be one of them or contain
//     one. Being or containing $HOME covers every dotfile (~/.bashrc, ~/.gitconfig).
//   - It may not be `/`.
//   - It may not be the target, or hold the target, of a hidden symlink in $HOME or of a
//     symlink in the configuration directory, ~/.local/bin or ~/bin: a dotfiles repository
//     that ~/.bashrc links into hands the box the host's shell start-up file.
//   - An extra mount may also not be a socket (/run/docker.sock, an agent's socket) or a device.
//   - Paths are compared after resolving symlinks on both sides, by name and by file identity
//     (device and inode, so a bind mount or another spelling is the same place), and
//     case-insensitively when the filesystem folds case. A trusted place that does not exist is
//     compared by its absolute path. A path that is empty, holds a NUL or a line break, or runs
//     through a dangling symlink is refused.
//
// Decisions: ~/.local and ~/bin are refused whole because the host executes from them (PATH,
// systemd user units, interpreter modules). $PATH itself is not read: a shell's PATH often holds
// project directories (direnv, node_modules/.bin) that `git corral diff` reviews instead.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrHostPath is matched (errors.Is) by every refusal of the mount guard: the mount would hand
// the box something the host trusts. The error is a *HostPathError.
var ErrHostPath = errors.New("a box may not mount what the host trusts")

// HostPathError is a refused mount: which path, the trusted place, and how they stand.
type HostPathError struct {
	// Entry is "project" for the project directory, or the `mounts` entry's host path.
	Entry string
	// Path is the path as given; Resolved is it with its symlinks resolved.
	Path, Resolved string
	// Place is the trusted path; What names it; Relation is "is", "contains", "lies inside" or
	// "is the target of"; Why says what the box could reach through it.
	Place, What, Relation, Why string
	project                    bool
}

// Error says what was refused and why, in one line.
func (e *HostPathError) Error() string {
	subject := fmt.Sprintf("project directory %q", e.Path)
	if !e.project {
		subject = fmt.Sprintf("mounts entry %q", e.Path)
	}
	if e.Resolved != "" && e.Resolved != e.Path {
		subject += fmt.Sprintf(" (resolves to %q)", e.Resolved)
	}
	if e.Place == "" {
		return fmt.Sprintf("refuse to mount %s: it %s %s %s: %v", subject, e.Relation, e.What, e.Why, ErrHostPath)
	}
	return fmt.Sprintf("refuse to mount %s: it %s %s %q, %s: %v", subject, e.Relation, e.What, e.Place, e.Why, ErrHostPath)
}

// Unwrap makes errors.Is(err, ErrHostPath) hold.
func (e *HostPathError) Unwrap() error { return ErrHostPath }

// Hint is the next step to suggest to the user.
func (e *HostPathError) Hint() string {
	if e.project {
		return `run the repository in clone mode instead, which mounts nothing: "git corral clone URL", or source = "clone" in the checkout's configuration`
	}
	return fmt.Sprintf("remove %q from mounts, or mount a narrower directory that holds nothing the host trusts", e.Path)
}

// CheckProjectMount refuses a project directory that is, contains or lies inside a place the
// host trusts (see the rules above), before any box is looked up or created. getenv supplies
// HOME, LIMA_HOME, GIT_CONFIG_GLOBAL and XDG_*_HOME (nil: os.Getenv).
func (h Home) CheckProjectMount(dir string, getenv func(string) string) error {
	return h.checkMount(dir, "project", true, getenv)
}

// CheckExtraMount refuses the host path of a `mounts` entry by the same rules as the project,
// and also when it is a socket or a device.
func (h Home) CheckExtraMount(hostPath string, getenv func(string) string) error {
	return h.checkMount(hostPath, hostPath, false, getenv)
}

// checkMount applies the rules to p.
func (h Home) checkMount(p, entry string, project bool, getenv func(string) string) error {
	if getenv == nil {
		getenv = os.Getenv
	}
	refuse := func(place, what, rel, why, resolved string) error {
		return &HostPathError{Entry: entry, Path: p, Resolved: resolved, Place: place, What: what,
			Relation: rel, Why: why, project: project}
	}
	if err := checkText(p); err != nil {
		return refuse("", "not a usable path:", "is", "it "+err.Error(), "")
	}
	resolved, err := resolvePath(p, true)
	if de := (*danglingError)(nil); errors.As(err, &de) {
		return refuse(de.link, "the symlink", "runs through", "whose target does not exist, so what is mounted would depend on what is created there later", "")
	}
	if err != nil {
		return fmt.Errorf("check mount %q: %w", p, err)
	}
	fold := caseInsensitive(resolved)
	v, err := newView(resolved, true, fold)
	if err != nil {
		return fmt.Errorf("check mount %q: %w", p, err)
	}
	if !project {
		if kind := special(v.self); kind != "" {
			return refuse("", kind+",", "is", "which reaches a host service or device, not files", v.clean)
		}
	}
	places, homeView, err := h.trusted(getenv, fold)
	if err != nil {
		return err
	}
	if pl, rel := standing(v, places, homeView); rel != 0 {
		return refuse(pl.path, pl.name, rel.words(), pl.why, v.clean)
	}
	if link, err := linkedInto(v, homeView, getenv, fold); err != nil {
		return fmt.Errorf("check mount %q: %w", p, err)
	} else if link != "" {
		return refuse(link, "the host's symlink", relLinked.words(), "through which the host reads or runs files of this directory", v.clean)
	}
	return nil
}

// standing returns the trusted place v stands in a refused relation to: the one it is; else the
// widest it contains (an ancestor of $HOME is reported as containing $HOME, not ~/.ssh); else
// the first, most specific, it lies inside.
func standing(v view, places []place, homeView view) (place, relation) {
	var inside, contains *place
	for i, pl := range places {
		switch {
		case v.is(pl.v):
			if pl.refuse&relIs != 0 {
				return pl, relIs
			}
		case pl.v.inside(v):
			if pl.refuse&relContains != 0 && (contains == nil || len(pl.v.clean) < len(contains.v.clean)) {
				contains = &places[i]
			}
		case v.inside(pl.v):
			exempt := pl.system && (homeView.is(pl.v) || homeView.inside(pl.v)) && v.inside(homeView)
			if pl.refuse&relInside != 0 && inside == nil && !exempt {
				inside = &places[i]
			}
		}
	}
	if contains != nil {
		return *contains, relContains
	}
	if inside != nil {
		return *inside, relInside
	}
	return place{}, 0
}

// special names a file that is not a directory or regular file: a socket, a device or a FIFO.
func special(fi os.FileInfo) string {
	if fi == nil {
		return ""
	}
	switch m := fi.Mode(); {
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	}
	return ""
}

// linkedInto returns a symlink whose target is v or lies inside it, or "": a hidden entry of
// $HOME (~/.bashrc), or any entry of the configuration directory, ~/.local/bin or ~/bin. Other
// entries of $HOME are left alone: ~/work -> ~/src/work is a shortcut the host runs nothing
// through.
func linkedInto(v, homeView view, getenv func(string) string, fold bool) (string, error) {
	dirs := []string{homeView.clean, filepath.Join(homeView.clean, ".config"),
		filepath.Join(homeView.clean, ".local", "bin"), filepath.Join(homeView.clean, "bin")}
	if d := getenv("XDG_CONFIG_HOME"); filepath.IsAbs(d) {
		dirs = append(dirs, d)
	}
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return "", fmt.Errorf("read %q for symlinks into the mount: %w", dir, err)
		}
		for _, e := range entries {
			if e.Type()&fs.ModeSymlink == 0 || dir == homeView.clean && !strings.HasPrefix(e.Name(), ".") {
				continue
			}
			link := filepath.Join(dir, e.Name())
			target, err := os.Readlink(link)
			if err != nil {
				return "", fmt.Errorf("read symlink %q: %w", link, err)
			}
			if !filepath.IsAbs(target) {
				target = filepath.Join(dir, target)
			}
			t, err := newView(target, false, fold) // a dangling link still names its target
			if err != nil {
				return "", fmt.Errorf("resolve symlink %q: %w", link, err)
			}
			if t.is(v) || t.inside(v) {
				return link, nil
			}
		}
	}
	return "", nil
}
