// Package clone is clone mode: an untrusted repository that the host never checks out or runs.
//
// It owns four steps, each usable on its own:
//
//   - Fetch copies a repository (https://, ssh:// or a local path) into a private, bare,
//     hook-free store under $CORRAL_HOME with go-git, under caps on ref count, pack size, object
//     count, object size, delta depth and time (sizes checked as declared, before anything is
//     inflated, a local source's own objects included), and validates every tree, ref name and
//     .gitmodules value before the store appears (it is staged in a temporary directory and
//     renamed). Request.Validate checks a clone's arguments before any of that.
//   - Deliver streams the store's refs into a box as a git bundle produced by go-git (never by a
//     host git process) over the Guest interface; the box checks it out on its own disk.
//   - FetchBack brings the box's branches back into refs/corral/<box>/… of a host repository, as
//     a bundle made in the box and read, capped and validated with go-git on the host.
//   - SnapshotTracked (source = "clone" for an existing checkout) records the committed content
//     at HEAD plus, if asked, uncommitted changes to tracked files — never untracked files.
//
// It does not own the box (package vm provides a Guest), working trees on the host (there are
// none) or the review of fetched refs (package diff).
//
// The rules every step follows:
//   - No git process runs on the host against untrusted data: fetch, pack, bundle and index are
//     go-git; the only git processes are the box's own.
//   - Nothing from the untrusted repository's configuration is read: its config, hooks and
//     submodules never travel (the fetch protocol carries objects and ref names only), and a
//     local source is read through its object and ref storage, never its config.
//   - Fail closed: any hostile tree entry, ref name or .gitmodules value refuses the whole fetch
//     with every finding named, and leaves nothing behind.
package clone
