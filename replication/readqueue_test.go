package replication

import (
	"testing"
	"time"
)

// TestReadQueue drives the causal-read bookkeeping through rounds that
// overlap, answers that skip a dropped round, late answers, timeouts, the
// bound on rounds in flight, and rounds whose read link broke.
func TestReadQueue(t *testing.T) {
	t0 := time.Unix(0, 0)
	type step struct {
		do      string // "add", "start", "link" (start over the read link), "finish", "expire", "drain", "unlink", "reissue"
		ctx     uint64 // finish: the context raft answered; unlink: the round (0: all)
		at      time.Duration
		want    int    // callers served (finish, expire, drain), 1/0 started (start, link) or marked (unlink), rounds to reissue
		wantCtx uint64 // start: the new round's context
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"rounds overlap and finish in order", []step{
			{do: "add"}, {do: "start", want: 1, wantCtx: 1},
			{do: "add"}, {do: "add"}, {do: "start", want: 1, wantCtx: 2},
			{do: "finish", ctx: 1, want: 1},
			{do: "finish", ctx: 2, want: 2},
			{do: "drain", want: 0},
		}},
		{"nothing pending starts nothing", []step{
			{do: "start", want: 0},
			{do: "add"}, {do: "start", want: 1, wantCtx: 1}, {do: "start", want: 0},
		}},
		{"an answer serves the earlier dropped rounds", []step{
			{do: "add"}, {do: "start", want: 1, wantCtx: 1},
			{do: "add"}, {do: "start", want: 1, wantCtx: 2},
			{do: "add"}, {do: "start", want: 1, wantCtx: 3},
			{do: "finish", ctx: 2, want: 2},
			{do: "finish", ctx: 1, want: 0}, // late answer of a served round
			{do: "finish", ctx: 3, want: 1},
		}},
		{"timeouts fail the old rounds only", []step{
			{do: "add"}, {do: "start", want: 1, wantCtx: 1},
			{do: "add"}, {do: "add"}, {do: "start", at: 600 * time.Millisecond, want: 1, wantCtx: 2},
			{do: "expire", at: 900 * time.Millisecond, want: 0},
			{do: "expire", at: 1000 * time.Millisecond, want: 1},
			{do: "finish", ctx: 1, want: 0},
			{do: "add"}, // pending, not in flight: not expired
			{do: "expire", at: 1600 * time.Millisecond, want: 2},
			{do: "drain", want: 1},
		}},
		{"rounds of a broken read link go to raft once", []step{
			{do: "add"}, {do: "link", want: 1, wantCtx: 1},
			{do: "add"}, {do: "start", want: 1, wantCtx: 2},
			{do: "add"}, {do: "link", want: 1, wantCtx: 3},
			{do: "unlink", ctx: 2, want: 0}, // asked through raft already
			{do: "unlink", ctx: 3, want: 1},
			{do: "reissue", want: 1},
			{do: "unlink", want: 1}, // round 1 is left on the link
			{do: "reissue", want: 1},
			{do: "reissue", want: 0},
			{do: "finish", ctx: 3, want: 3},
		}},
		{"rounds in flight are bounded", func() []step {
			var s []step
			for i := 1; i <= maxReadRounds; i++ {
				s = append(s, step{do: "add"}, step{do: "start", want: 1, wantCtx: uint64(i)})
			}
			return append(s, step{do: "add"}, step{do: "add"}, step{do: "start", want: 0},
				step{do: "finish", ctx: 1, want: 1},
				step{do: "start", want: 1, wantCtx: maxReadRounds + 1},
				step{do: "drain", want: maxReadRounds + 1})
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var q ReadQueue[*readWaiter]
			for i, s := range tc.steps {
				now := t0.Add(s.at)
				got := 0
				switch s.do {
				case "add":
					q.Add(&readWaiter{})
					continue
				case "start", "link":
					ctx, ok := q.Start(now, s.do == "link")
					if ok {
						got = 1
						if ctx != s.wantCtx {
							t.Fatalf("step %d: started round %d, want %d", i, ctx, s.wantCtx)
						}
					}
				case "finish":
					got = len(q.Finish(s.ctx))
				case "expire":
					got = len(q.Expire(now, time.Second))
				case "drain":
					got = len(q.Drain())
				case "unlink":
					if q.Unlink(s.ctx) {
						got = 1
					}
				case "reissue":
					got = len(q.Reissue())
				}
				if got != s.want {
					t.Fatalf("step %d (%s %d): got %d, want %d", i, s.do, s.ctx, got, s.want)
				}
			}
		})
	}
}
