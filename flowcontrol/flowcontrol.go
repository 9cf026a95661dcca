// Package flowcontrol keeps every node within reach of the cluster's commit
// rate. A node whose receive queue (write-sets committed in the cluster but
// not applied here yet) grows past its limit reports how fast it applies;
// every node then admits its local commits at its share of that rate, so
// the queue stops growing and drains. Galera pauses all replication until
// the slow node is below its limit again (FC_PAUSE / FC_CONT): writers see
// zero throughput for the pause and a burst after it. Here writers slow
// down to what the slowest node can take and speed up gradually after.
//
// A Controller does no IO and reads no clock: its driver calls Observe on a
// timer with the node's commit and apply positions and sends the report it
// returns to the other members, hands their reports to Receive, and asks
// Admit before each local commit. A report older than Config.Stale counts
// no more: a hung or cut-off node must not hold the others back (it falls
// behind, and catches up from the log or by a state transfer).
package flowcontrol

import (
	"encoding/binary"
	"errors"
	"math"
	"sync"
	"time"
)

// Config configures a Controller. Zero fields take the documented defaults.
type Config struct {
	// Limit is the receive queue length, in write-sets, above which this
	// node asks the cluster to slow down (Galera's gcs.fc_limit; default
	// 100, as in Percona XtraDB Cluster).
	Limit uint64
	// Factor: the node stops asking once its queue is at or below
	// Limit*Factor (gcs.fc_factor, 0 < Factor <= 1; default 1.0).
	Factor float64
	// Stale is the age after which another node's report no longer counts
	// (default 1 s, an election timeout).
	Stale time.Duration
	// MinRate is the lowest rate, in commits per second, this node's
	// writers are slowed to (default 10): a node that applies nothing
	// for a while (one huge write-set) slows the cluster, never stops it.
	MinRate float64
}

// Defaults are the settings a node starts with.
func Defaults() Config {
	return Config{Limit: 100, Factor: 1.0, Stale: time.Second, MinRate: 10}
}

func (c *Config) defaults() {
	d := Defaults()
	if c.Limit == 0 {
		c.Limit = d.Limit
	}
	if c.Factor <= 0 || c.Factor > 1 {
		c.Factor = d.Factor
	}
	if c.Stale == 0 {
		c.Stale = d.Stale
	}
	if c.MinRate == 0 {
		c.MinRate = d.MinRate
	}
}

// Report is what a node tells the others about its receive queue.
type Report struct {
	// Over is set while the node asks the cluster to slow down.
	Over bool
	// Queue is the node's receive queue length in write-sets.
	Queue uint64
	// Rate is the cluster commit rate, in write-sets per second, the node
	// asks for while Over: a little less than it can apply, so that its
	// queue drains (see drain).
	Rate float64
}

// reportVersion is the first byte of an encoded Report.
const reportVersion = 1

// reportSize is the length of an encoded Report.
const reportSize = 1 + 1 + 8 + 8

// ErrBadReport is returned by DecodeReport for bytes that are not a Report
// of this version.
var ErrBadReport = errors.New("flowcontrol: malformed report")

// Encode appends r's wire form to b.
func (r Report) Encode(b []byte) []byte {
	over := byte(0)
	if r.Over {
		over = 1
	}
	b = append(b, reportVersion, over)
	b = binary.BigEndian.AppendUint64(b, r.Queue)
	return binary.BigEndian.AppendUint64(b, math.Float64bits(r.Rate))
}

// DecodeReport decodes a Report encoded by Encode.
func DecodeReport(b []byte) (Report, error) {
	if len(b) != reportSize || b[0] != reportVersion || b[1] > 1 {
		return Report{}, ErrBadReport
	}
	r := Report{Over: b[1] == 1, Queue: binary.BigEndian.Uint64(b[2:]), Rate: math.Float64frombits(binary.BigEndian.Uint64(b[10:]))}
	if math.IsNaN(r.Rate) || math.IsInf(r.Rate, 0) || r.Rate < 0 {
		return Report{}, ErrBadReport
	}
	return r, nil
}

// rateWindow is the time over which rates are averaged.
const rateWindow = time.Second

// rampUp is how much the admission rate may grow per second once no node
// asks to slow down any more (×4 per second: from a tenth of the former
// rate back to unlimited in under two seconds).
const rampUp = 4.0

