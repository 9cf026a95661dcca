package statetransfer

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/certusdb/certus/internal/frame"
	"github.com/certusdb/certus/internal/lowprio"
	"github.com/certusdb/certus/storage"
)

// DonorConfig configures a Donor.
type DonorConfig struct {
	// DB is the live database checkpoints are taken of.
	DB *pebble.DB
	// FS is DB's filesystem (nil: the operating system's).
	FS vfs.FS
	// Dir holds the checkpoints; it must be on DB's filesystem, so that
	// checkpoints hard-link the database's files instead of copying them.
	Dir string
	// Ranges are the key ranges that make up the state; only they are sent.
	Ranges []storage.KeyRange
	// Describe reads what a checkpoint holds (its seqno and raft position).
	Describe func(r pebble.Reader) (Meta, error)
	// Applied returns the donor's applied seqno; a request for a state
	// newer than it waits up to WaitBehind for the donor to get there.
	Applied func() uint64
	// WaitBehind bounds that wait (default 30s).
	WaitBehind time.Duration
	// MaxRate limits the bytes per second sent to one joiner (0: no
	// limit), so a transfer cannot starve the donor's own clients.
	MaxRate int64
	// Nice, when positive, is the nice value (1..19) of the thread that
	// streams a transfer, in its own scheduler slot: when the machine is
	// busy the kernel gives it less CPU than the threads serving the
	// donor's clients, so the transfer slows down before they do. 0
	// streams on an ordinary goroutine, with an equal share of the
	// process's CPU.
	Nice int
	// KeepIdle is how long an unused checkpoint is kept for a joiner to
	// resume from (default 10 minutes).
	KeepIdle time.Duration
	// ChunkBytes is the size of one chunk of the stream (default 1 MiB);
	// a resumed transfer continues after the last whole chunk.
	ChunkBytes int
	// Logger receives the donor's log.
	Logger *slog.Logger
}

// Donor serves state transfers from checkpoints of a live database.
type Donor struct {
	cfg  DonorConfig
	fs   vfs.FS
	log  *slog.Logger
	prog Progress

	mu  sync.Mutex
	cps map[string]*checkpoint

	// corrupt, when positive, damages that many of the next chunks sent
	// (fault injection: the joiner must detect and re-fetch them).
	corrupt atomic.Int32
	serving atomic.Int32
}

type checkpoint struct {
	id       string
	dir      string
	db       *pebble.DB
	meta     Meta
	sum      *summary // nil until counted (by the first whole stream)
	estimate uint64   // estimated bytes, until counted
	users    int
	lastUsed time.Time
}

const summaryFile = "CERTUS-TRANSFER-SUMMARY"

// NewDonor returns a donor over cfg.DB. Checkpoints left in cfg.Dir by an
// earlier run are served again, so a joiner can resume after the donor
// restarted.
func NewDonor(cfg DonorConfig) (*Donor, error) {
	if cfg.FS == nil {
		cfg.FS = vfs.Default
	}
	if cfg.WaitBehind == 0 {
		cfg.WaitBehind = 30 * time.Second
	}
	if cfg.KeepIdle == 0 {
		cfg.KeepIdle = 10 * time.Minute
	}
	if cfg.ChunkBytes == 0 {
		cfg.ChunkBytes = 1 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	d := &Donor{cfg: cfg, fs: cfg.FS, log: cfg.Logger, cps: map[string]*checkpoint{}}
	if err := d.fs.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("statetransfer: %w", err)
	}
	names, err := d.fs.List(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("statetransfer: %w", err)
	}
	sort.Strings(names)
	for _, name := range names {
		cp, err := d.openCheckpoint(name)
		if err != nil {
			d.log.Warn("discarding unusable state transfer checkpoint", "dir", d.fs.PathJoin(cfg.Dir, name), "err", err)
			_ = d.fs.RemoveAll(d.fs.PathJoin(cfg.Dir, name))
			continue
		}
		cp.lastUsed = time.Now()
		d.cps[name] = cp
	}
	return d, nil
}

// Close closes the checkpoints (they stay on disk for a later run).
func (d *Donor) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, cp := range d.cps {
		_ = cp.db.Close()
	}
	d.cps = map[string]*checkpoint{}
}

// Progress is the donor's side of the transfer in flight.
func (d *Donor) Progress() ProgressInfo { return d.prog.Info() }

// Serving is the number of transfers being served.
func (d *Donor) Serving() int { return int(d.serving.Load()) }

