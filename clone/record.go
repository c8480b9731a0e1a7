package clone

// The record rules: DIR of "git corral clone URL DIR" holds only RecordName, which names the
// box for people and tools. git corral never trusts it to say where the store is: the box is
// always derived from DIR's real path and the store from $CORRAL_HOME, so a planted record in a
// downloaded directory cannot point fetch at another repository.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/git-corral/git-corral/internal/atomicfile"
)

// RecordName is the file in a clone directory.
const RecordName = ".corral-clone.json"

// Record is the content of RecordName.
type Record struct {
	// Box is the box name.
	Box string `json:"box"`
	// Source is the repository address cloned.
	Source string `json:"source"`
	// GuestDir is the checkout's path in the box.
	GuestDir string `json:"guestDir"`
	// Branch is the branch checked out in the box.
	Branch string `json:"branch"`
	// Delivered is true once the box has the checkout.
	Delivered bool `json:"delivered"`
}

// WriteRecord writes r into dir atomically.
func WriteRecord(dir string, r Record) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, RecordName), append(data, '\n'), 0o644)
}

// ErrNoRecord is returned when no clone directory encloses the start directory.
var ErrNoRecord = errors.New("not in a git corral clone directory")

// FindRecord looks for RecordName in start and its parents and returns the directory and record.
func FindRecord(start string) (string, *Record, error) {
	dir, err := filepath.Abs(start)
	if err != nil {
		return "", nil, err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, RecordName))
		if err == nil {
			var r Record
			if err := json.Unmarshal(data, &r); err != nil {
				return "", nil, fmt.Errorf("read %s: %w", filepath.Join(dir, RecordName), err)
			}
			return dir, &r, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", nil, fmt.Errorf("%w (no %s in %s or above)", ErrNoRecord, RecordName, start)
		}
		dir = parent
	}
}
