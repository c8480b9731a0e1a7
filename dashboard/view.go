package dashboard

import (
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/mattn/go-runewidth"

	"github.com/git-corral/git-corral/broker"
	"github.com/git-corral/git-corral/internal/visible"
)

// styles are the view's colours. With colour off every style is plain: no escape at all.
type styles struct {
	title, header, selected, deny lipgloss.Style
}

func newStyles(color bool) styles {
	if !color {
		p := lipgloss.NewStyle()
		return styles{title: p, header: p, selected: p, deny: p}
	}
	return styles{
		title:    lipgloss.NewStyle().Bold(true),
		header:   lipgloss.NewStyle().Bold(true).Underline(true),
		selected: lipgloss.NewStyle().Reverse(true),
		deny:     lipgloss.NewStyle().Foreground(lipgloss.Red),
	}
}

// column is one column of the box list; minWidth is the terminal width it needs to be shown.
type column struct {
	title    string
	minWidth int
	cell     func(b Box) string
}

var columns = []column{
	{"BOX", 0, func(b Box) string { return b.Name }},
	{"STATE", 0, func(b Box) string { return b.State }},
	{"NETWORK", 60, func(b Box) string { return dash(b.Network) }},
	{"SESSION", 72, func(b Box) string { return b.Session }},
	{"IDLE", 60, func(b Box) string { return idle(b) }},
	{"DENIALS", 0, func(b Box) string { return fmt.Sprint(b.Denials) }},
	{"LAST DENIAL", 96, func(b Box) string { return lastDenial(b) }},
}

// View draws the current screen, on the terminal's alternate screen.
func (m Model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	return v
}

// render draws the current screen as text.
func (m Model) render() string {
	var lines []string
	if m.egressBox != "" {
		lines = m.egressView()
	} else {
		lines = m.listView()
	}
	lines = append(lines, "", m.footer())
	for i, l := range lines {
		lines[i] = runewidth.Truncate(l, max(m.width, 1), "")
	}
	return m.paint(lines)
}

// paint styles whole lines after they are cut to width, so an escape is never cut in half.
func (m Model) paint(lines []string) string {
	for i, l := range lines {
		switch {
		case i == 0:
			lines[i] = m.styles.title.Render(l)
		case strings.HasPrefix(l, "> "):
			lines[i] = m.styles.selected.Render(l)
		case strings.HasPrefix(l, "  BOX ") || strings.HasPrefix(l, "TIME "):
			lines[i] = m.styles.header.Render(l)
		case strings.Contains(l, " deny "):
			lines[i] = m.styles.deny.Render(l)
		}
	}
	return strings.Join(lines, "\n")
}

func (m Model) listView() []string {
	lines := []string{fmt.Sprintf("git corral dashboard: %d boxes, read %s", len(m.snap.Boxes), clock(m.snap.Taken))}
	if m.err != nil {
		lines = append(lines, "error: "+visible.String(m.err.Error()))
	}
	var cols []column
	for _, c := range columns {
		if m.width >= c.minWidth {
			cols = append(cols, c)
		}
	}
	rows := [][]string{titles(cols)}
	for _, b := range m.snap.Boxes {
		rows = append(rows, cells(cols, b))
	}
	for i, l := range table(rows) {
		mark := "  "
		if i > 0 && i-1 == m.sel {
			mark = "> "
		}
		lines = append(lines, mark+l)
	}
	for _, b := range m.snap.Boxes {
		if b.Problem != "" {
			lines = append(lines, "  "+visible.String(b.Name)+": "+visible.String(b.Problem))
		}
	}
	if len(m.snap.Boxes) == 0 {
		lines = append(lines, "no boxes yet: 'git corral start' in a repository makes one")
	}
	return append(lines, m.recentView()...)
}

// recentView lists the newest denials of every box, as many as fit.
func (m Model) recentView() []string {
	room := m.height - len(m.snap.Boxes) - 8
	recent := m.snap.Recent
	if room < 1 || len(recent) == 0 {
		return nil
	}
	if len(recent) > room {
		recent = recent[len(recent)-room:]
	}
	lines := []string{"", "recent denials:"}
	rows := [][]string{}
	for _, e := range recent {
		rows = append(rows, []string{clock(e.Time), visible.String(e.Box), "deny", visible.String(hostPort(e.Host, e.Port)), visible.String(e.Reason)})
	}
	for _, l := range table(rows) {
		lines = append(lines, "  "+l)
	}
	return lines
}

func (m Model) egressView() []string {
	lines := []string{fmt.Sprintf("egress of box %s: its newest decisions, newest last (esc: back)", visible.String(m.egressBox))}
	if m.egressErr != nil {
		lines = append(lines, "error: "+visible.String(m.egressErr.Error()))
	}
	if len(m.egress) == 0 {
		return append(lines, "no connection attempts logged")
	}
	entries := m.egress
	if room := m.height - 5; room > 0 && len(entries) > room {
		entries = entries[len(entries)-room:]
	}
	rows := [][]string{{"TIME", "DECISION", "DESTINATION", "STATUS", "RULE OR REASON"}}
	for _, e := range entries {
		why := e.Rule
		if e.Decision == broker.Deny {
			why = e.Reason
		}
		rows = append(rows, []string{clock(e.Time), visible.String(e.Decision), visible.String(hostPort(e.Host, e.Port)), fmt.Sprint(e.Status), visible.String(why)})
	}
	return append(lines, table(rows)...)
}

func (m Model) footer() string {
	switch {
	case m.confirm != "":
		return fmt.Sprintf("stop box %s? y: stop, any other key: cancel", visible.String(m.confirm))
	case m.status != "":
		return m.status
	case m.egressBox != "":
		return "esc back · r refresh · q quit"
	}
	return "↑/↓ select · enter shell · u start · s stop · e egress · r refresh · q quit"
}

func titles(cols []column) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.title
	}
	return out
}

// cells renders b's row; every value from a file is made visible first.
func cells(cols []column, b Box) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = visible.String(c.cell(b))
	}
	return out
}

// table aligns rows into columns two spaces apart.
func table(rows [][]string) []string {
	var widths []int
	for _, r := range rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], runewidth.StringWidth(c))
		}
	}
	out := make([]string, len(rows))
	for j, r := range rows {
		var sb strings.Builder
		for i, c := range r {
			if i == len(r)-1 {
				sb.WriteString(c)
				break
			}
			sb.WriteString(runewidth.FillRight(c, widths[i]+2))
		}
		out[j] = strings.TrimRight(sb.String(), " ")
	}
	return out
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func idle(b Box) string {
	if b.Idle <= 0 {
		return "-"
	}
	return b.Idle.String()
}

func lastDenial(b Box) string {
	if b.LastDenial == nil {
		return "-"
	}
	e := b.LastDenial
	return fmt.Sprintf("%s %s (%s)", clock(e.Time), hostPort(e.Host, e.Port), e.Reason)
}

func clock(t time.Time) string {
	if t.IsZero() {
		return "--:--:--"
	}
	return t.Local().Format(time.TimeOnly)
}

// hostPort joins a logged host and port as the egress command shows them.
func hostPort(host string, port int) string {
	if port == 0 {
		return host
	}
	if strings.Contains(host, ":") {
		return fmt.Sprintf("[%s]:%d", host, port)
	}
	return fmt.Sprintf("%s:%d", host, port)
}
