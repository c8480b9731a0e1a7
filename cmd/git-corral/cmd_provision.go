package main

import (
	"runtime"

	"context"
	"encoding/json"
	"fmt"
	"github.com/git-corral/git-corral/session"
	"github.com/git-corral/git-corral/vm"
	"github.com/lima-vm/lima/pkg/limayaml"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/git-corral/git-corral/internal/atomicfile"
	"github.com/git-corral/git-corral/policy"
	"github.com/git-corral/git-corral/provision"
)

// renderBrokerPort stands in for the broker's port, which start chooses per box, when render
// is not told one.
const renderBrokerPort = 18080

// renderManifest is manifest.json in the render output.
type renderManifest struct {
	Box        string           `json:"box"`
	Network    string           `json:"network"`
	User       string           `json:"user"`
	ProjectDir string           `json:"projectDir"`
	BrokerPort int              `json:"brokerPort"`
	Scripts    []renderedScript `json:"scripts"`
}

type renderedScript struct {
	Name   string `json:"name"`
	Mode   string `json:"mode"`
	SHA256 string `json:"sha256"`
}

func defineProvision(fs *pflag.FlagSet) runFunc {
	out := fs.String("out", "", "directory to write the scripts and manifest.json into")
	network := fs.String("network", "", "network mode to render for: full, broker or offline")
	brokerPort := fs.Int("broker-port", 0, "broker port on the gateway (broker mode)")
	return func(ctx context.Context, a *app, args []string) error {
		if len(args) != 1 || args[0] != "render" {
			return usageErrorf("provision", "provision takes one verb: render")
		}
		if *out == "" {
			return usageErrorf("provision", "provision render needs --out DIR")
		}
		p, h, box, cfg, err := a.provisionContext(ctx)
		if err != nil {
			return err
		}
		if *network != "" {
			switch n := policy.Network(*network); n {
			case policy.NetworkFull, policy.NetworkBroker, policy.NetworkOffline:
				cfg.Network = n
			default:
				return usageErrorf("provision", "--network %q: want full, broker or offline", *network)
			}
		}
		port := *brokerPort
		if port == 0 {
			port = renderBrokerPort
		}
		// What a session would refuse is refused here too, by the same guards, before
		// anything is written (session/preview.go).
		extra, err := session.CheckMounts(h, p, cfg, a.getenv)
		if err != nil {
			return err
		}
		_, b, err := session.RenderGuest(ctx, p, h, box, cfg, port)
		if err != nil {
			return err
		}
		user := vm.GuestUser()
		m := renderManifest{Box: box, Network: string(cfg.Network), User: user, ProjectDir: p.TopLevel, BrokerPort: port}
		if err := a.writeRendered(ctx, *out, b, m); err != nil {
			return err
		}
		return a.writeTemplate(ctx, *out, h.Images(), p.TopLevel, session.GitMounts(p), cfg, b, extra, session.AgentMountSet(h, box, cfg.AgentState, a.getenv("HOME")))
	}
}

// writeRendered writes every script and the manifest into dir, each file atomically.
func (a *app) writeRendered(ctx context.Context, dir string, b provision.Bundle, m renderManifest) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	for _, s := range b.Scripts {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := atomicfile.Write(filepath.Join(dir, s.Name), []byte(s.Body), 0o755); err != nil {
			return err
		}
		m.Scripts = append(m.Scripts, renderedScript{Name: s.Name, Mode: string(s.Mode), SHA256: provision.SHA256Hex(s.Body)})
		fmt.Fprintf(a.stdout, "wrote %s\n", filepath.Join(dir, s.Name))
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(dir, "manifest.json")
	if err := atomicfile.Write(path, append(data, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "wrote %s\n", path)
	return nil
}

// writeTemplate writes the Lima template the box would be created from, with the extra mounts
// session.CheckMounts passed, checked by Lima's own validator. Without a built base image the
// template names where the image will be.
func (a *app) writeTemplate(ctx context.Context, dir, userImages, top string, gitMounts []string, cfg *policy.Config, b provision.Bundle, extra []vm.ExtraMount, agents vm.AgentMounts) error {
	img, err := vm.FindImage(vm.ImageDirs(userImages, a.getenv), vm.HostArch())
	if err != nil {
		img = vm.Image{Hash: vm.RecipeHash(), Arch: vm.HostArch(), Dir: filepath.Join(vm.SystemImageDir, vm.RecipeHash())}
	}
	y, err := vm.Render(vm.TemplateOptions{
		HostOS: runtime.GOOS, Arch: limayaml.NewArch(runtime.GOARCH), ProjectDir: top, GitMounts: gitMounts, Config: cfg,
		Bundle: b, Image: img, MountType: vm.MountTypeLinux(ctx), TCG: true, ExtraMounts: extra, Agents: agents,
	})
	if err != nil {
		return err
	}
	data, err := vm.Marshal(y)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, "lima.yaml")
	if err := vm.Validate(data, path); err != nil {
		return err
	}
	if err := atomicfile.Write(path, data, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "wrote %s\n", path)
	return nil
}
