// Package vm owns the box: the Lima instance template (built from Lima's own Go types and checked
// by Lima's validator), the lifecycle through limactl, instance state, and SSH sessions
// (golang.org/x/crypto/ssh) with environment forwarding and a PTY.
//
// It makes no policy decisions: it is given the effective configuration and renders it.
package vm
