package replication

import (
	"errors"
	"sync"
	"sync/atomic"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/certusdb/certus/storage"
	"github.com/certusdb/certus/writeset"
)

// errNotPrepared marks an ahead job whose write-set is applied the usual
// way (it cannot be prepared ahead, or the job was discarded).
var errNotPrepared = errors.New("replication: write-set not prepared ahead")

// aheadJob prepares one big write-set's batch before its turn in the log
// (see storage.Engine.Prepare), from the moment its entry reaches this
// node's log. The apply stage then only certifies it and commits the
// batch, so the small commits ordered after it wait for that instead of
// for the whole build (seconds for a million rows).
type aheadJob struct {
	index, term uint64
	data        []byte
	// after is the index of the last write-set of the same origin logged
	// before this one (or an index at or above it): see run.
	after uint64

	dropped atomic.Bool // discarded: stop waiting
	once    sync.Once
	ws      *writeset.WriteSet // decoded, when err is not a decode error
	err     error

	mu sync.Mutex
	p  *storage.Prepared // set by run unless dropped; closed by whoever sees both
}

// run prepares the job once; later calls wait for the first. pause waits
// a little while the applied seqno is short of the write-set's read
// positions (false: give up); nil means the caller is the apply stage,
// where everything before the job's entry is applied.
func (j *aheadJob) run(eng *storage.Engine, pause func() bool) {
	j.once.Do(func() {
		ws, err := writeset.Decode(j.data)
		if err != nil {
			j.err = err
			return
		}
		j.ws = ws
		if j.dropped.Load() || !storage.CanPrepare(ws) {
			j.err = errNotPrepared
			return
		}
		// every write the write-set's rows may legitimately have seen
		// must be applied first: another origin's writes ordered after its
		// read positions fail its certification (the batch is then
		// dropped), but its own origin's never do (that origin's row locks
		// ordered them, and a key first read at the transaction's snapshot
		// keeps that older position), so those are waited for too
		need := min(max(readPositions(ws), j.after), j.index-1)
		for eng.Applied() < need {
			if pause == nil || j.dropped.Load() || !pause() {
				j.err = errNotPrepared
				return
			}
		}
		p, err := eng.Prepare(ws)
		j.mu.Lock()
		defer j.mu.Unlock()
		if j.dropped.Load() {
			// discarded while it was prepared: the batch is ours to close
			if p != nil {
				p.Close()
			}
			j.err = errNotPrepared
			return
		}
		j.p, j.err = p, err
	})
}

// discard drops the job's batch. It never waits: a preparation in progress
// closes its own batch when it ends (discard runs in the raft loop and the
// apply stage, which a million-row preparation must not hold up).
func (j *aheadJob) discard() {
	j.dropped.Store(true)
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.p != nil {
		j.p.Close()
		j.p = nil
	}
}

// prepared returns the job's batch and error once run has returned.
func (j *aheadJob) prepared() (*storage.Prepared, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.p, j.err
}

// readPositions is the highest position ws's keys and tables were read at.
func readPositions(ws *writeset.WriteSet) uint64 {
	var pos uint64
	for i := range ws.Keys {
		pos = max(pos, ws.Keys[i].Pos)
	}
	for i := range ws.Tables {
		pos = max(pos, ws.Tables[i].SchemaPos)
	}
	return pos
}

// noteAppended reports entries just appended to a log that ended at last:
// the replaced ones (OnOverwritten), every write-set (OnLogged), and it
// starts an ahead job for each big one. A job at an index whose entry was
// replaced is discarded. An origin's last index may then name a replaced
// entry: a job waits for more than it needs, never less.
func (c *Core) noteAppended(ents []*pb.Entry, last uint64) {
	if len(ents) > 0 && ents[0].GetIndex() <= last && c.cfg.OnOverwritten != nil {
		c.cfg.OnOverwritten(ents[0].GetIndex())
	}
	ahead := c.cfg.PrepareAheadBytes > 0 && !c.cfg.Arbitrator
	for _, e := range ents {
		if e.GetType() != pb.EntryNormal {
			continue
		}
		id, ok := writeset.PeekID(e.GetData())
		if !ok {
			continue
		}
		if c.cfg.OnLogged != nil {
			c.cfg.OnLogged(id, e.GetIndex())
		}
		after := max(c.originFloor, c.originLast[id.Origin])
		c.originLast[id.Origin] = e.GetIndex()
		if !ahead || len(e.GetData()) < c.cfg.PrepareAheadBytes {
			continue
		}
		j := &aheadJob{index: e.GetIndex(), term: e.GetTerm(), data: e.GetData(), after: after}
		c.aheadMu.Lock()
		old := c.ahead[j.index]
		c.ahead[j.index] = j
		c.aheadNew = append(c.aheadNew, j)
		c.aheadMu.Unlock()
		if old != nil {
			old.discard()
		}
	}
}

// PrepareAhead prepares the next big write-set waiting for it, if any, and
// reports whether there was one. The driver calls it on a goroutine of its
// own (a Node does; the simulator does not, and the apply stage then
// prepares each one in its turn). pause waits a little (the job waits for
// the apply stage to reach the write-set's read positions) and returns
// false to give up.
func (c *Core) PrepareAhead(pause func() bool) bool {
	c.aheadMu.Lock()
	if len(c.aheadNew) == 0 {
		c.aheadMu.Unlock()
		return false
	}
	j := c.aheadNew[0]
	c.aheadNew = c.aheadNew[1:]
	c.aheadMu.Unlock()
	j.run(c.eng, pause)
	return true
}

// aheadWaiting reports whether a job waits for PrepareAhead.
func (c *Core) aheadWaiting() bool {
	c.aheadMu.Lock()
	defer c.aheadMu.Unlock()
	return len(c.aheadNew) > 0
}

// takeAhead returns the ahead job of the committed entry e, prepared, or
// nil; it discards the jobs of e's index and below that do not match it.
func (c *Core) takeAhead(e *pb.Entry) *aheadJob {
	c.aheadMu.Lock()
	if len(c.ahead) == 0 {
		c.aheadMu.Unlock()
		return nil
	}
	var stale []*aheadJob
	var j *aheadJob
	for idx, a := range c.ahead {
		if idx > e.GetIndex() {
			continue
		}
		delete(c.ahead, idx)
		if idx == e.GetIndex() && a.term == e.GetTerm() {
			j = a
		} else {
			stale = append(stale, a)
		}
	}
	c.aheadMu.Unlock()
	for _, a := range stale {
		a.discard()
	}
	if j != nil {
		j.run(c.eng, nil)
	}
	return j
}

// dropAhead discards every ahead job (a state transfer replaced the state,
// or the core stops).
func (c *Core) dropAhead() {
	c.aheadMu.Lock()
	jobs := c.ahead
	c.ahead = map[uint64]*aheadJob{}
	c.aheadNew = nil
	c.aheadMu.Unlock()
	for _, j := range jobs {
		j.discard()
	}
}
