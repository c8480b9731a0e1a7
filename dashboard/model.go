package dashboard

import (
	"os/exec"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/git-corral/git-corral/broker"
	"github.com/git-corral/git-corral/internal/visible"
)

// egressRows is how many decisions the egress view of a box shows.
const egressRows = 200

// Config is what a Model needs besides its data.
type Config struct {
	// Load reads a snapshot (Loader.Load); Decisions reads a box's recent decisions.
	Load      func() (Snapshot, error)
	Decisions func(box string, n int) ([]broker.Entry, error)
	// Self is the git corral binary the actions run.
	Self string
	// Color turns on colour; the caller decides (a terminal, NO_COLOR unset, TERM not dumb).
	Color bool
	// Interval is how often the data is read again; 0 is one second.
	Interval time.Duration
	// Exec runs an action's command with the terminal handed over; nil is tea.ExecProcess.
	Exec func(c *exec.Cmd, done tea.ExecCallback) tea.Cmd
}

// Model is the dashboard's bubbletea model.
type Model struct {
	cfg    Config
	snap   Snapshot
	err    error
	sel    int
	width  int
	height int
	// egressBox is the box whose egress view is open; "" is the list.
	egressBox string
	egress    []broker.Entry
	egressErr error
	// confirm is the box a stop waits to be confirmed for.
	confirm string
	status  string
	styles  styles
}

// Messages.
type (
	snapshotMsg struct {
		snap Snapshot
		err  error
	}
	decisionsMsg struct {
		box     string
		entries []broker.Entry
		err     error
	}
	tickMsg   struct{}
	actionMsg struct {
		name, box string
		err       error
	}
)

// New returns a model that has not loaded anything yet.
func New(cfg Config) Model {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.Exec == nil {
		cfg.Exec = tea.ExecProcess
	}
	return Model{cfg: cfg, width: 80, height: 24, styles: newStyles(cfg.Color)}
}

// Init loads the first snapshot and starts polling.
func (m Model) Init() tea.Cmd {
	return tea.Batch(m.load(), m.tick())
}

func (m Model) load() tea.Cmd {
	return func() tea.Msg {
		s, err := m.cfg.Load()
		return snapshotMsg{s, err}
	}
}

func (m Model) loadDecisions(box string) tea.Cmd {
	return func() tea.Msg {
		e, err := m.cfg.Decisions(box, egressRows)
		return decisionsMsg{box, e, err}
	}
}

func (m Model) tick() tea.Cmd {
	return tea.Tick(m.cfg.Interval, func(time.Time) tea.Msg { return tickMsg{} })
}

// Update handles one message.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case snapshotMsg:
		// A failed read keeps the last snapshot on screen, under the error.
		if m.err = msg.err; msg.err == nil {
			m.snap = msg.snap
		}
		m.sel = min(m.sel, max(len(m.snap.Boxes)-1, 0))
	case decisionsMsg:
		if msg.box == m.egressBox {
			m.egress, m.egressErr = msg.entries, msg.err
		}
	case tickMsg:
		return m, tea.Batch(m.refresh(), m.tick())
	case actionMsg:
		m.status = actionStatus(msg)
		return m, m.refresh()
	case tea.KeyPressMsg:
		return m.key(msg.String())
	}
	return m, nil
}

// refresh reads the data the current view shows.
func (m Model) refresh() tea.Cmd {
	if m.egressBox != "" {
		return tea.Batch(m.load(), m.loadDecisions(m.egressBox))
	}
	return m.load()
}

// key handles one key press.
func (m Model) key(k string) (tea.Model, tea.Cmd) {
	if k == "q" || k == "ctrl+c" {
		return m, tea.Quit
	}
	if m.confirm != "" {
		return m.confirmStop(k)
	}
	m.status = ""
	switch k {
	case "up", "k":
		m.sel = max(m.sel-1, 0)
	case "down", "j":
		m.sel = min(m.sel+1, max(len(m.snap.Boxes)-1, 0))
	case "esc":
		m.egressBox, m.egress = "", nil
	case "r":
		return m, m.refresh()
	case "e":
		return m.openEgress()
	case "s":
		if b, ok := m.selected(); ok {
			m.confirm = b.Name
		}
	default:
		if a, ok := actionFor(k); ok {
			return m.run(a)
		}
	}
	return m, nil
}

// confirmStop stops the box on "y" and cancels on any other key.
func (m Model) confirmStop(k string) (tea.Model, tea.Cmd) {
	box := m.confirm
	m.confirm = ""
	if k != "y" {
		m.status = "stop cancelled"
		return m, nil
	}
	a, _ := actionFor("s")
	for _, b := range m.snap.Boxes {
		if b.Name == box {
			return m.runOn(a, b)
		}
	}
	return m, nil
}

func (m Model) openEgress() (tea.Model, tea.Cmd) {
	b, ok := m.selected()
	if !ok {
		return m, nil
	}
	m.egressBox, m.egress = b.Name, nil
	return m, m.loadDecisions(b.Name)
}

func (m Model) selected() (Box, bool) {
	if m.sel < 0 || m.sel >= len(m.snap.Boxes) {
		return Box{}, false
	}
	return m.snap.Boxes[m.sel], true
}

func (m Model) run(a action) (tea.Model, tea.Cmd) {
	b, ok := m.selected()
	if !ok {
		return m, nil
	}
	return m.runOn(a, b)
}

// runOn hands the terminal to git corral's own command for the action.
func (m Model) runOn(a action, b Box) (tea.Model, tea.Cmd) {
	argv, err := commandLine(m.cfg.Self, a, b)
	if err != nil {
		m.status = err.Error()
		return m, nil
	}
	name, box := a.name, b.Name
	c := exec.Command(argv[0], argv[1:]...)
	return m, m.cfg.Exec(c, func(err error) tea.Msg { return actionMsg{name, box, err} })
}

func actionStatus(msg actionMsg) string {
	if msg.err != nil {
		return msg.name + " " + visible.String(msg.box) + ": " + visible.String(strings.TrimSpace(msg.err.Error()))
	}
	return msg.name + " " + visible.String(msg.box) + ": done"
}
