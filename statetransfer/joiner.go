package statetransfer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/certusdb/certus/internal/frame"
	"github.com/certusdb/certus/storage"
)

// Dialer connects to a donor's peer address and hands it req (the encoded
// Request); it returns the stream to read the answer from.
type Dialer func(ctx context.Context, addr string, req []byte) (io.ReadCloser, error)

// JoinerConfig configures a Joiner.
type JoinerConfig struct {
	// Name names this node in requests (for the donor's log).
	Name string
	// DB is the joiner's database; the state ranges in it are replaced.
	DB *pebble.DB
	// FS is DB's filesystem (nil: the operating system's) and TempDir a
	// directory on it for the sstables the stream is turned into before
	// they are ingested.
	FS      vfs.FS
	TempDir string
	// WriterOptions are those sstables' options (nil: pebble's defaults at
	// DB's table format); they should be those of DB's bottom level,
	// where the files land.
	WriterOptions *sstable.WriterOptions
	// FileBytes is the size of those sstables (default: a sixteenth of
	// the state, 1-64 MiB). A resumed transfer sends at most one file
	// again.
	FileBytes uint64
	// Ranges are the key ranges that make up the state.
	Ranges []storage.KeyRange
	// RecordKey is where the transfer's progress is kept in DB (outside
	// Ranges).
	RecordKey []byte
	// Dial connects to donors.
	Dial Dialer
	// RetryDelay is the first pause after a failed attempt; it doubles up
	// to 5s (default 100ms).
	RetryDelay time.Duration
	// Logger receives the joiner's log.
	Logger *slog.Logger
}

// Plan is what a transfer must achieve: a state at MinSeqno or later, from
// one of Donors (peer addresses, tried in order). Context is the caller's
// (the raft snapshot it installs), kept with the record so that a restart
// can finish the transfer before anything else happens.
type Plan struct {
	MinSeqno uint64   `json:"min_seqno"`
	Donors   []string `json:"donors"`
	Context  []byte   `json:"context,omitempty"`
}

// record is the durable state of a transfer in progress, written with every
// chunk.
type record struct {
	Plan       Plan    `json:"plan"`
	Donor      string  `json:"donor,omitempty"`
	Checkpoint string  `json:"checkpoint,omitempty"`
	Meta       Meta    `json:"meta"`
	Total      summary `json:"total"`
	After      []byte  `json:"after,omitempty"`
	// Got counts what arrived so far; Data is the digest of the arrived
	// pairs the state digest covers.
	Got  summary        `json:"got"`
	Data storage.Digest `json:"data"`
}

// Joiner receives state transfers.
type Joiner struct {
	cfg  JoinerConfig
	log  *slog.Logger
	prog Progress
}

// NewJoiner returns a joiner.
func NewJoiner(cfg JoinerConfig) *Joiner {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.RetryDelay == 0 {
		cfg.RetryDelay = 100 * time.Millisecond
	}
	if cfg.FS == nil {
		cfg.FS = vfs.Default
	}
	return &Joiner{cfg: cfg, log: cfg.Logger}
}

// Progress is the transfer in flight (or the last one).
func (j *Joiner) Progress() ProgressInfo { return j.prog.Info() }

// Pending returns the plan of a transfer that started and did not finish
// (the node stopped in the middle): the node's state is incomplete until
// Run finishes it.
func (j *Joiner) Pending() (Plan, bool, error) {
	rec, ok, err := j.load()
	if err != nil || !ok {
		return Plan{}, false, err
	}
	return rec.Plan, true, nil
}