// CorruptNextChunks damages the next n chunks sent (fault injection).
func (d *Donor) CorruptNextChunks(n int) { d.corrupt.Store(int32(n)) }

// Serve answers one request (the payload of the transport's request
// frame) on c, streaming the state until done or until ctx ends.
func (d *Donor) Serve(ctx context.Context, c io.Writer, payload []byte) error {
	var req Request
	if err := json.Unmarshal(payload, &req); err != nil {
		return d.refuse(c, "unreadable request", false)
	}
	d.serving.Add(1)
	defer d.serving.Add(-1)
	d.expire()
	cp, resumed, err := d.acquire(ctx, req)
	if err != nil {
		d.log.Warn("cannot serve state transfer", "joiner", req.Joiner, "min_seqno", req.MinSeqno, "err", err)
		return d.refuse(c, err.Error(), true)
	}
	defer d.release(cp)
	after := req.After
	if !resumed {
		after = nil
	}
	// small frames (header, end) are buffered; a chunk's frame is larger
	// than the buffer and goes to c directly, without another copy
	w := bufio.NewWriterSize(c, 64<<10)
	total := d.total(cp)
	hdr, _ := json.Marshal(header{Checkpoint: cp.id, Meta: cp.meta, Total: total, Resumed: resumed})
	if err := frame.Write(w, frameHeader, hdr); err != nil {
		return err
	}
	d.log.Info("serving state transfer", "joiner", req.Joiner, "checkpoint", cp.id, "seqno", cp.meta.Seqno,
		"bytes", total.Bytes, "resumed", resumed)
	start := time.Now()
	var n uint64
	stream := func() error {
		var err error
		n, err = d.stream(ctx, w, cp, after, req.Joiner)
		return err
	}
	if d.cfg.Nice > 0 {
		err = lowprio.Run(d.cfg.Nice, stream)
	} else {
		err = stream()
	}
	if err != nil {
		d.log.Warn("state transfer interrupted", "joiner", req.Joiner, "checkpoint", cp.id, "sent_bytes", n, "err", err)
		return err
	}
	d.log.Info("state transfer served", "joiner", req.Joiner, "checkpoint", cp.id, "sent_bytes", n, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

func (d *Donor) refuse(c io.Writer, msg string, retry bool) error {
	data, _ := json.Marshal(streamError{Error: msg, Retry: retry})
	_ = frame.Write(c, frameError, data)
	return errors.New(msg)
}

// stream sends the checkpoint's pairs after the key after, in chunks.
func (d *Donor) stream(ctx context.Context, w *bufio.Writer, cp *checkpoint, after []byte, joiner string) (uint64, error) {
	var done uint64
	d.prog.start(d.log, "donor", joiner, cp.meta.Seqno, 0, d.total(cp).Bytes)
	defer d.prog.stop()
	start := time.Now()
	buf := make([]byte, 0, d.cfg.ChunkBytes+4096)
	var sent summary     // what this stream sent
	pending := uint64(0) // pair bytes in buf
	var out []byte       // the frame of a chunk, reused
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		out = frame.Append(out[:0], frameChunk, buf)
		if d.corrupt.Load() > 0 && d.corrupt.Add(-1) >= 0 {
			out[len(out)/2] ^= 0xff // the frame checksum no longer matches
			d.log.Warn("fault injection: corrupting a state transfer chunk")
		}
		if _, err := w.Write(out); err != nil {
			return err
		}
		if err := w.Flush(); err != nil {
			return err
		}
		done += pending
		d.prog.add(pending)
		buf, pending = buf[:0], 0
		if d.cfg.MaxRate > 0 {
			// sleep until the average rate is back under the limit
			ahead := time.Duration(float64(done)/float64(d.cfg.MaxRate)*float64(time.Second)) - time.Since(start)
			if ahead > 0 {
				select {
				case <-time.After(ahead):
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		}
		return ctx.Err()
	}
	err := forEachPair(cp.db, d.cfg.Ranges, after, func(k, v []byte) error {
		buf = appendPair(buf, k, v)
		sent.Pairs++
		sent.Bytes += uint64(len(k) + len(v))
		sent.Digest.Toggle(k, v)
		pending += uint64(len(k) + len(v))
		if len(buf) >= d.cfg.ChunkBytes {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return done, err
	}
	// the whole count: this stream's when it sent everything, else the
	// one taken before (or now)
	if after == nil {
		d.setSummary(cp, sent)
	}
	total, err := d.count(cp)
	if err != nil {
		return done, err
	}
	data, _ := json.Marshal(end{Total: total})
	if err := frame.Write(w, frameEnd, data); err != nil {
		return done, err
	}
	return done, w.Flush()
}

// total is the checkpoint's count if known, else an estimate of its bytes.
func (d *Donor) total(cp *checkpoint) summary {
	d.mu.Lock()
	defer d.mu.Unlock()
	if cp.sum != nil {
		return *cp.sum
	}
	return summary{Bytes: cp.estimate}
}

// count returns the checkpoint's count, counting it now if no whole stream
// did yet (a transfer resumed from a restarted donor).
func (d *Donor) count(cp *checkpoint) (summary, error) {
	d.mu.Lock()
	if cp.sum != nil {
		s := *cp.sum
		d.mu.Unlock()
		return s, nil
	}
	d.mu.Unlock()
	var s summary
	if err := forEachPair(cp.db, d.cfg.Ranges, nil, func(k, v []byte) error {
		s.Pairs++
		s.Bytes += uint64(len(k) + len(v))
		s.Digest.Toggle(k, v)
		return nil
	}); err != nil {
		return summary{}, fmt.Errorf("count checkpoint: %w", err)
	}
	d.setSummary(cp, s)
	return s, nil
}

// setSummary records a checkpoint's count, in memory and next to it.
func (d *Donor) setSummary(cp *checkpoint, s summary) {
	d.mu.Lock()
	cp.sum = &s
	d.mu.Unlock()
	data, _ := json.Marshal(s)
	f, err := d.fs.Create(d.fs.PathJoin(cp.dir, summaryFile), vfs.WriteCategoryUnspecified)
	if err != nil {
		return // it will be counted again if needed
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err != nil || cerr != nil {
		_ = d.fs.Remove(d.fs.PathJoin(cp.dir, summaryFile))
	}
}

// estimateBytes estimates the key and value bytes of r in ranges from its
// sstables' properties (memtable contents are not counted).
func estimateBytes(db *pebble.DB, ranges []storage.KeyRange) uint64 {
	var n uint64
	for _, rg := range ranges {
		levels, err := db.SSTables(pebble.WithKeyRangeFilter(rg.Lo, rg.Hi), pebble.WithApproximateSpanBytes(), pebble.WithProperties())
		if err != nil {
			return 0
		}
		for _, level := range levels {
			for _, t := range level {
				if t.Properties == nil || t.Size == 0 {
					continue
				}
				raw := t.Properties.RawKeySize + t.Properties.RawValueSize
				n += uint64(float64(t.ApproximateSpanBytes) * float64(raw) / float64(t.Size))
			}
		}
	}
	return n
}

// forEachPair calls fn for every pair of r in ranges, in key order, after
// the key after (nil: from the start).
func forEachPair(r pebble.Reader, ranges []storage.KeyRange, after []byte, fn func(k, v []byte) error) error {
	rs := append([]storage.KeyRange(nil), ranges...)
	sort.Slice(rs, func(i, j int) bool { return string(rs[i].Lo) < string(rs[j].Lo) })
	for _, rg := range rs {
		if after != nil && string(rg.Hi) <= string(after) {
			continue
		}
		lo := rg.Lo
		if after != nil && string(after) >= string(lo) {
			lo = append(append([]byte{}, after...), 0) // the first key after it
		}
		it, err := r.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: rg.Hi})
		if err != nil {
			return err
		}
		for it.First(); it.Valid(); it.Next() {
			if err := fn(it.Key(), it.Value()); err != nil {
				it.Close()
				return err
			}
		}
		if err := it.Close(); err != nil {
			return err
		}
	}
	return nil
}

// acquire finds the checkpoint to serve: the one asked for when it is
// still here (a resume), else the newest at or after the requested seqno,
// else a new one.
func (d *Donor) acquire(ctx context.Context, req Request) (*checkpoint, bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if cp := d.cps[req.Checkpoint]; cp != nil && req.Checkpoint != "" {
		cp.users++
		return cp, true, nil
	}
	var best *checkpoint
	for _, cp := range d.cps {
		if cp.meta.Seqno >= req.MinSeqno && (best == nil || cp.meta.Seqno > best.meta.Seqno) {
			best = cp
		}
	}
	if best != nil {
		best.users++
		return best, false, nil
	}
	deadline := time.Now().Add(d.cfg.WaitBehind)
	for d.cfg.Applied() < req.MinSeqno {
		if time.Now().After(deadline) {
			return nil, false, fmt.Errorf("donor is behind: applied %d, joiner needs %d", d.cfg.Applied(), req.MinSeqno)
		}
		d.mu.Unlock()
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			d.mu.Lock()
			return nil, false, ctx.Err()
		}
		d.mu.Lock()
	}
	cp, err := d.createCheckpoint()
	if err != nil {
		return nil, false, err
	}
	cp.users++
	d.cps[cp.id] = cp
	return cp, false, nil
}

func (d *Donor) release(cp *checkpoint) {
	d.mu.Lock()
	cp.users--
	cp.lastUsed = time.Now()
	d.mu.Unlock()
}

// expire removes checkpoints nobody used for KeepIdle, and all but the
// newest idle one.
func (d *Donor) expire() {
	d.mu.Lock()
	defer d.mu.Unlock()
	var newest *checkpoint
	for _, cp := range d.cps {
		if newest == nil || cp.meta.Seqno > newest.meta.Seqno {
			newest = cp
		}
	}
	for id, cp := range d.cps {
		if cp.users > 0 || (cp == newest && time.Since(cp.lastUsed) < d.cfg.KeepIdle) {
			continue
		}
		if cp != newest && time.Since(cp.lastUsed) < time.Minute {
			continue // a joiner may be about to resume it
		}
		_ = cp.db.Close()
		if err := d.fs.RemoveAll(cp.dir); err != nil {
			d.log.Warn("cannot remove state transfer checkpoint", "dir", cp.dir, "err", err)
		}
		delete(d.cps, id)
		d.log.Info("removed state transfer checkpoint", "checkpoint", id, "seqno", cp.meta.Seqno)
	}
}

// createCheckpoint takes a checkpoint of the live database.
func (d *Donor) createCheckpoint() (*checkpoint, error) {
	id := fmt.Sprintf("cp-%d", time.Now().UnixNano())
	dir := d.fs.PathJoin(d.cfg.Dir, id)
	start := time.Now()
	// flushing first puts the whole state in sstables, whose properties
	// give the estimate of its size the joiner's progress starts with
	if err := d.cfg.DB.Flush(); err != nil {
		return nil, fmt.Errorf("flush before checkpoint: %w", err)
	}
	if err := d.cfg.DB.Checkpoint(dir, pebble.WithFlushedWAL()); err != nil {
		_ = d.fs.RemoveAll(dir)
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	cp, err := d.openCheckpoint(id)
	if err != nil {
		_ = d.fs.RemoveAll(dir)
		return nil, err
	}
	cp.lastUsed = time.Now()
	d.log.Info("created state transfer checkpoint", "checkpoint", id, "seqno", cp.meta.Seqno,
		"estimated_bytes", cp.estimate, "took", time.Since(start).Round(time.Millisecond))
	return cp, nil
}

// openCheckpoint opens a checkpoint directory read-only and describes it.
func (d *Donor) openCheckpoint(id string) (*checkpoint, error) {
	if !strings.HasPrefix(id, "cp-") {
		return nil, errors.New("not a checkpoint")
	}
	dir := d.fs.PathJoin(d.cfg.Dir, id)
	db, err := pebble.Open(dir, &pebble.Options{FS: d.fs, ReadOnly: true, Logger: quietLogger{}})
	if err != nil {
		return nil, fmt.Errorf("open checkpoint: %w", err)
	}
	meta, err := d.cfg.Describe(db)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("describe checkpoint: %w", err)
	}
	cp := &checkpoint{id: id, dir: dir, db: db, meta: meta, estimate: estimateBytes(db, d.cfg.Ranges)}
	d.loadSummary(cp)
	return cp, nil
}

// loadSummary reads the count kept next to a checkpoint, if any.
func (d *Donor) loadSummary(cp *checkpoint) {
	f, err := d.fs.Open(d.fs.PathJoin(cp.dir, summaryFile))
	if err != nil {
		return
	}
	defer f.Close()
	var s summary
	if data, err := io.ReadAll(f); err == nil && json.Unmarshal(data, &s) == nil {
		cp.sum = &s
	}
}

type quietLogger struct{}

func (quietLogger) Infof(string, ...interface{})  {}
func (quietLogger) Errorf(string, ...interface{}) {}
func (quietLogger) Fatalf(format string, args ...interface{}) {
	panic(fmt.Sprintf(format, args...))
}
