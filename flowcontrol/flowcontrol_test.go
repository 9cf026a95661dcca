package flowcontrol

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"
)

// cluster is a model of three nodes on a simulated clock, 1 ms per step:
// closed-loop clients commit on writer nodes (admitted by their node's
// controller), every node applies the cluster's commits at its own
// capacity, and every node observes its queue each 100 ms and sends its
// report to the others at once.
type cluster struct {
	t        *testing.T
	now      time.Time
	ctrl     []*Controller
	capacity []float64 // write-sets per second each node applies
	applied  []float64
	commits  uint64
	clients  []*client
	perSec   []map[int]int // per node: commits admitted in each second
	maxQueue []uint64
	silent   []bool // node sends no reports (hung)
	// heldUntil: the node applies nothing until then, held by one
	// write-set, and says so (Observe's heldSince)
	heldUntil []time.Time
	heldSince []time.Time // when it was first seen held
}

type client struct {
	node    int
	since   time.Time // when its current commit started waiting for admission
	readyAt time.Time // when it asks (again)
}

const service = 16 * time.Millisecond // a client's time per transaction

func newCluster(t *testing.T, cfg Config, capacity ...float64) *cluster {
	start := time.Unix(1000, 0)
	c := &cluster{t: t, now: start, capacity: capacity, applied: make([]float64, len(capacity)),
		maxQueue: make([]uint64, len(capacity)), silent: make([]bool, len(capacity)),
		heldUntil: make([]time.Time, len(capacity)), heldSince: make([]time.Time, len(capacity))}
	for range capacity {
		c.ctrl = append(c.ctrl, New(cfg, start))
		c.perSec = append(c.perSec, map[int]int{})
	}
	return c
}

func (c *cluster) addClients(node, n int) {
	for range n {
		c.clients = append(c.clients, &client{node: node, readyAt: c.now})
	}
}

func (c *cluster) second() int { return int(c.now.Sub(time.Unix(1000, 0)) / time.Second) }

func (c *cluster) run(d time.Duration) {
	for end := c.now.Add(d); c.now.Before(end); c.now = c.now.Add(time.Millisecond) {
		for _, cl := range c.clients {
			if c.now.Before(cl.readyAt) {
				continue
			}
			if cl.since.IsZero() {
				cl.since = c.now
			}
			if wait := c.ctrl[cl.node].Admit(c.now, cl.since); wait > 0 {
				cl.readyAt = c.now.Add(wait)
				continue
			}
			c.commits++
			c.perSec[cl.node][c.second()]++
			cl.since, cl.readyAt = time.Time{}, c.now.Add(service)
		}
		for i := range c.applied {
			if c.now.Before(c.heldUntil[i]) {
				continue
			}
			c.applied[i] = math.Min(float64(c.commits), c.applied[i]+c.capacity[i]/1000)
		}
		if c.now.UnixMilli()%100 != 0 {
			continue
		}
		for i, ctl := range c.ctrl {
			if c.silent[i] {
				continue
			}
			var held time.Time
			switch {
			case !c.now.Before(c.heldUntil[i]):
				c.heldSince[i] = time.Time{}
			case c.heldSince[i].IsZero():
				c.heldSince[i] = c.now // first seen: not held yet
			default:
				held = c.heldSince[i]
			}
			r, send := ctl.Observe(c.now, c.commits, uint64(c.applied[i]), c.writers(), held)
			c.maxQueue[i] = max(c.maxQueue[i], r.Queue)
			if !send {
				continue
			}
			for j, other := range c.ctrl {
				if j != i {
					other.Receive(c.now, uint64(i), r)
				}
			}
		}
	}
}

// writers counts the nodes with clients.
func (c *cluster) writers() int {
	nodes := map[int]bool{}
	for _, cl := range c.clients {
		nodes[cl.node] = true
	}
	return len(nodes)
}

// rate is node's commits per second over the whole seconds [from, to).
func (c *cluster) rate(node, from, to int) float64 {
	n := 0
	for s := from; s < to; s++ {
		n += c.perSec[node][s]
	}
	return float64(n) / float64(to-from)
}

func (c *cluster) minSecond(node, from, to int) int {
	low := math.MaxInt
	for s := from; s < to; s++ {
		low = min(low, c.perSec[node][s])
	}
	return low
}

