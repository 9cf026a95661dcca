package replication

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
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

// TestWatchStallsDumpsGoroutines checks that a raft loop stuck in Process
// past half an election timeout leaves a goroutine dump in the dump
// directory, and one only.
func TestWatchStallsDumpsGoroutines(t *testing.T) {
	dir := t.TempDir()
	var buf bytes.Buffer
	n := &Node{cfg: Config{TickInterval: 10 * time.Millisecond, ElectionTicks: 10, StallDumpDir: dir},
		log: slog.New(slog.NewTextHandler(&buf, nil)), stopc: make(chan struct{})}
	done := make(chan struct{})
	go func() { n.watchStalls(); close(done) }()
	n.processing.Store(time.Now().UnixNano())
	deadline := time.Now().Add(5 * time.Second)
	var files []string
	for len(files) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		files, _ = filepath.Glob(filepath.Join(dir, "stall-*.txt"))
	}
	time.Sleep(200 * time.Millisecond) // a second dump would come within this
	close(n.stopc)
	<-done
	files, _ = filepath.Glob(filepath.Join(dir, "stall-*.txt"))
	if len(files) != 1 {
		t.Fatalf("%d dumps, want 1 (log: %s)", len(files), buf.String())
	}
	data, err := os.ReadFile(files[0])
	if err != nil || !strings.Contains(string(data), "goroutine ") || !strings.Contains(string(data), "watchStalls") {
		t.Fatalf("the dump holds no goroutine stacks: %v %.200s", err, data)
	}
	if !strings.Contains(buf.String(), files[0]) {
		t.Fatalf("the warning does not name the dump: %s", buf.String())
	}
}
