package audit

import (
	"context"
	"encoding/json"
	"fmt"
)

// AppendValue writes v, encoded as JSON, as one whole line under the same lock, rotation and
// repair rules as Append. It is for the other logs the product keeps beside sessions.jsonl
// (logs/sandbox.jsonl), whose records are not Records; the caller keeps them to names, never
// values.
func (l *Log) AppendValue(ctx context.Context, v any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	line, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("audit: encode %T record: %w", v, err)
	}
	return l.appendLine(append(line, '\n'))
}
