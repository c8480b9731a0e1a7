package dashboard

import (
	"errors"
	"fmt"
)

// An action is something a key does to the selected box. Each is git corral's own command, run
// as a child with the terminal handed over, so the same guards, locks and audit apply as when
// the user types it.
type action struct {
	// key is the key that starts it; name is what the status line calls it.
	key, name string
	// argv builds the command line after the git corral binary.
	argv func(b Box) ([]string, error)
}

// errNoProject is returned for an action that needs the box's project directory when its
// metadata records none.
var errNoProject = errors.New("its metadata records no project directory")

var actions = []action{
	{key: "s", name: "stop", argv: func(b Box) ([]string, error) {
		return []string{"--box", b.Name, "stop"}, nil
	}},
	{key: "u", name: "start", argv: func(b Box) ([]string, error) {
		if b.Project == "" {
			return nil, errNoProject
		}
		return []string{"-C", b.Project, "run", "--", "true"}, nil
	}},
	{key: "enter", name: "shell", argv: func(b Box) ([]string, error) {
		if b.Project == "" {
			return nil, errNoProject
		}
		return []string{"-C", b.Project, "shell"}, nil
	}},
}

// actionFor returns the action bound to key.
func actionFor(key string) (action, bool) {
	if key == "o" {
		key = "enter"
	}
	for _, a := range actions {
		if a.key == key {
			return a, true
		}
	}
	return action{}, false
}

// commandLine returns the whole argv of an action on b: self, then the action's arguments.
func commandLine(self string, a action, b Box) ([]string, error) {
	args, err := a.argv(b)
	if err != nil {
		return nil, fmt.Errorf("%s box %q: %w", a.name, b.Name, err)
	}
	return append([]string{self}, args...), nil
}
