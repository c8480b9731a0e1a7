package dashboard

import (
	"errors"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/mattn/go-runewidth"

	"github.com/git-corral/git-corral/broker"
	"github.com/git-corral/git-corral/internal/visible"
)

func sampleSnap() Snapshot {
	d := deny("evil.example", 443, "host not in allow-list")
	d.Box, d.Time = "alpha", time.Date(2026, 12, 1, 21, 0, 0, 0, time.UTC)
	return Snapshot{
		Taken: d.Time,
		Boxes: []Box{
			{Name: "alpha", State: "Running", Network: "broker", Project: "/src/alpha", Session: "live", Denials: 1, LastDenial: &d},
			{Name: "beta", State: "Stopped", Network: "off", Session: "none"},
			{Name: "gamma", State: StateAbsent, Session: "none"},
		},
		Recent: []broker.Entry{d},
	}
}

// execRecorder stands in for tea.ExecProcess and records the command lines actions run.
type execRecorder struct{ argv [][]string }

func (r *execRecorder) exec(c *exec.Cmd, done tea.ExecCallback) tea.Cmd {
	r.argv = append(r.argv, c.Args)
	return func() tea.Msg { return done(nil) }
}

func newTestModel(snap Snapshot, color bool, width int, rec *execRecorder) Model {
	cfg := Config{
		Load:      func() (Snapshot, error) { return snap, nil },
		Decisions: func(box string, n int) ([]broker.Entry, error) { return snap.Recent, nil },
		Self:      "/usr/bin/git-corral", Color: color,
	}
	if rec != nil {
		cfg.Exec = rec.exec
	}
	m := New(cfg)
	next, _ := m.Update(tea.WindowSizeMsg{Width: width, Height: 30})
	next, _ = next.Update(snapshotMsg{snap: snap})
	return next.(Model)
}

func press(t *testing.T, m Model, keys ...string) (Model, tea.Cmd) {
	t.Helper()
	var cmd tea.Cmd
	for _, k := range keys {
		var msg tea.KeyPressMsg
		switch k {
		case "enter":
			msg = tea.KeyPressMsg{Code: tea.KeyEnter}
		case "esc":
			msg = tea.KeyPressMsg{Code: tea.KeyEscape}
		default:
			msg = tea.KeyPressMsg{Code: []rune(k)[0], Text: k}
		}
		var next tea.Model
		next, cmd = m.Update(msg)
		m = next.(Model)
	}
	return m, cmd
}

// TestViewNoColorHasNoEscapes: with colour off the screen has no escape code at all; with it on
// (the control), the same screen has some.
func TestViewNoColorHasNoEscapes(t *testing.T) {
	plain := newTestModel(sampleSnap(), false, 120, nil).View().Content
	if strings.Contains(plain, "\x1b") {
		t.Errorf("colour off: view has an escape code:\n%q", plain)
	}
	if !strings.Contains(plain, "alpha") || !strings.Contains(plain, "evil.example:443") {
		t.Errorf("colour off: view lacks the box or its denial:\n%s", plain)
	}
	if colored := newTestModel(sampleSnap(), true, 120, nil).View().Content; !strings.Contains(colored, "\x1b[") {
		t.Errorf("colour on: view has no escape code, so the colour-off check proves nothing:\n%q", colored)
	}
}

// TestViewFitsNarrowTerminals: no line is wider than the terminal; columns drop as it narrows
// and are there when it is wide.
func TestViewFitsNarrowTerminals(t *testing.T) {
	for _, tc := range []struct {
		width      int
		has, hasnt []string
	}{
		{20, []string{"BOX"}, []string{"NETWORK", "LAST DENIAL"}},
		{40, []string{"BOX", "STATE", "DENIALS"}, []string{"NETWORK", "SESSION", "LAST DENIAL"}},
		{64, []string{"NETWORK", "IDLE"}, []string{"SESSION", "LAST DENIAL"}},
		{120, []string{"NETWORK", "SESSION", "IDLE", "LAST DENIAL"}, nil},
	} {
		v := newTestModel(sampleSnap(), false, tc.width, nil).View().Content
		for _, l := range strings.Split(v, "\n") {
			if w := runewidth.StringWidth(l); w > tc.width {
				t.Errorf("width %d: line of %d columns: %q", tc.width, w, l)
			}
		}
		for _, s := range tc.has {
			if !strings.Contains(v, s) {
				t.Errorf("width %d: no %q in\n%s", tc.width, s, v)
			}
		}
		for _, s := range tc.hasnt {
			if strings.Contains(v, s) {
				t.Errorf("width %d: %q shown in\n%s", tc.width, s, v)
			}
		}
	}
}

