package replication

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestStallLogWarnsPastHalfAnElection checks the raft loop's stall
// warning: nothing below half an election timeout, one line naming what
// stopped and for how long above it, and no second line within 5 s.
func TestStallLogWarnsPastHalfAnElection(t *testing.T) {
	var buf bytes.Buffer
	n := &Node{cfg: Config{TickInterval: 50 * time.Millisecond, ElectionTicks: 20}, log: slog.New(slog.NewTextHandler(&buf, nil))}
	var s stallLog
	s.note(n, "the raft loop did not tick", 400*time.Millisecond)
	if buf.Len() != 0 {
		t.Fatalf("warned below half an election timeout: %s", buf.String())
	}
	s.note(n, "the raft loop did not tick", 1200*time.Millisecond)
	if out := buf.String(); !strings.Contains(out, "did not tick") || !strings.Contains(out, "for=1.2s") {
		t.Fatalf("warning = %q, want what stopped and for=1.2s", out)
	}
	buf.Reset()
	s.note(n, "persisting raft's output took long", 2*time.Second)
	if buf.Len() != 0 {
		t.Fatalf("a second warning within 5 s: %s", buf.String())
	}
}
