package visible

import "io"

// Writer writes text from an untrusted source (a box's stderr) to W with control, bidi and
// zero-width characters escaped, line by line as Lines does.
type Writer struct{ W io.Writer }

func (e *Writer) Write(p []byte) (int, error) {
	if _, err := io.WriteString(e.W, Lines(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