// TestSlowNodeThrottlesWritersSmoothly: one node applies at 40% of what
// the writers want. Its queue stays near the limit, writers get about its
// rate and never stop, and once it is fast again they get everything back.
func TestSlowNodeThrottlesWritersSmoothly(t *testing.T) {
	cfg := Defaults()
	c := newCluster(t, cfg, 5000, 5000, 400)
	c.addClients(0, 16) // unthrottled: 1,000 commits/s
	c.run(2 * time.Second)
	if q := c.ctrl[2].Status(c.now).QueueMax; q <= cfg.Limit {
		t.Fatalf("slow node's queue %d never passed the limit %d: the model does not load it", q, cfg.Limit)
	}
	c.run(10 * time.Second)
	if got := c.rate(0, 4, 12); got < 0.8*400 || got > 1.05*400 {
		t.Errorf("throttled commit rate %.0f/s, want about the slow node's 400/s", got)
	}
	if low := c.minSecond(0, 0, 12); low < 150 {
		t.Errorf("worst second %d commits: the writers were nearly stopped", low)
	}
	if q := c.maxQueue[2]; q > 4*cfg.Limit {
		t.Errorf("slow node's queue reached %d, want it held near the limit %d", q, cfg.Limit)
	}
	st := c.ctrl[0].Status(c.now)
	if !st.Active || st.Received == 0 || st.Paused <= 0 || st.PausedTotal <= 0 {
		t.Errorf("writer node status %+v: want active, a report received and time paused", st)
	}
	if st := c.ctrl[2].Status(c.now); st.Sent == 0 {
		t.Errorf("slow node status %+v: want reports sent", st)
	}
	c.capacity[2] = 5000
	c.run(6 * time.Second)
	if got := c.rate(0, 15, 18); got < 900 {
		t.Errorf("commit rate %.0f/s after the slow node recovered, want the unthrottled 1000/s", got)
	}
	if st := c.ctrl[0].Status(c.now); st.Active {
		t.Errorf("writer still limited to %.0f/s after the slow node recovered", st.Limit)
	}
}

// TestHeldApplyDoesNotSlowTheWriters: one write-set holds every node's
// apply stage for 1.5 s (a huge transaction's commit). The queues grow
// past the limit, but nobody asks the writers to slow down; the queues
// drain after it. A write-set that holds the stage for 6 s slows the
// writers after heldGrace, and the slow node's queue stays bounded.
func TestHeldApplyDoesNotSlowTheWriters(t *testing.T) {
	cfg := Defaults()
	c := newCluster(t, cfg, 5000, 5000, 5000)
	c.addClients(0, 16)
	c.run(3 * time.Second)
	for i := range c.heldUntil {
		c.heldUntil[i] = c.now.Add(1500 * time.Millisecond)
	}
	c.run(4 * time.Second)
	if low := c.minSecond(0, 3, 7); low < 900 {
		t.Errorf("worst second %d commits around a 1.5 s held apply, want the unthrottled 1000", low)
	}
	for i, ctl := range c.ctrl {
		if st := ctl.Status(c.now); st.Sent != 0 || st.QueueMax <= cfg.Limit || st.ApplyRate < 4000 {
			t.Errorf("node %d status %+v: want its queue past the limit, no report and its apply rate kept", i, st)
		}
	}

	c.heldUntil[2] = c.now.Add(6 * time.Second)
	c.run(7 * time.Second)
	if st := c.ctrl[2].Status(c.now); st.Sent == 0 {
		t.Errorf("node held for 6 s never asked to slow down: %+v", st)
	}
	if got := c.rate(0, 10, 13); got > 500 {
		t.Errorf("commit rate %.0f/s with a node held past the grace, want it slowed", got)
	}
	if q := c.maxQueue[2]; q > 4000 {
		t.Errorf("held node's queue reached %d", q)
	}
}

// TestHeldAgainAndAgainIsSlow: a node whose apply stage is held for 300 ms
// of every 500 ms, and that applies 1,500/s in between, can take 600
// commits/s: it is slow, and slows the writers, although each hold is
// shorter than heldGrace.
func TestHeldAgainAndAgainIsSlow(t *testing.T) {
	cfg := Defaults()
	c := newCluster(t, cfg, 5000, 5000, 1500)
	c.addClients(0, 16)
	c.run(2 * time.Second)
	for range 20 {
		c.heldUntil[2] = c.now.Add(300 * time.Millisecond)
		c.run(500 * time.Millisecond)
	}
	if got := c.rate(0, 6, 12); got > 0.8*1000 {
		t.Errorf("commit rate %.0f/s, want it slowed towards the held node's 600/s", got)
	}
	if q := c.maxQueue[2]; q > 8*cfg.Limit {
		t.Errorf("held node's queue reached %d", q)
	}
}

