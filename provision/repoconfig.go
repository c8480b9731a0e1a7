package provision

// This file is a stand-in until policy.Load lands: it reads only `network`, `provision` and
// `packages` from the repository's .corral.toml on top of policy.Default(). Callers should
// switch to policy.Load and RequestFromConfig; nothing else depends on this reader.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/BurntSushi/toml"

	"github.com/git-corral/git-corral/policy"
)

// ReadRepoConfig returns policy.Default() with the repository's `network`, `provision` and
// `packages` from TOP/.corral.toml applied, when that file exists.
func ReadRepoConfig(ctx context.Context, top string) (*policy.Config, error) {
	cfg := policy.Default()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	path := filepath.Join(top, ".corral.toml")
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return cfg, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() || fi.Size() > MaxScriptSize {
		return nil, fmt.Errorf("read %s: not a regular file of at most %d bytes", path, MaxScriptSize)
	}
	var raw struct {
		Network   *string  `toml:"network"`
		Provision []string `toml:"provision"`
		Packages  []string `toml:"packages"`
	}
	if _, err := toml.DecodeFile(path, &raw); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if raw.Network != nil {
		switch n := policy.Network(*raw.Network); n {
		case policy.NetworkFull, policy.NetworkBroker, policy.NetworkOffline:
			cfg.Network = n
		default:
			return nil, fmt.Errorf("read %s: network = %q: want full, broker or offline", path, *raw.Network)
		}
	}
	cfg.Provision = raw.Provision
	cfg.Packages = raw.Packages
	return cfg, nil
}
