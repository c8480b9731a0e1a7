// Package broker is the host-side egress proxy of a box in broker mode: it authenticates the box,
// normalises and decides every destination against the trusted allow-list, resolves names once on
// the host, refuses addresses that are not global unicast, dials exactly the address it checked,
// and logs every decision as one JSON line.
//
// It does not own the guest's firewall rules: package provision renders those.
package broker
