package dashboard

import (
	"context"
	"fmt"
	"io"

	tea "charm.land/bubbletea/v2"
)

// Run shows the dashboard on the terminal in and out until the user quits (q) or ctx ends.
func Run(ctx context.Context, cfg Config, in io.Reader, out io.Writer) error {
	p := tea.NewProgram(New(cfg), tea.WithContext(ctx), tea.WithInput(in), tea.WithOutput(out))
	if _, err := p.Run(); err != nil {
		return fmt.Errorf("run dashboard: %w", err)
	}
	return nil
}