// TestHostileTextCannotDriveTheTerminal is the class of untrusted text reaching the screen:
// every field that comes from a file carries a control, C1, bidi or invisible character, and
// the screen shows each one escaped.
func TestHostileTextCannotDriveTheTerminal(t *testing.T) {
	for _, tc := range []struct{ name, bad string }{
		{"escape sequence", "\x1b[2J\x1b]0;owned\x07"},
		{"C1 CSI", "\u009b31m"},
		{"carriage return", "ok\rEVIL"},
		{"bidi override", "\u202egnp.exe"},
		{"zero width", "a\u200bb"},
		{"backspace", "x\b\b"},
		{"newline", "a\nFAKE LINE"},
	} {
		if !visible.Has(tc.bad) {
			t.Fatalf("%s: the probe %q has nothing to escape", tc.name, tc.bad)
		}
		snap := sampleSnap()
		d := deny("h"+tc.bad, 443, "r"+tc.bad)
		d.Box = "box" + tc.bad
		snap.Boxes[0].Name, snap.Boxes[0].Network, snap.Boxes[0].State = d.Box, tc.bad, tc.bad
		snap.Boxes[0].LastDenial, snap.Boxes[1].Problem = &d, "p"+tc.bad
		snap.Recent = []broker.Entry{d}
		m := newTestModel(snap, false, 400, nil)
		views := []string{m.View().Content}
		m, _ = press(t, m, "e")
		m.egress = snap.Recent
		views = append(views, m.View().Content)
		m, _ = press(t, m, "esc", "s")
		views = append(views, m.View().Content)
		for _, v := range views {
			for _, l := range strings.Split(v, "\n") {
				if visible.Has(l) {
					t.Errorf("%s: a raw character reached the screen: %q", tc.name, l)
				}
			}
			if !strings.Contains(v, visible.String(tc.bad)) {
				t.Errorf("%s: the escaped form %q is not shown:\n%s", tc.name, visible.String(tc.bad), v)
			}
		}
	}
}

// TestKeysRunGitCorralsOwnCommands: every action is git corral's own command line on the
// selected box; stop waits for "y".
func TestKeysRunGitCorralsOwnCommands(t *testing.T) {
	self := "/usr/bin/git-corral"
	for _, tc := range []struct {
		name string
		keys []string
		want [][]string
	}{
		{"stop confirmed", []string{"s", "y"}, [][]string{{self, "--box", "alpha", "stop"}}},
		{"stop cancelled", []string{"s", "n"}, nil},
		{"stop second box", []string{"j", "s", "y"}, [][]string{{self, "--box", "beta", "stop"}}},
		{"shell", []string{"enter"}, [][]string{{self, "-C", "/src/alpha", "shell"}}},
		{"shell with o", []string{"o"}, [][]string{{self, "-C", "/src/alpha", "shell"}}},
		{"start", []string{"u"}, [][]string{{self, "-C", "/src/alpha", "run", "--", "true"}}},
		{"start without project", []string{"j", "j", "u"}, nil},
		{"selection stops at the end", []string{"j", "j", "j", "j", "k", "s", "y"}, [][]string{{self, "--box", "beta", "stop"}}},
	} {
		rec := &execRecorder{}
		m, cmd := press(t, newTestModel(sampleSnap(), false, 120, rec), tc.keys...)
		if cmd != nil {
			if msg, ok := cmd().(actionMsg); ok {
				next, _ := m.Update(msg)
				m = next.(Model)
			}
		}
		if !reflect.DeepEqual(rec.argv, tc.want) {
			t.Errorf("%s: ran %q, want %q", tc.name, rec.argv, tc.want)
		}
		if tc.want == nil && tc.name == "start without project" && !strings.Contains(m.View().Content, "no project directory") {
			t.Errorf("%s: no reason shown:\n%s", tc.name, m.View().Content)
		}
	}
}

// TestQuitsOnQ: q quits from the list and from the egress view; other keys do not.
func TestQuitsOnQ(t *testing.T) {
	m := newTestModel(sampleSnap(), false, 80, nil)
	for _, keys := range [][]string{{"q"}, {"e", "q"}, {"s", "q"}} {
		_, cmd := press(t, m, keys...)
		if cmd == nil {
			t.Fatalf("%v: no command, want quit", keys)
		}
		if _, ok := cmd().(tea.QuitMsg); !ok {
			t.Errorf("%v: did not quit", keys)
		}
	}
	if _, cmd := press(t, m, "j"); cmd != nil {
		if _, ok := cmd().(tea.QuitMsg); ok {
			t.Error("j quit")
		}
	}
}

// TestEgressViewShowsTheBoxDecisions opens a box's egress view and goes back.
func TestEgressViewShowsTheBoxDecisions(t *testing.T) {
	m := newTestModel(sampleSnap(), false, 120, nil)
	m, cmd := press(t, m, "e")
	next, _ := m.Update(cmd())
	m = next.(Model)
	v := m.View().Content
	if !strings.Contains(v, "egress of box alpha") || !strings.Contains(v, "deny") || !strings.Contains(v, "host not in allow-list") {
		t.Fatalf("egress view:\n%s", v)
	}
	m, _ = press(t, m, "esc")
	if strings.Contains(m.View().Content, "egress of box") {
		t.Fatalf("esc did not go back:\n%s", m.View().Content)
	}
}

// TestFailedReadKeepsLastSnapshot: a poll that fails shows its error above the boxes it last
// read; the next good poll clears it.
func TestFailedReadKeepsLastSnapshot(t *testing.T) {
	m := newTestModel(sampleSnap(), false, 120, nil)
	next, _ := m.Update(snapshotMsg{err: errors.New("list boxes in /x: permission denied")})
	v := next.View().Content
	if !strings.Contains(v, "error: list boxes in /x: permission denied") || !strings.Contains(v, "alpha") {
		t.Fatalf("after a failed read:\n%s", v)
	}
	next, _ = next.Update(snapshotMsg{snap: sampleSnap()})
	if v := next.View().Content; strings.Contains(v, "error:") {
		t.Fatalf("after a good read the error stays:\n%s", v)
	}
}
