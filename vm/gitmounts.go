package vm

// This file renders the git mounts: the host directories git needs besides the project. A linked
// worktree's .git is a file naming <main>/.git/worktrees/<name>, whose commondir names the main
// repository's git dir; git in the box reads objects and refs there and writes new ones, so
// without that directory mounted nothing works. Its rules:
//
//   - Only git dirs are git mounts (the session passes a linked worktree's common dir, never the
//     main work tree), each at its own real path so the .git file and commondir resolve the same
//     in the guest as on the host.
//   - They are writable unless the project is read-only (readonly_project): a commit in the box writes objects, refs and the worktree's index and
//     HEAD there. What the host executes from them (config, hooks, info, commondir, the
//     worktrees' admin files) is shadowed by the git shadow and verified from the host like any
//     other git dir (package gitshadow).
//   - A git mount must be absolute and clean, carry no newline or NUL, appear once, and neither
//     be, hold nor lie inside the project mount: Lima cannot stack two mounts on one path, and a
//     nested one would hide or repeat the other.
//   - A box with git mounts cannot resume a golden saved state (the state's devices are one 9p
//     mount); it is made from a disk-only golden base or from scratch (stateCapable).

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/lima-vm/lima/pkg/limayaml"
)

// gitMounts is the Lima mount of each git mount, at its own path, writable when the project is.
func gitMounts(dirs []string, writable bool) []limayaml.Mount {
	var ms []limayaml.Mount
	for _, d := range dirs {
		ms = append(ms, limayaml.Mount{Location: d, MountPoint: ptr(d), Writable: ptr(writable)})
	}
	return ms
}

// checkGitMounts refuses git mounts that Lima would misread or that overlap the project mount.
func checkGitMounts(o TemplateOptions) []error {
	var errs []error
	if len(o.GitMounts) > 0 && o.NoProjectMount {
		errs = append(errs, fmt.Errorf("render template: git mounts %q in a box that mounts nothing of the host", o.GitMounts))
	}
	seen := map[string]bool{}
	for _, d := range o.GitMounts {
		switch {
		case strings.ContainsAny(d, "\x00\n\r"):
			errs = append(errs, fmt.Errorf("render template: git mount %q contains a newline or NUL", d))
		case !filepath.IsAbs(d) || filepath.Clean(d) != d:
			errs = append(errs, fmt.Errorf("render template: git mount %q must be absolute and clean", d))
		case seen[d]:
			errs = append(errs, fmt.Errorf("render template: git mount %q is listed twice", d))
		case within(d, o.ProjectDir) || within(o.ProjectDir, d):
			errs = append(errs, fmt.Errorf("render template: git mount %q overlaps the project mount %q", d, o.ProjectDir))
		}
		seen[d] = true
	}
	return errs
}

// within reports whether path is dir or lies below it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// noGoldenGitMounts is the notice for a box with git mounts that wanted a golden base.
func noGoldenGitMounts(box string) string {
	return fmt.Sprintf("box %s also mounts the main repository's git dir (a linked worktree), so it cannot resume "+
		"the golden saved state: it boots from scratch (a minute or more)", box)
}
