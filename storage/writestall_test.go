package storage

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// TestWriteStallListener checks the lines a write stall logs: its reason
// when it begins, how long it lasted when it ends, and nothing for an end
// without a beginning.
func TestWriteStallListener(t *testing.T) {
	var buf bytes.Buffer
	l := writeStallListener(slog.New(slog.NewTextHandler(&buf, nil)))
	l.WriteStallEnd()
	if buf.Len() != 0 {
		t.Fatalf("an end without a stall logged %q", buf.String())
	}
	l.WriteStallBegin(pebble.WriteStallBeginInfo{Reason: "memtable count limit reached"})
	l.WriteStallEnd()
	out := buf.String()
	for _, want := range []string{"stopped writes", "memtable count limit reached", "resumed writes", "stopped_for="} {
		if !strings.Contains(out, want) {
			t.Fatalf("log %q lacks %q", out, want)
		}
	}
}
