package broker

// This file is a test seam: fixed answers for named hosts, so that an end-to-end test can stand
// in for a public registry (registry.npmjs.org, pypi.org) with a server on the host's loopback
// and let a box reach it by its real name, through the real allow-list. Rules:
//   - the table comes only from the environment of the host process that runs the broker
//     ($CORRAL_TEST_BROKER_HOSTS, read by `git corral broker serve`), never from a configuration
//     file: the repository cannot set a variable of the host, and the box cannot reach it;
//   - every address it names must be loopback; anything else is refused when the broker starts,
//     so the seam cannot point a name at the host's network or at another machine;
//   - it changes resolution only: the name must still be allowed by the allow-list (rule 2), so a
//     name the table holds but the list does not is refused like any other; what the table
//     answers is trusted as an address entry would be (rule 3), because the host process chose it.

import (
	"fmt"
	"net/netip"
	"strings"
)

// TestHostsEnv is the variable `git corral broker serve` reads the table from.
const TestHostsEnv = "CORRAL_TEST_BROKER_HOSTS"

// ParseTestHosts parses "NAME=ADDR[,NAME=ADDR…]" (a name may repeat for several addresses),
// refusing any address that is not loopback.
func ParseTestHosts(spec string) (map[string][]netip.Addr, error) {
	out := map[string][]netip.Addr{}
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, addr, ok := strings.Cut(item, "=")
		n, nameAddr, err := NormalizeHost(name)
		if !ok || err != nil || nameAddr.IsValid() {
			return nil, fmt.Errorf("$%s: %q is not NAME=ADDRESS with a host name", TestHostsEnv, item)
		}
		a, err := netip.ParseAddr(addr)
		if err != nil || !a.Unmap().IsLoopback() {
			return nil, fmt.Errorf("$%s: %q: the address must be a loopback IP (a test seam reaches only this host's loopback)", TestHostsEnv, item)
		}
		out[n] = append(out[n], a.Unmap())
	}
	return out, nil
}