// Controller is one node's flow control state. It is safe for concurrent
// use.
type Controller struct {
	mu  sync.Mutex
	cfg Config

	// this node's queue
	over           bool
	lastObserve    time.Time
	held           bool      // one write-set held the apply stage at the last observation
	heldFrom       time.Time // heldSince of the last hold granted
	heldLast       time.Time // when a hold was last seen
	applied        uint64
	committed      uint64
	applyRate      float64 // write-sets it can apply per second
	samples        []applySample
	commitRate     float64 // write-sets committed in the cluster per second (smoothed)
	localRate      float64 // local commits admitted per second (smoothed)
	localCount     uint64  // local commits admitted since the last Observe
	writers        int     // nodes that wrote recently
	queueSum       float64 // queue samples since the last ResetAverages
	queueSamples   uint64
	queueMin       uint64
	queueMax       uint64
	sent, received uint64

	// the other nodes' reports
	reports map[uint64]received

	// admission
	limit       float64   // commits per second; 0: unlimited
	adjusted    time.Time // when limit was last set
	tokens      float64   // admissions available now
	filled      time.Time // when tokens was last topped up
	pausedUntil time.Time
	paused      time.Duration // total time local commits waited
	since       time.Time     // start of the averages
	pausedSince time.Duration // paused at since
}

type received struct {
	Report
	at time.Time
}

// New returns a Controller; now starts its averages.
func New(cfg Config, now time.Time) *Controller {
	cfg.defaults()
	return &Controller{cfg: cfg, reports: map[uint64]received{}, since: now}
}

// SetConfig changes the settings (zero fields take the defaults).
func (c *Controller) SetConfig(cfg Config) {
	cfg.defaults()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cfg = cfg
}

// heldGrace is how long one write-set may hold this node's apply stage
// (see Observe) before the node counts as slow.
const heldGrace = 2 * time.Second

// grantHold reports whether the node is held by one write-set at now
// (see Observe) and is granted heldGrace for it. A hold is granted only
// if no other one was seen in the heldGrace before it began: a node held
// again and again is slow.
func (c *Controller) grantHold(now, heldSince time.Time) bool {
	if heldSince.IsZero() {
		return false
	}
	granted := heldSince.Equal(c.heldFrom) || c.heldLast.IsZero() || heldSince.Sub(c.heldLast) >= heldGrace
	if granted {
		c.heldFrom = heldSince
	}
	c.heldLast = now
	return granted && now.Sub(heldSince) < heldGrace
}

// Observe takes this node's cluster commit position and applied position
// at now, and how many nodes (origins) wrote in the last second. It
// returns the report to send to the other members, and whether to send it:
// every call while the node asks the cluster to slow down, and once when
// it stops asking.
//
// heldSince is when the apply stage was first seen in the write-set it is
// still applying, once it was seen there at an earlier call too; zero
// otherwise. Such a write-set (a huge transaction's commit) holds the
// stage for a while, and the queue grows behind it, but the node is not
// slow: it applies the queue at its usual rate once the write-set is
// done. For heldGrace the node neither starts asking the cluster to
// slow down nor lowers its apply rate estimate; until this was so, each
// node asked for the lowest rate (MinRate) at a big transaction's commit,
// and the writers took seconds to get their rate back. A write-set that
// holds the stage longer is treated as slowness again.
func (c *Controller) Observe(now time.Time, committed, applied uint64, writers int, heldSince time.Time) (Report, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writers = writers
	held := c.grantHold(now, heldSince)
	if !c.lastObserve.IsZero() && now.After(c.lastObserve) {
		dt := now.Sub(c.lastObserve)
		c.observeApply(now, committed, applied, held)
		c.commitRate = smooth(c.commitRate, float64(sub(committed, c.committed)), dt)
		c.localRate = smooth(c.localRate, float64(c.localCount), dt)
	}
	before, wasHeld := sub(c.committed, c.applied), c.held
	c.held = held
	c.lastObserve, c.applied, c.committed, c.localCount = now, applied, committed, 0
	q := sub(committed, applied)
	c.queueSum += float64(q)
	if c.queueSamples == 0 || q < c.queueMin {
		c.queueMin = q
	}
	c.queueMax = max(c.queueMax, q)
	c.queueSamples++
	send := false
	switch {
	case !c.over && q > c.cfg.Limit && q > before && !held && !wasHeld:
		// a queue that shrinks (after a held apply) needs no slowing
		c.over, send = true, true
		c.sent++
	case c.over && float64(q) <= float64(c.cfg.Limit)*c.cfg.Factor:
		c.over, send = false, true
	case c.over:
		send = true
	}
	r := c.report()
	c.adjust(now)
	return r, send
}