// TestHungNodeDoesNotHoldTheClusterBack: a node that stops applying and
// reporting slows the writers for at most Stale.
func TestHungNodeDoesNotHoldTheClusterBack(t *testing.T) {
	c := newCluster(t, Defaults(), 5000, 5000, 400)
	c.addClients(0, 16)
	c.run(5 * time.Second)
	for !c.ctrl[2].Status(c.now).Requested { // it hangs while asking to slow down
		c.run(100 * time.Millisecond)
	}
	c.capacity[2], c.silent[2] = 0, true
	c.run(5 * time.Second)
	if got := c.rate(0, 7, 10); got < 900 {
		t.Errorf("commit rate %.0f/s with the slow node hung for seconds, want the unthrottled 1000/s", got)
	}
}

// TestWritersShareTheSlowNodesRate: a node that starts writing while the
// cluster is slowed down ends up with about the same rate as the one that
// was writing before.
func TestWritersShareTheSlowNodesRate(t *testing.T) {
	c := newCluster(t, Defaults(), 5000, 5000, 600)
	c.addClients(0, 16)
	c.run(5 * time.Second)
	c.addClients(1, 16)
	c.run(5 * time.Second)
	a, b := c.rate(0, 7, 10), c.rate(1, 7, 10)
	if a+b < 0.75*600 || a+b > 1.05*600 {
		t.Errorf("cluster commit rate %.0f/s, want about the slow node's 600/s", a+b)
	}
	if b < a/2 || a < b/2 {
		t.Errorf("rates %.0f/s and %.0f/s: the writers do not share the slow node's rate", a, b)
	}
}

// TestStatusAveragesReset covers the FLUSH STATUS semantics of the
// averages and the hysteresis of Factor.
func TestStatusAveragesReset(t *testing.T) {
	now := time.Unix(0, 0)
	c := New(Config{Limit: 10, Factor: 0.5}, now)
	steps := []struct {
		committed, applied uint64
		over, send         bool
	}{
		{5, 0, false, false},
		{20, 5, true, true},   // 15 > 10: starts asking
		{20, 12, true, true},  // 8 > 5: keeps asking
		{20, 15, false, true}, // 5 <= 10*0.5: stops, says so once
		{20, 18, false, false},
	}
	for i, s := range steps {
		now = now.Add(100 * time.Millisecond)
		r, send := c.Observe(now, s.committed, s.applied, 1, time.Time{})
		if r.Over != s.over || send != s.send || r.Queue != s.committed-s.applied {
			t.Fatalf("step %d: report %+v send %v, want over %v send %v", i, r, send, s.over, s.send)
		}
	}
	st := c.Status(now)
	if st.Sent != 1 || st.QueueMax != 15 || st.QueueMin != 2 || math.Abs(st.QueueAvg-7) > 1e-9 {
		t.Fatalf("status %+v", st)
	}
	c.ResetAverages(now)
	if st := c.Status(now); st.QueueMax != 0 || st.QueueAvg != 0 || st.Sent != 1 {
		t.Fatalf("after reset: %+v", st)
	}
}

func TestReportEncoding(t *testing.T) {
	for _, r := range []Report{{}, {Over: true, Queue: 1 << 40, Rate: 1234.5}} {
		got, err := DecodeReport(r.Encode(nil))
		if err != nil || got != r {
			t.Errorf("round trip of %+v: %+v, %v", r, got, err)
		}
	}
	good := Report{Over: true, Queue: 3, Rate: 1}.Encode(nil)
	nan := Report{Rate: math.NaN()}.Encode(nil)
	neg := Report{Rate: -1}.Encode(nil)
	for i, b := range [][]byte{nil, good[:5], append(good, 0), {9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, nan, neg,
		append([]byte{reportVersion, 2}, good[2:]...)} {
		if _, err := DecodeReport(b); !errors.Is(err, ErrBadReport) {
			t.Errorf("case %d (%s): err %v, want ErrBadReport", i, fmt.Sprintf("%x", b), err)
		}
	}
}
