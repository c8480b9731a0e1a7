package vm

import (
	"context"
	"fmt"
	"net"
)

// GuestSSHDAddr is the guest's own sshd as seen from inside the guest. An editor's connection
// (git corral ssh-proxy) is tunnelled there so that sshd sees it come from 127.0.0.1 and applies
// the editor's forwarding limits (provision/sshdconf.go); git corral's own connections come from
// the network's gateway.
const GuestSSHDAddr = "127.0.0.1:22"

// DialGuestTCP opens a direct-tcpip channel on c to addr as the guest sees it. Only a direct
// connection can: a connection holder refuses TCP channels.
func (c *Client) DialGuestTCP(ctx context.Context, addr string) (net.Conn, error) {
	conn, err := c.ssh.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, c.connErr(fmt.Sprintf("open a channel to %q", addr), err)
	}
	return conn, nil
}
