// Package home knows the layout of $CORRAL_HOME (default ~/.corral): the global config, the
// trusted per-project files, Lima's home, box metadata, approvals, images, logs and session bases.
//
// It only names paths and creates directories with safe permissions; the packages that own each
// file read and write it.
package home
