// Package home knows the layout of $CORRAL_HOME (default ~/.corral): the global config, the
// trusted per-project files, Lima's home, box metadata, approvals, images, logs and session bases.
//
// It only names paths and creates directories with safe permissions; the packages that own each
// file read and write it.
//
// It also owns the mount guard (mountable.go, trusted.go, pathview.go): which host paths a box
// may mount. Home.CheckProjectMount and Home.CheckExtraMount refuse a path that is, contains or
// lies inside a place the host trusts ($CORRAL_HOME, ~/.ssh, ~/.config, /etc …), or that $HOME
// itself is or lies inside, with a *HostPathError (errors.Is ErrHostPath) whose Hint says what to
// do instead. It does not decide when to call them: the session flow calls them before any box
// is looked up or created.
package home
