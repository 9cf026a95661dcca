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

// aheadJob prepares one write-set's batch before its turn in the log (see
// storage.Engine.Prepare), from the moment its entry reaches this node's
// log. The apply stage then only certifies it and commits the batch, so
// the commits ordered after a big write-set wait for that instead of for
// the whole build (seconds for a million rows), and with parallel apply
// (wsrep_applier_threads) small write-sets are built by several workers at
// once while the apply stage commits them in log order.
type aheadJob struct {
	index, term uint64
	data        []byte
	// after is the index of the last write-set of the same origin logged
	// before this one (or an index at or above it): see run.
	after uint64
	// floor is the last write-set logged before this one without a job
	// (whose keys the dependency tracker never saw).
	floor uint64
	// need is what the job waits for when deps is set: the dependency
	// tracker's answer, given when the job was dispatched (small jobs).
	need uint64
	deps bool

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
		ws := j.ws
		if ws == nil {
			var err error
			if ws, err = writeset.Decode(j.data); err != nil {
				j.err = err
				return
			}
			j.ws = ws
		}
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
		if j.deps {
			need = j.need // the keys' last writers (see depTracker)
		}
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
// queues an ahead job for each big one (each one, with parallel apply).
// The jobs of replaced entries are discarded. An origin's last index, or
// the floor, may then name a replaced entry: a job waits for more than it
// needs, never less.
func (c *Core) noteAppended(ents []*pb.Entry, last uint64) {
	if len(ents) > 0 && ents[0].GetIndex() <= last {
		if c.cfg.OnOverwritten != nil {
			c.cfg.OnOverwritten(ents[0].GetIndex())
		}
		c.aheadMu.Lock()
		k := len(c.aheadJobs)
		for k > 0 && c.aheadJobs[k-1].index >= ents[0].GetIndex() {
			k--
		}
		stale := append([]*aheadJob(nil), c.aheadJobs[k:]...)
		c.aheadJobs = c.aheadJobs[:k]
		c.aheadNext = min(c.aheadNext, k)
		c.aheadMu.Unlock()
		for _, j := range stale {
			j.discard()
		}
	}
	ahead := c.cfg.PrepareAheadBytes > 0 && !c.cfg.Arbitrator
	all := c.parallel.Load()
	for _, e := range ents {
		if e.GetType() != pb.EntryNormal {
			continue
		}
		id, ok := writeset.PeekID(e.GetData())
		if !ok {
			c.lastUntracked = e.GetIndex()
			continue
		}
		if c.cfg.OnLogged != nil {
			c.cfg.OnLogged(id, e.GetIndex())
		}
		after := max(c.originFloor, c.originLast[id.Origin])
		c.originLast[id.Origin] = e.GetIndex()
		if !ahead || (!all && len(e.GetData()) < c.cfg.PrepareAheadBytes) {
			c.lastUntracked = e.GetIndex()
			continue
		}
		j := &aheadJob{index: e.GetIndex(), term: e.GetTerm(), data: e.GetData(), after: after, floor: c.lastUntracked}
		c.aheadMu.Lock()
		c.aheadJobs = append(c.aheadJobs, j)
		c.aheadMu.Unlock()
	}
}

// SetParallelApply turns parallel apply on or off: on, every write-set
// logged from now on gets an ahead job, which the driver's workers
// (PrepareAhead) build concurrently; off, only big ones do.
func (c *Core) SetParallelApply(on bool) { c.parallel.Store(on) }

// dispatchLocked notes the job's dependencies, in log order (aheadMu held).
// A big job waits by its own rule (see run) and is a barrier to the rest.
func (c *Core) dispatchLocked(j *aheadJob) {
	if len(j.data) >= c.cfg.PrepareAheadBytes {
		c.deps.barrierAt(j.index)
		return
	}
	ws, err := writeset.Decode(j.data)
	if err != nil {
		c.deps.barrierAt(j.index) // run decodes it again and keeps the error
		return
	}
	j.ws = ws
	j.need = min(max(c.deps.note(j.index, ws, storage.CanPrepare(ws)), j.floor), j.index-1)
	j.deps = true
	c.stats.DepsDistance.Add(j.index - j.need)
	c.stats.DepsCount.Add(1)
	c.deps.forget(c.eng.Applied())
}

// PrepareAhead prepares the next write-set waiting for it, if any, and
// reports whether there was one. The driver calls it on goroutines of its
// own (a Node runs wsrep_applier_threads of them; the simulator calls it
// between steps with a pause that gives up at once); the apply stage
// prepares a job nobody took in its turn. pause waits a little (the job
// waits for the apply stage to reach what it depends on) and returns false
// to give up.
func (c *Core) PrepareAhead(pause func() bool) bool {
	c.aheadMu.Lock()
	if c.aheadNext >= len(c.aheadJobs) {
		c.aheadMu.Unlock()
		return false
	}
	j := c.aheadJobs[c.aheadNext]
	c.aheadNext++
	c.dispatchLocked(j)
	c.aheadMu.Unlock()
	j.run(c.eng, pause)
	return true
}

// aheadWaiting reports whether a job waits for PrepareAhead.
func (c *Core) aheadWaiting() bool {
	c.aheadMu.Lock()
	defer c.aheadMu.Unlock()
	return c.aheadNext < len(c.aheadJobs)
}

// takeAhead returns the ahead job of the committed entry e, prepared, or
// nil; it discards the jobs below e's index and one at it that does not
// match it. Jobs up to e's index that no worker took are dispatched first,
// so the dependency tracker sees every job in log order.
func (c *Core) takeAhead(e *pb.Entry) *aheadJob {
	c.aheadMu.Lock()
	for c.aheadNext < len(c.aheadJobs) && c.aheadJobs[c.aheadNext].index <= e.GetIndex() {
		c.dispatchLocked(c.aheadJobs[c.aheadNext])
		c.aheadNext++
	}
	var stale []*aheadJob
	var j *aheadJob
	for len(c.aheadJobs) > 0 && c.aheadJobs[0].index <= e.GetIndex() {
		a := c.aheadJobs[0]
		c.aheadJobs = c.aheadJobs[1:]
		c.aheadNext--
		if a.index == e.GetIndex() && a.term == e.GetTerm() {
			j = a
		} else {
			stale = append(stale, a)
		}
	}
	if j != nil {
		// from the highest write-set dispatched to the one committed
		// (wsrep_apply_window)
		w := uint64(1)
		if c.aheadNext > 0 {
			w += c.aheadJobs[c.aheadNext-1].index - j.index
		}
		c.stats.ApplyWindow.Add(w)
		c.stats.ApplyWindowCount.Add(1)
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
	jobs := c.aheadJobs
	c.aheadJobs, c.aheadNext = nil, 0
	c.deps = depTracker{}
	c.aheadMu.Unlock()
	for _, j := range jobs {
		j.discard()
	}
}
