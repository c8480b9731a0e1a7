// Command realbox prints a Lima template that boots a box with the provision bundle, for the
// manual real-box check in run.sh. Usage: realbox MODE USER PROJECTDIR IMAGEDIR BROKERPORT.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"

	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/provision"
)

func main() {
	mode, user, share, img := os.Args[1], os.Args[2], os.Args[3], os.Args[4]
	port, _ := strconv.Atoi(os.Args[5])
	b, err := provision.Render(provision.Options{
		Network: policy.Network(mode), User: user, ProjectDir: share, BrokerPort: port,
		Repo: []provision.RepoScript{{Path: "who.sh", Body: []byte("#!/bin/sh\n{ id; sudo -n true && echo ROOT || echo NOROOT; } >/tmp/who.out 2>&1\n")}},
	})
	if err != nil {
		panic(err)
	}
	q := func(s string) string { j, _ := json.Marshal(s); return string(j) }
	fmt.Printf(`vmType: qemu
os: Linux
arch: x86_64
cpuType: {x86_64: max}
cpus: 2
memory: 2GiB
disk: 10GiB
images:
- location: %s
  arch: x86_64
  kernel:
    location: %s
    cmdline: "root=/dev/vda rw console=ttyS0 net.ifnames=0"
  initrd:
    location: %s
firmware: {legacyBIOS: true}
mountType: "9p"
mounts:
- location: %s
  mountPoint: %s
  writable: true
ssh: {localPort: 0, loadDotSSHPubKeys: false, forwardAgent: false}
hostResolver: {enabled: false}
containerd: {system: false, user: false}
video: {display: none}
portForwards:
- guestPortRange: [1, 65535]
  ignore: true
provision:
`, q(img+"/debian-12-lima.qcow2"), q(img+"/vmlinuz"), q(img+"/initrd.img"), q(share), q(share))
	for _, s := range b.Scripts {
		fmt.Printf("- mode: system\n  script: %s\n", q(s.Body))
	}
}
