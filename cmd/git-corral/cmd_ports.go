package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/git-corral/git-corral/home"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/session"
	"github.com/git-corral/git-corral/vm"
)

// portsDoc is what 'git corral ports --json' prints.
type portsDoc struct {
	Box string `json:"box"`
	// Ports are the effective configuration's ports entries.
	Ports []portDoc `json:"ports"`
	// BoxPorts are the entries the existing box was created with (nil: no box); when they
	// differ from Ports, the next session is refused until the box is made again.
	BoxPorts []string `json:"boxPorts"`
	Stale    bool     `json:"stale"`
}

// portDoc is one forward: the host's 127.0.0.1:hostPort to the box's guestPort.
type portDoc struct {
	Entry     string `json:"entry"`
	Host      string `json:"host"`
	HostPort  int    `json:"hostPort"`
	GuestPort int    `json:"guestPort"`
}

func definePorts(fs *pflag.FlagSet) runFunc {
	jsonOut := fs.Bool("json", false, "print one JSON document")
	return func(ctx context.Context, a *app, args []string) error {
		if len(args) > 0 {
			return usageErrorf("ports", "ports takes no arguments")
		}
		doc, err := a.ports(ctx)
		if err != nil {
			return err
		}
		if *jsonOut {
			return a.printJSON(doc)
		}
		if len(doc.Ports) == 0 {
			fmt.Fprintf(a.stdout, "box %s: no port forwarded (every guest port is ignored)\n", doc.Box)
		}
		for _, p := range doc.Ports {
			fmt.Fprintf(a.stdout, "%s:%d -> box %s port %d\n", p.Host, p.HostPort, doc.Box, p.GuestPort)
		}
		if doc.Stale {
			fmt.Fprintf(a.stderr, "corral: warning: box %s was created with ports %q; the next session is refused until it is made again ('git corral delete --yes', then start)\n", doc.Box, doc.BoxPorts)
		}
		return nil
	}
}

// ports reads the effective ports entries and the box's recorded ones.
func (a *app) ports(ctx context.Context) (portsDoc, error) {
	opts, err := a.loadOptions(ctx, "")
	if err != nil {
		return portsDoc{}, err
	}
	eff, err := policy.Load(ctx, opts)
	if err != nil {
		return portsDoc{}, err
	}
	ps, err := policy.ParsePorts(eff.Config.Ports)
	if err != nil {
		return portsDoc{}, err
	}
	box, err := a.boxName(ctx) // name, when set, selects the box; opts.Box keys the configuration
	if err != nil {
		return portsDoc{}, err
	}
	doc := portsDoc{Box: box, Ports: []portDoc{}}
	for _, p := range ps {
		doc.Ports = append(doc.Ports, portDoc{Entry: p.Entry, Host: "127.0.0.1", HostPort: p.Host, GuestPort: p.Guest})
	}
	h, err := home.Resolve(a.getenv)
	if err != nil {
		return doc, err
	}
	if meta, err := (&vm.Manager{Home: h}).ReadMeta(box); err == nil {
		doc.BoxPorts = append([]string{}, meta.Ports...)
		doc.Stale = session.CheckBoxKeys(box, vm.Meta{Mounts: eff.Config.Mounts, Ports: meta.Ports}, eff.Config) != nil
	}
	return doc, nil
}

// portList prints host ports as 127.0.0.1:P, comma-separated.
func portList(ps []int) string {
	var out []string
	for _, p := range ps {
		out = append(out, "127.0.0.1:"+strconv.Itoa(p))
	}
	return strings.Join(out, ", ")
}
