package statetransfer

import (
	"bytes"
	"context"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/certusdb/certus/storage"
)

// An ingester turns the stream, which arrives in key order, into sstables
// that it ingests into the database: the state goes to disk once, without
// passing through the memtable, the WAL and compactions (which stalled the
// joiner's writes for seconds after a large transfer). A file is ingested
// once it holds fileBytes, and the transfer record advances with it, so a
// resumed transfer continues after the last ingested file.
type ingester struct {
	db        *pebble.DB
	fs        vfs.FS
	dir       string
	fileBytes uint64
	wo        sstable.WriterOptions

	w     *sstable.Writer
	path  string
	seq   int
	bytes uint64
	// pending is the record as it will be once the open file is ingested.
	pending record
}

// newIngester returns an ingester writing files of fileBytes into dir with
// wo (nil: pebble's defaults at db's table format).
func newIngester(db *pebble.DB, fs vfs.FS, dir string, fileBytes uint64, wo *sstable.WriterOptions) (*ingester, error) {
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if wo == nil {
		opts := &pebble.Options{}
		opts.EnsureDefaults()
		d := opts.MakeWriterOptions(0, db.TableFormat())
		wo = &d
	}
	return &ingester{db: db, fs: fs, dir: dir, fileBytes: fileBytes, wo: *wo}, nil
}

// add appends one pair (keys arrive in increasing order) and reports
// whether the open file is full.
func (in *ingester) add(k, v []byte) (bool, error) {
	if in.w == nil {
		in.seq++
		in.path = in.fs.PathJoin(in.dir, fmt.Sprintf("transfer-%06d.sst", in.seq))
		w, err := storage.CreateSSTable(in.fs, in.path, in.wo)
		if err != nil {
			return false, err
		}
		in.w = w
		in.bytes = 0
	}
	if err := in.w.Set(k, v); err != nil {
		return false, err
	}
	in.bytes += uint64(len(k) + len(v))
	return in.bytes >= in.fileBytes, nil
}

// flush ingests the open file, if any.
func (in *ingester) flush() error {
	if in.w == nil {
		return nil
	}
	w := in.w
	in.w = nil
	if err := w.Close(); err != nil {
		_ = in.fs.Remove(in.path)
		return err
	}
	err := in.db.Ingest(context.Background(), []string{in.path})
	_ = in.fs.Remove(in.path) // ingestion links it into the database
	return err
}

// discard drops the open file (a broken stream).
func (in *ingester) discard() {
	if in.w != nil {
		_ = in.w.Close()
		in.w = nil
		_ = in.fs.Remove(in.path)
	}
}

// check verifies a pair of the stream against what came before it.
func check(ranges []storage.KeyRange, after, k []byte) error {
	if after != nil && bytes.Compare(k, after) <= 0 {
		return fmt.Errorf("%w: key %x out of order", ErrCorruptStream, k)
	}
	if !inRanges(ranges, k) {
		return fmt.Errorf("%w: key %x outside the state", ErrCorruptStream, k)
	}
	return nil
}