func (j *Joiner) load() (*record, bool, error) {
	v, closer, err := j.cfg.DB.Get(j.cfg.RecordKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer closer.Close()
	rec := &record{}
	if err := json.Unmarshal(v, rec); err != nil {
		return nil, false, fmt.Errorf("statetransfer: corrupt transfer record: %w", err)
	}
	return rec, true, nil
}

func samePlan(a, b Plan) bool {
	return a.MinSeqno == b.MinSeqno && bytes.Equal(a.Context, b.Context)
}

// Run transfers a state per plan into the database and returns its Meta.
// It resumes the recorded transfer when it is of the same plan. It retries
// (resuming, or starting over at another donor) until it succeeds or ctx
// ends. On success finalize adds the caller's writes to the batch that
// also removes the record, committed durably: the state and the caller's
// bookkeeping appear together.
func (j *Joiner) Run(ctx context.Context, plan Plan, finalize func(b *pebble.Batch, m Meta) error) (Meta, error) {
	rec, ok, err := j.load()
	if err != nil {
		return Meta{}, err
	}
	if !ok || !samePlan(rec.Plan, plan) {
		rec = &record{Plan: plan}
		if err := j.wipe(rec); err != nil {
			return Meta{}, err
		}
	} else if len(plan.Donors) > 0 {
		rec.Plan.Donors = plan.Donors
	}
	if len(rec.Plan.Donors) == 0 {
		return Meta{}, errors.New("statetransfer: no donor to transfer state from")
	}
	defer j.prog.stop()
	backoff := j.cfg.RetryDelay
	failures := 0
	next := 0
	for {
		if rec.Donor == "" {
			rec.Donor = rec.Plan.Donors[next%len(rec.Plan.Donors)]
			next++
		}
		err := j.fetch(ctx, rec)
		if err == nil {
			if err := j.finish(rec, finalize); err != nil {
				return Meta{}, err
			}
			j.log.Info("state transfer complete", "donor", rec.Donor, "seqno", rec.Meta.Seqno, "bytes", rec.Got.Bytes, "pairs", rec.Got.Pairs)
			return rec.Meta, nil
		}
		if ctx.Err() != nil {
			return Meta{}, ctx.Err()
		}
		failures++
		var restart *restartError
		switch {
		case errors.As(err, &restart):
			// what arrived cannot be trusted or continued: start over at
			// the next donor
			j.log.Warn("state transfer starts over", "donor", rec.Donor, "err", err)
			rec = &record{Plan: rec.Plan}
			if err := j.wipe(rec); err != nil {
				return Meta{}, err
			}
			failures = 0
		case failures%3 == 0 && len(rec.Plan.Donors) > 1:
			j.log.Warn("state transfer: trying another donor", "donor", rec.Donor, "err", err)
			rec = &record{Plan: rec.Plan}
			if err := j.wipe(rec); err != nil {
				return Meta{}, err
			}
		default:
			j.log.Warn("state transfer interrupted; resuming", "donor", rec.Donor, "received_bytes", rec.Got.Bytes, "err", err)
		}
		select {
		case <-ctx.Done():
			return Meta{}, ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// restartError marks a failure after which the transfer must start over.
type restartError struct{ err error }

func (e *restartError) Error() string { return e.err.Error() }
func (e *restartError) Unwrap() error { return e.err }

// wipe deletes the state ranges and records a fresh transfer.
//
// A range that holds data is deleted and compacted at once: ingested files
// that overlapped a range tombstone would all have to stay in L0 above it,
// and the joiner's first writes after the transfer would stall until
// compactions dug them out.
func (j *Joiner) wipe(rec *record) error {
	b := j.cfg.DB.NewBatch()
	defer b.Close()
	var dirty []storage.KeyRange
	for _, r := range j.cfg.Ranges {
		empty, err := j.empty(r)
		if err != nil {
			return err
		}
		if empty {
			continue
		}
		dirty = append(dirty, r)
		if err := b.DeleteRange(r.Lo, r.Hi, nil); err != nil {
			return err
		}
	}
	if err := j.putRecord(b, rec); err != nil {
		return err
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return err
	}
	for _, r := range dirty {
		if err := j.cfg.DB.Compact(context.Background(), r.Lo, r.Hi, true); err != nil {
			return fmt.Errorf("statetransfer: compact the deleted state: %w", err)
		}
	}
	return nil
}

// empty reports whether the database holds no key in r.
func (j *Joiner) empty(r storage.KeyRange) (bool, error) {
	it, err := j.cfg.DB.NewIter(&pebble.IterOptions{LowerBound: r.Lo, UpperBound: r.Hi})
	if err != nil {
		return false, err
	}
	defer it.Close()
	return !it.First(), it.Error()
}

func (j *Joiner) putRecord(b *pebble.Batch, rec *record) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return b.Set(j.cfg.RecordKey, data, nil)
}

// fetch connects to rec.Donor and receives the rest of the state.
func (j *Joiner) fetch(ctx context.Context, rec *record) error {
	req, _ := json.Marshal(Request{Joiner: j.cfg.Name, MinSeqno: rec.Plan.MinSeqno, Checkpoint: rec.Checkpoint, After: rec.After})
	conn, err := j.cfg.Dial(ctx, rec.Donor, req)
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	typ, payload, err := frame.ReadMax(conn, headerMax)
	if err != nil {
		return err
	}
	switch typ {
	case frameError:
		var se streamError
		_ = json.Unmarshal(payload, &se)
		err := fmt.Errorf("donor %s: %s", rec.Donor, se.Error)
		if !se.Retry {
			return &restartError{err}
		}
		return err
	case frameHeader:
	default:
		return fmt.Errorf("%w: frame %d before the header", ErrCorruptStream, typ)
	}
	var hdr header
	if err := json.Unmarshal(payload, &hdr); err != nil {
		return fmt.Errorf("%w: header: %v", ErrCorruptStream, err)
	}
	if hdr.Meta.Seqno < rec.Plan.MinSeqno {
		return &restartError{fmt.Errorf("donor %s sent state at %d, older than %d", rec.Donor, hdr.Meta.Seqno, rec.Plan.MinSeqno)}
	}
	if !hdr.Resumed || hdr.Checkpoint != rec.Checkpoint {
		if rec.Checkpoint != "" || rec.Got.Pairs > 0 {
			// the donor no longer has what we started from
			j.log.Info("state transfer cannot resume: the donor's checkpoint is gone; starting over", "donor", rec.Donor, "old", rec.Checkpoint, "new", hdr.Checkpoint)
			donor := rec.Donor
			*rec = record{Plan: rec.Plan, Donor: donor}
			if err := j.wipe(rec); err != nil {
				return err
			}
		}
		rec.Checkpoint, rec.Meta, rec.Total = hdr.Checkpoint, hdr.Meta, hdr.Total
	}
	if rec.Got.Pairs > 0 {
		j.log.Info("resuming state transfer", "donor", rec.Donor, "checkpoint", rec.Checkpoint, "received_bytes", rec.Got.Bytes, "total_bytes", rec.Total.Bytes)
	} else {
		j.log.Info("receiving state transfer", "donor", rec.Donor, "checkpoint", rec.Checkpoint, "seqno", rec.Meta.Seqno, "total_bytes", rec.Total.Bytes)
	}
	j.prog.start(j.log, "joiner", rec.Donor, rec.Meta.Seqno, rec.Got.Bytes, rec.Total.Bytes)
	fileBytes := j.cfg.FileBytes
	if fileBytes == 0 {
		fileBytes = min(max(rec.Total.Bytes/16, 1<<20), 64<<20)
	}
	in, err := newIngester(j.cfg.DB, j.cfg.FS, j.cfg.TempDir, fileBytes, j.cfg.WriterOptions)
	if err != nil {
		return err
	}
	defer in.discard()
	in.pending = *rec
	for {
		typ, payload, err := frame.Read(conn)
		if err != nil {
			return err
		}
		switch typ {
		case frameChunk:
			if err := j.storeChunk(rec, in, payload); err != nil {
				return err
			}
		case frameEnd:
			var e end
			if err := json.Unmarshal(payload, &e); err != nil {
				return fmt.Errorf("%w: end: %v", ErrCorruptStream, err)
			}
			if err := j.ingest(rec, in); err != nil {
				return err
			}
			rec.Total = e.Total
			j.prog.setTotal(e.Total.Bytes)
			return j.verify(rec)
		default:
			return fmt.Errorf("%w: unexpected frame %d", ErrCorruptStream, typ)
		}
	}
}

// storeChunk adds one chunk's pairs to the open sstable, ingesting it when
// it is full.
func (j *Joiner) storeChunk(rec *record, in *ingester, payload []byte) error {
	p := &in.pending
	before := p.Got.Bytes
	err := decodePairs(payload, func(k, v []byte) error {
		if err := check(j.cfg.Ranges, p.After, k); err != nil {
			return &restartError{err}
		}
		full, err := in.add(k, v)
		if err != nil {
			return err
		}
		p.After = append(p.After[:0], k...)
		p.Got.Pairs++
		p.Got.Bytes += uint64(len(k) + len(v))
		h := storage.PairDigest(k, v) // one hash for both digests
		p.Got.Digest.Merge(h)
		if storage.Replicated(k) {
			p.Data.Merge(h)
		}
		if full {
			return j.ingest(rec, in)
		}
		return nil
	})
	j.prog.add(p.Got.Bytes - before)
	return err
}

// ingest ingests the open file and advances the record to it. A crash
// between the two only makes a resumed transfer fetch that file again.
func (j *Joiner) ingest(rec *record, in *ingester) error {
	if err := in.flush(); err != nil {
		return err
	}
	*rec = in.pending
	rec.After = append([]byte(nil), in.pending.After...)
	b := j.cfg.DB.NewBatch()
	defer b.Close()
	if err := j.putRecord(b, rec); err != nil {
		return err
	}
	return b.Commit(pebble.Sync) // one sync per file: a restart resumes here
}

// verify checks a complete stream end to end: everything the donor counted
// arrived, and the data matches the state digest stored with it.
func (j *Joiner) verify(rec *record) error {
	if rec.Got != rec.Total {
		return &restartError{fmt.Errorf("%w: received %d pairs / %d bytes / digest %s, donor sent %d / %d / %s",
			ErrCorruptStream, rec.Got.Pairs, rec.Got.Bytes, rec.Got.Digest, rec.Total.Pairs, rec.Total.Bytes, rec.Total.Digest)}
	}
	if rec.Data != rec.Meta.StateDigest {
		return &restartError{fmt.Errorf("donor %s: its data digest %s does not match its stored state digest %s at seqno %d",
			rec.Donor, rec.Data, rec.Meta.StateDigest, rec.Meta.Seqno)}
	}
	return nil
}

// finish commits the caller's bookkeeping and removes the record.
func (j *Joiner) finish(rec *record, finalize func(b *pebble.Batch, m Meta) error) error {
	b := j.cfg.DB.NewBatch()
	defer b.Close()
	if finalize != nil {
		if err := finalize(b, rec.Meta); err != nil {
			return err
		}
	}
	if err := b.Delete(j.cfg.RecordKey, nil); err != nil {
		return err
	}
	return b.Commit(pebble.Sync)
}