// Receive takes a report that member from sent at about now.
func (c *Controller) Receive(now time.Time, from uint64, r Report) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.Over && !c.reports[from].Over {
		c.received++
	}
	c.reports[from] = received{Report: r, at: now}
	c.adjust(now)
}

// Forget drops member id's report (it left the cluster).
func (c *Controller) Forget(id uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.reports, id)
}

// report is this node's report from its latest observation.
func (c *Controller) report() Report {
	q := sub(c.committed, c.applied)
	return Report{Over: c.over, Queue: q, Rate: c.applyRate * drain(q, c.cfg.Limit)}
}

// adjust sets the admission rate from the reports that count at now: the
// lowest rate a node asks for, times this node's share of the cluster's commits (at least an
// equal share among the nodes that write), plus MinRate. A node that starts
// writing while the cluster is slowed down so gets its equal share at
// once; the others' shares shrink as its commits count in the total.
func (c *Controller) adjust(now time.Time) {
	target := math.Inf(1)
	consider := func(r Report) {
		if r.Over {
			target = math.Min(target, r.Rate)
		}
	}
	consider(c.report())
	for id, r := range c.reports {
		if now.Sub(r.at) > c.cfg.Stale {
			delete(c.reports, id)
			continue
		}
		consider(r.Report)
	}
	defer func() { c.adjusted = now }()
	if math.IsInf(target, 1) {
		if c.limit == 0 {
			return
		}
		// nobody asks any more: speed up gradually, then stop limiting
		if dt := now.Sub(c.adjusted); dt > 0 {
			c.limit *= math.Pow(rampUp, dt.Seconds())
		}
		if c.limit > 2*c.localRate+c.cfg.MinRate {
			c.limit = 0
		}
		return
	}
	share := 1.0
	if c.commitRate > 0 {
		share = math.Min(1, c.localRate/c.commitRate)
		if c.writers > 1 {
			share = math.Max(share, 1/float64(c.writers))
		}
	}
	c.limit = target*share + c.cfg.MinRate
}

// drain is the fraction of a node's apply rate the cluster may commit
// while the node's queue is q: 95% just over the limit, 10 points less per
// limit's worth of queue above it, and 25% from eight times the limit on,
// so that a long queue shrinks fast while the writers never stop.
func drain(q, limit uint64) float64 {
	if q <= limit {
		return 0.95
	}
	return math.Max(0.25, 0.95-0.1*float64(q-limit)/float64(limit))
}

// maxWait bounds how long one local commit waits for admission: however
// slow the cluster is asked to go, no commit waits longer than this.
const maxWait = time.Second

// retryWait is the longest a waiting commit sleeps before it asks again,
// so that a rising rate admits it soon.
const retryWait = 20 * time.Millisecond

// Admit asks, at now, to admit a local commit that has waited since
// since. It returns 0 when the commit may go ahead, else how long to sleep
// before asking again. Admissions come from a token bucket filled at the
// current rate (holding at most 50 ms of it, and at least one).
func (c *Controller) Admit(now, since time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.limit == 0 || now.Sub(since) >= maxWait {
		c.localCount++
		return 0
	}
	if dt := now.Sub(c.filled); dt > 0 {
		c.tokens = math.Min(math.Max(1, c.limit*0.05), c.tokens+c.limit*dt.Seconds())
	}
	c.filled = now
	if c.tokens >= 1 {
		c.tokens--
		c.localCount++
		return 0
	}
	wait := time.Duration((1 - c.tokens) / c.limit * float64(time.Second))
	wait = min(max(wait, time.Millisecond), retryWait, maxWait-now.Sub(since))
	// the time some commit waits, counted once however many wait
	start := now
	if c.pausedUntil.After(start) {
		start = c.pausedUntil
	}
	if end := now.Add(wait); end.After(start) {
		c.paused += end.Sub(start)
		c.pausedUntil = end
	}
	return wait
}

