// Package audit owns $CORRAL_HOME/logs/sessions.jsonl: whole JSON lines appended under a lock,
// recording names and never secret values, and the reader behind git corral audit.
package audit
