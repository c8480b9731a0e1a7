package main

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/git-corral/git-corral/vm"
)

// snapshotVerbs are the verbs of git corral snapshot.
var snapshotVerbs = []string{"create", "list", "restore", "delete"}

// snapshotDoc is the JSON of snapshot and undo.
type snapshotDoc struct {
	Box       string        `json:"box"`
	Action    string        `json:"action"`
	Snapshot  string        `json:"snapshot,omitempty"`
	Snapshots []vm.Snapshot `json:"snapshots,omitempty"`
	Note      string        `json:"note"`
}

func defineSnapshot(fs *pflag.FlagSet) runFunc {
	jsonOut := fs.Bool("json", false, "print one JSON document")
	stop := fs.Bool("stop", false, "stop a running box first (snapshots need a stopped box)")
	return func(ctx context.Context, a *app, args []string) error {
		if len(args) == 0 || len(args) > 2 {
			return usageErrorf("snapshot", "snapshot needs a verb (create, list, restore or delete) and at most one NAME")
		}
		verb, name := args[0], ""
		if len(args) == 2 {
			name = args[1]
			if err := vm.CheckSnapshotName(name); err != nil {
				return usageErrorf("snapshot", "%v", err)
			}
		}
		switch verb {
		case "create":
			if name == "" {
				name = "snap-" + time.Now().UTC().Format("20060102T150405Z")
			}
		case "restore", "delete":
			if name == "" {
				return usageErrorf("snapshot", "snapshot %s needs a NAME ('git corral snapshot list' shows them)", verb)
			}
		case "list":
		default:
			return usageErrorf("snapshot", "unknown snapshot verb %q (create, list, restore or delete)", verb)
		}
		return a.snapshotDo(ctx, verb, name, *stop, *jsonOut)
	}
}

func defineUndo(fs *pflag.FlagSet) runFunc {
	jsonOut := fs.Bool("json", false, "print one JSON document")
	stop := fs.Bool("stop", false, "stop a running box first (undo needs a stopped box)")
	return func(ctx context.Context, a *app, args []string) error {
		if len(args) > 0 {
			return usageErrorf("undo", "undo takes no arguments; 'git corral snapshot restore NAME' restores an older one")
		}
		return a.snapshotDo(ctx, "undo", "", *stop, *jsonOut)
	}
}

// snapshotDo runs one snapshot verb on this repository's box under its lock.
func (a *app) snapshotDo(ctx context.Context, verb, name string, stop, jsonOut bool) error {
	box, err := a.boxName(ctx)
	if err != nil {
		return err
	}
	m, err := a.manager()
	if err != nil {
		return err
	}
	unlock, err := m.Lock(ctx, box, func() { a.notice("waiting for another git corral working on box " + box) })
	if err != nil {
		return err
	}
	defer unlock()
	if stop && verb != "list" {
		if st, err := m.Inspect(box); err == nil && st.Status == "Running" {
			if err := m.Stop(ctx, box); err != nil {
				return withHint(err, "'git corral logs' shows what Lima said")
			}
			fmt.Fprintf(a.stderr, "box %s stopped\n", box)
		}
	}
	doc := snapshotDoc{Box: box, Action: verb, Snapshot: name, Note: vm.MountNote}
	switch verb {
	case "create":
		err = m.SnapshotCreate(ctx, box, name)
	case "restore":
		err = m.SnapshotRestore(ctx, box, name)
	case "delete":
		err = m.SnapshotDelete(ctx, box, name)
	case "undo":
		doc.Snapshot, err = a.newestSnapshot(ctx, m, box)
		if err == nil {
			err = m.SnapshotRestore(ctx, box, doc.Snapshot)
		}
	case "list":
		doc.Snapshots, err = m.Snapshots(ctx, box)
	}
	if err != nil {
		return snapshotHint(err, verb)
	}
	return a.printSnapshot(doc, jsonOut)
}

// newestSnapshot names the box's newest snapshot.
func (a *app) newestSnapshot(ctx context.Context, m *vm.Manager, box string) (string, error) {
	snaps, err := m.Snapshots(ctx, box)
	if err != nil {
		return "", err
	}
	if len(snaps) == 0 {
		return "", withHint(fmt.Errorf("undo box %s: the box has no snapshot", box),
			"'git corral snapshot create' takes one; snapshot = \"auto\" in the config takes one at each session start")
	}
	return snaps[len(snaps)-1].Name, nil
}

// snapshotHint adds the fix to a snapshot error.
func snapshotHint(err error, verb string) error {
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		return err
	case errors.Is(err, vm.ErrBoxRunning):
		return withHint(err, fmt.Sprintf("stop it first ('git corral stop'), or pass --stop: a running box with 9p mounts cannot be snapshotted and restoring it live leaves ssh stale (git corral %s)", verb))
	case errors.Is(err, vm.ErrNoBox):
		return withHint(err, "'git corral list' shows the boxes")
	}
	return withHint(err, "'git corral logs' shows what Lima said")
}

// printSnapshot prints the outcome, always with the note that the mounted project is not in it.
func (a *app) printSnapshot(doc snapshotDoc, jsonOut bool) error {
	if jsonOut {
		if doc.Action == "list" && doc.Snapshots == nil {
			doc.Snapshots = []vm.Snapshot{}
		}
		return a.printJSON(doc)
	}
	switch doc.Action {
	case "create":
		fmt.Fprintf(a.stdout, "snapshot %s of box %s taken\n", doc.Snapshot, doc.Box)
	case "restore", "undo":
		fmt.Fprintf(a.stdout, "box %s restored to snapshot %s\n", doc.Box, doc.Snapshot)
	case "delete":
		fmt.Fprintf(a.stdout, "snapshot %s of box %s deleted\n", doc.Snapshot, doc.Box)
	case "list":
		tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tCREATED\tAUTO")
		for _, s := range doc.Snapshots {
			fmt.Fprintf(tw, "%s\t%s\t%v\n", s.Name, s.Created.Format(time.RFC3339), s.Auto)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintf(a.stderr, "corral: note: %s\n", vm.MountNote)
	return nil
}
