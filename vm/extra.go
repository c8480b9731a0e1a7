package vm

// This file renders the trusted-only `mounts` and `ports` keys into the Lima template. Rules:
//   - an extra mount's host path is the one the session's mount guard checked, symlinks
//     resolved (home.CheckExtraMount), so Lima mounts exactly what was checked; it is
//     read-only unless the entry said :rw, and a clone-mode box takes none;
//   - each ports entry forwards one guest TCP port to the same-numbered rule on the host's
//     127.0.0.1, never another address; after them one rule ignores every other guest port on
//     every address and protocol, so nothing else is published (Lima uses the first rule that
//     matches, and its own default rules come after ours);
//   - a box with extra mounts has QEMU devices a golden build box does not have, so it never
//     resumes a saved golden state (stateCapable).

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"

	"github.com/lima-vm/lima/pkg/limayaml"

	"github.com/git-corral/git-corral/policy"
)

// ExtraMount is one `mounts` entry as the template gets it.
type ExtraMount struct {
	// Entry is the entry as written, for errors.
	Entry string
	// Host is the checked host path, symlinks resolved; Guest the guest path.
	Host, Guest string
	// Writable is true only for an entry ending in :rw.
	Writable bool
}

// extraMounts returns the Lima mounts of o's extra mounts.
func extraMounts(o TemplateOptions) []limayaml.Mount {
	var out []limayaml.Mount
	for _, m := range o.ExtraMounts {
		out = append(out, limayaml.Mount{Location: m.Host, MountPoint: ptr(m.Guest), Writable: ptr(m.Writable)})
	}
	return out
}

// checkExtraMounts refuses extra mounts Lima would misread or that would widen the box.
func checkExtraMounts(o TemplateOptions) []error {
	var errs []error
	if len(o.ExtraMounts) > 0 && o.NoProjectMount {
		errs = append(errs, fmt.Errorf("render template: a clone-mode box mounts nothing of the host, not %q", o.ExtraMounts[0].Entry))
	}
	for _, m := range o.ExtraMounts {
		if strings.ContainsAny(m.Host+m.Guest, "\x00\n\r") || !filepath.IsAbs(m.Host) || filepath.Clean(m.Host) != m.Host {
			errs = append(errs, fmt.Errorf("render template: mounts entry %q: host path %q must be absolute, clean and free of newlines", m.Entry, m.Host))
		}
		if _, err := policy.ParseMount(m.Host + ":" + m.Guest); err != nil {
			errs = append(errs, fmt.Errorf("render template: %w", err))
		}
		if m.Guest == o.ProjectDir || strings.HasPrefix(m.Guest, o.ProjectDir+"/") || strings.HasPrefix(o.ProjectDir, m.Guest+"/") {
			errs = append(errs, fmt.Errorf("render template: mounts entry %q: guest path %q overlaps the project path %q", m.Entry, m.Guest, o.ProjectDir))
		}
	}
	return errs
}

// portForwards returns the allowed forwards of cfg's ports, each from the host's 127.0.0.1,
// then the rule that ignores every other guest port.
func portForwards(c *policy.Config) ([]limayaml.PortForward, error) {
	ports, err := policy.ParsePorts(c.Ports)
	if err != nil {
		return nil, fmt.Errorf("render template: %w", err)
	}
	var out []limayaml.PortForward
	for _, p := range ports {
		out = append(out, limayaml.PortForward{
			GuestIP: net.IPv4zero.To4(), GuestPortRange: [2]int{p.Guest, p.Guest},
			HostIP: net.IPv4(127, 0, 0, 1).To4(), HostPortRange: [2]int{p.Host, p.Host},
			Proto: limayaml.ProtoTCP,
		})
	}
	// Ignore every other guest port: nothing in the box is published on the host by itself.
	return append(out, limayaml.PortForward{
		GuestIP: []byte{0, 0, 0, 0}, GuestPortRange: [2]int{1, 65535}, HostPortRange: [2]int{1, 65535},
		Proto: limayaml.ProtoAny, Ignore: true,
	}), nil
}

// recipeConfig is c without what reaches the host (mounts, ports): a golden build box shares
// only the guest recipe, and must neither mount a box's host directories nor bind its ports.
func recipeConfig(c *policy.Config) *policy.Config {
	if c == nil {
		return nil
	}
	r := *c
	r.Mounts, r.Ports = nil, nil
	return &r
}