// Status is the flow control state as the wsrep status variables show it.
type Status struct {
	// Paused is the fraction of the time since ResetAverages during which
	// local commits waited for admission (wsrep_flow_control_paused).
	Paused float64
	// PausedTotal is the total time local commits waited
	// (wsrep_flow_control_paused_ns).
	PausedTotal time.Duration
	// Sent counts the times this node started asking the cluster to slow
	// down; Received the times another node did.
	Sent, Received uint64
	// Requested is set while this node asks the cluster to slow down.
	Requested bool
	// Active is set while local commits are admitted at a limited rate.
	Active bool
	// Limit is the admission rate in commits per second (0: unlimited).
	Limit float64
	// ApplyRate is how many write-sets per second this node can apply,
	// as last measured.
	ApplyRate float64
	// QueueAvg, QueueMin and QueueMax describe the receive queue samples
	// since ResetAverages.
	QueueAvg           float64
	QueueMin, QueueMax uint64
}

// Status returns the state at now.
func (c *Controller) Status(now time.Time) Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := Status{
		PausedTotal: c.paused, Sent: c.sent, Received: c.received,
		Requested: c.over, Active: c.limit > 0, Limit: c.limit, ApplyRate: c.applyRate,
		QueueMin: c.queueMin, QueueMax: c.queueMax,
	}
	if c.queueSamples > 0 {
		st.QueueAvg = c.queueSum / float64(c.queueSamples)
	}
	if wall := now.Sub(c.since); wall > 0 {
		paused := c.paused - c.pausedSince
		if c.pausedUntil.After(now) {
			paused -= c.pausedUntil.Sub(now) // counted ahead, not waited yet
		}
		st.Paused = math.Max(0, math.Min(1, paused.Seconds()/wall.Seconds()))
	}
	return st
}

// ResetAverages starts the averages of Status (Paused, the queue's) anew
// at now, as FLUSH STATUS does.
func (c *Controller) ResetAverages(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.since, c.pausedSince = now, c.paused
	c.queueSum, c.queueSamples, c.queueMin, c.queueMax = 0, 0, 0, 0
}

// smooth folds count events over dt into the per-second rate prev,
// averaging over about rateWindow.
func smooth(prev, count float64, dt time.Duration) float64 {
	alpha := math.Min(1, float64(dt)/float64(rateWindow))
	return prev + alpha*(count/dt.Seconds()-prev)
}

// applyWindow is the span over which an apply rate sample is taken: the
// apply stage works in batches, so shorter samples swing between 0 and
// several times the mean.
const applyWindow = 300 * time.Millisecond

// applySample is one observation of the applied position.
type applySample struct {
	at      time.Time
	applied uint64
	busy    bool // the receive queue was not empty
}

// observeApply updates the estimate of how fast this node can apply from
// the applied position over the last applyWindow. While the node was busy
// all along, what it applied is what it can apply, and that is the new
// estimate: a node that turns slow must slow the writers before its queue
// runs far past the limit, and one that is fast again (a huge write-set
// applied) must not hold them back. While it was idle part of the time it
// could have applied more, so the sample can only raise the estimate; so
// too while one write-set held it (held, see Observe).
func (c *Controller) observeApply(now time.Time, committed, applied uint64, held bool) {
	c.samples = append(c.samples, applySample{at: now, applied: applied, busy: sub(committed, applied) > 0 && !held})
	first := 0
	for first < len(c.samples)-2 && now.Sub(c.samples[first+1].at) >= applyWindow {
		first++
	}
	c.samples = c.samples[first:]
	old := c.samples[0]
	span := now.Sub(old.at)
	if span <= 0 {
		return
	}
	rate := float64(sub(applied, old.applied)) / span.Seconds()
	if c.applyRate == 0 {
		c.applyRate = rate // the first sample, however short
		return
	}
	if span < applyWindow/2 {
		return
	}
	busy := true
	for _, x := range c.samples {
		busy = busy && x.busy
	}
	if busy || rate > c.applyRate {
		c.applyRate = rate
	}
}

// sub is a-b, or 0 when b is larger.
func sub(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}
