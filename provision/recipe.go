package provision

import "strings"

// Names of the per-box scripts of a bundle: the git shadow is rendered from one checkout's git
// metadata, and the repository's own approved scripts are numbered under RepoScriptPrefix.
const (
	// BoxScriptName is not per box in this sense: it writes the box's own values (its project
	// mount point, its broker port) for the product's scripts to read, and the golden key masks them, so every
	// box of a recipe has the same product scripts but this one.
	BoxScriptName       = "05-box.sh"
	GitShadowScriptName = "40-gitshadow.sh"
	CoverScriptName     = "45-cover.sh" // hide and box_dirs, package cover
	RepoScriptPrefix    = "50-repo-"
)

// PerBox reports whether the script named name belongs to one box rather than to the guest
// recipe: the git shadow script, the hide and box_dirs script and the repository's own
// provision scripts. They need the project mounted and run at every boot of the box itself, so
// a golden base never holds them.
func PerBox(name string) bool {
	return name == GitShadowScriptName || name == CoverScriptName || strings.HasPrefix(name, RepoScriptPrefix)
}

// Recipe returns the bundle's guest recipe: the product's own scripts (base files, network
// lockdown, packages, privilege drop) in their order, without the per-box ones (see PerBox).
// A golden base is built from, and keyed on, exactly these.
func (b Bundle) Recipe() Bundle {
	var out Bundle
	for _, s := range b.Scripts {
		if !PerBox(s.Name) {
			out.Scripts = append(out.Scripts, s)
		}
	}
	return out
}
