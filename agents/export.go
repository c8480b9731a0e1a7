package agents

// This file carries the agent store to a host that cannot reach the npm registry (an
// air-gapped host, a Mac behind a proxy), in the one-file format of internal/exportfile.
// Rules:
//   - an export holds store/ as it is (entries, Node runtimes, launchers), after the checks of
//     `agents verify` passed on it in full; a store that fails them is not exported (Verify
//     repairs it first), and an interrupted install's staging directory is left out;
//   - an import is read into a staging store beside the real one and judged there by the same
//     checks (every file's sha512 against its entry's manifest, every link resolved inside its
//     package, the layout, the launchers byte for byte), refusing instead of deleting; the
//     file itself refuses devices, FIFOs, hard links and links that leave the tree (exportfile);
//   - an import of another guest platform than this host's boxes (linux-x64, linux-arm64) is
//     refused before its payload is read;
//   - installing renames each entry into the store (an entry is complete or absent), keeps an
//     entry already there that passes a full check, and writes a launcher only for an agent
//     that has none: the host's own choice of version stands.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/git-corral/git-corral/internal/exportfile"
)

// ExportKind is the kind of an agent store export file.
const ExportKind = "git-corral-agents"

// exportMeta is an agent export's metadata.
type exportMeta struct {
	Platform Platform `json:"platform"`
}

// Export checks the store in full and writes it to dst; it returns the entries written
// ("name@version").
func (s *Store) Export(ctx context.Context, dst string) ([]string, error) {
	unlock, err := s.lock(nil)
	if err != nil {
		return nil, err
	}
	defer unlock()
	store := StoreDir(s.home)
	if _, err := os.Stat(store); err != nil {
		return nil, fmt.Errorf("export agents: the store %s is empty: install an agent first ('git corral agents install NAME')", store)
	}
	if err := s.verifyTree(ctx, &verifier{store: store, refuse: true, platform: s.opt.Platform}); err != nil {
		return nil, fmt.Errorf("export agents: %w; run 'git corral agents verify' (it deletes what fails; the next install fetches it again)", err)
	}
	entries, err := exportfile.Scan(ctx, store, true, func(rel string) bool {
		return strings.HasPrefix(filepath.Base(rel), ".stage-") || strings.HasSuffix(rel, ".tmp")
	})
	if err != nil {
		return nil, err
	}
	if err := exportfile.Write(ctx, dst, ExportKind, exportMeta{Platform: s.opt.Platform}, store, entries); err != nil {
		return nil, err
	}
	return s.entryNames(store)
}

// Import checks the export file src and installs its entries into the store; it returns the
// entries installed and those already there.
func (s *Store) Import(ctx context.Context, src string, progress io.Writer) (installed, present []string, err error) {
	unlock, err := s.lock(progress)
	if err != nil {
		return nil, nil, err
	}
	defer unlock()
	work, err := os.MkdirTemp(Dir(s.home), ".import-")
	if err != nil {
		return nil, nil, fmt.Errorf("import agents: %w", err)
	}
	defer os.RemoveAll(work)
	stage := filepath.Join(work, "store")
	if err := os.Mkdir(stage, 0o755); err != nil {
		return nil, nil, err
	}
	check := func(h exportfile.Header) error {
		var m exportMeta
		if err := json.Unmarshal(h.Meta, &m); err != nil {
			return fmt.Errorf("%s: metadata: %w", src, err)
		}
		if m.Platform != s.opt.Platform {
			return fmt.Errorf("%s holds agents for %q guests, but this host's boxes are %q: %w; export the store of a host whose boxes are %s",
				src, m.Platform, s.opt.Platform, ErrPlatform, s.opt.Platform)
		}
		return nil
	}
	if _, err := exportfile.Read(ctx, src, stage, exportfile.ReadOptions{Kind: ExportKind, AllowLinks: true, Check: check}); err != nil {
		return nil, nil, err
	}
	if err := s.verifyTree(ctx, &verifier{store: stage, refuse: true, platform: s.opt.Platform}); err != nil {
		return nil, nil, fmt.Errorf("import agents: %s: %w; nothing was installed: export it again from a store that 'git corral agents verify' passes", src, err)
	}
	return s.install(stage, progress)
}

// ErrPlatform: an agent export is for another guest platform.
var ErrPlatform = errors.New("agent export of another platform")

// install renames every entry of the verified staging store into the store.
func (s *Store) install(stage string, progress io.Writer) (installed, present []string, err error) {
	names, err := s.entryNames(stage)
	if err != nil {
		return nil, nil, err
	}
	for _, nv := range names {
		name, version, _ := strings.Cut(nv, "@")
		dst := s.entryDir(name, version)
		if _, err := checkEntry(dst, true); err == nil {
			present = append(present, nv)
			continue
		}
		if err := realDir(filepath.Dir(dst), progress); err != nil {
			return installed, present, err
		}
		if err := os.RemoveAll(dst); err != nil {
			return installed, present, fmt.Errorf("import agents: replace %s: %w", dst, err)
		}
		if err := os.Rename(filepath.Join(stage, name, version), dst); err != nil {
			return installed, present, fmt.Errorf("import agents: install %s: %w", dst, err)
		}
		installed = append(installed, nv)
	}
	for _, a := range s.agents {
		version, err := os.Readlink(filepath.Join(stage, "bin", a.Name+".version"))
		if err != nil || s.current(a.Name) != "" {
			continue
		}
		node := ""
		if a.NeedsNode {
			node = DefaultNodeVersion
		}
		if _, err := s.writeLauncher(a, version, node); err != nil {
			return installed, present, err
		}
	}
	return installed, present, nil
}

// entryNames lists "name@version" of every entry under store (agents and node).
func (s *Store) entryNames(store string) ([]string, error) {
	var out []string
	for _, name := range append(s.agentNames(), "node") {
		ents, err := os.ReadDir(filepath.Join(store, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		} else if err != nil {
			return nil, err
		}
		for _, e := range ents {
			if e.IsDir() && validVersion(e.Name()) == nil {
				out = append(out, name+"@"+e.Name())
			}
		}
	}
	return out, nil
}

func (s *Store) agentNames() []string {
	var out []string
	for _, a := range s.agents {
		out = append(out, a.Name)
	}
	return out
}
