// Package casefs is a loopback FUSE filesystem whose names are case-insensitive and
// case-preserving, as on macOS (APFS, HFS+), Windows, or ciopfs: it serves a backing directory,
// and a name given to it resolves to the backing entry whose case-folded spelling is the same.
// Creating "a" and opening "A" reach one file; ".GIT/CONFIG" and ".git/hoo\u212As" (KELVIN
// SIGN) reach ".git/config" and ".git/hooks"; a new entry keeps the spelling it was made with.
//
// It exists so that tests can show, on a Linux kernel without CONFIG_UNICODE (no case-folding
// ext4 or tmpfs), what a case-insensitive host filesystem does to git metadata: the same kernel
// inode is reached under every spelling, so inotify watches and the page cache behave as they
// do on a real case-insensitive filesystem for writes made through the mount.
//
// Names are compared by Fold: Unicode full case folding, then canonical decomposition (NFD), the
// comparison ext4's casefold feature makes. When the backing directory already holds two names
// that fold alike (made behind the mount's back), the exact spelling wins, then the first in
// byte order.
//
// It is a test fixture, not a hardened filesystem: it trusts its backing directory not to be
// changed underneath it while a call is in flight, it serves every caller with the server's own
// privileges (default_permissions makes the kernel check mode bits), and it implements what git
// and the tests need: lookup, getattr, setattr, open, create, mkdir, unlink, rmdir, rename
// (with flags), symlink, readlink, link, readdir and statfs. Extended attributes, mknod and
// locks are not supported.
//
// Mounting needs /dev/fuse and root (it calls mount(2) directly, falling back to fusermount).
package casefs
