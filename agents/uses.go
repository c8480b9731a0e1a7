package agents

// This file is the per-box record of which agents a box uses: boxes/<box>.json, one small
// JSON file per box written atomically. It is a record for `git corral agents`, never an
// input to what a box may run.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/git-corral/git-corral/internal/atomicfile"
)

// Use is one box's record of an agent it uses.
type Use struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// usesFile is the record of box.
func usesFile(home, box string) string { return filepath.Join(Dir(home), "boxes", box+".json") }

// RecordUse records that box uses inst, replacing any earlier record of the same agent. The
// session calls it after Ensure.
func (s *Store) RecordUse(box string, inst Installed) error {
	if err := checkName("box", box); err != nil {
		return fmt.Errorf("record agent use: %w", err)
	}
	uses, err := readUses(usesFile(s.home, box))
	if err != nil {
		return err
	}
	uses = slices.DeleteFunc(uses, func(u Use) bool { return u.Name == inst.Name })
	uses = append(uses, Use{Name: inst.Name, Version: inst.Version})
	slices.SortFunc(uses, func(a, b Use) int { return strings.Compare(a.Name, b.Name) })
	data, err := json.MarshalIndent(uses, "", "  ")
	if err != nil {
		return err
	}
	name := usesFile(s.home, box)
	if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
		return fmt.Errorf("record agent use: %w", err)
	}
	return atomicfile.Write(name, append(data, '\n'), 0o600)
}

// Uses returns every box's recorded agents, by box name.
func (s *Store) Uses() (map[string][]Use, error) {
	dir := filepath.Join(Dir(s.home), "boxes")
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return map[string][]Use{}, nil
	} else if err != nil {
		return nil, fmt.Errorf("agent uses: %w", err)
	}
	out := map[string][]Use{}
	for _, e := range ents {
		box, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || e.IsDir() || strings.HasPrefix(box, ".") {
			continue
		}
		uses, err := readUses(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out[box] = uses
	}
	return out, nil
}

// readUses reads one box's record; a missing file is an empty record.
func readUses(name string) ([]Use, error) {
	data, err := os.ReadFile(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("read agent uses %q: %w", name, err)
	}
	var uses []Use
	if err := json.Unmarshal(data, &uses); err != nil {
		return nil, fmt.Errorf("read agent uses %q: %w (delete the file to start the record again)", name, err)
	}
	return uses, nil
}

// BoxUse is one box's use of one agent version, for listings.
type BoxUse struct {
	Box     string `json:"box"`
	Version string `json:"version"`
}
