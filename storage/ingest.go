package storage

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Big batches are committed by ingestion. Committing a batch of a hundred
// megabytes (a million-row UPDATE, a streaming transaction's provisional
// batch) makes pebble write all of it to the WAL and sort it into a
// flushable memtable: about two seconds on this project's 2-core machines,
// during which no later write-set commits on that node and no reader sees
// a newer state. Written instead as sorted sstables and ingested, the same
// change costs a third of that, most of it before the publication lock is
// taken, and the ingestion itself (linking the files and one manifest
// edit, atomic for all of them) takes milliseconds. The rows then reach
// the LSM once, without a WAL copy and a memtable flush.

// ingestDir is the directory, inside the data directory, where the
// sstables of an ingested batch are written before pebble links them in.
const ingestDir = "ingest"

// errNotIngestible says a batch holds an operation the ingestion path does
// not translate (a range deletion); it is committed the usual way.
var errNotIngestible = errors.New("storage: batch cannot be ingested")

// ingestCheckKeys is how many keys writeIngestFiles writes between calls
// of its every.
const ingestCheckKeys = 1 << 14

// batchEntry is one operation of a batch, in the batch's memory.
type batchEntry struct {
	key, value []byte
	del        bool
	pos        int // its place in the batch
}

// ingestFiles are the sstables one batch was written as, ready to ingest.
type ingestFiles struct {
	fs     vfs.FS
	paths  []string
	spaces []byte // the key space of each file
}

// only reports whether every file holds keys of space.
func (f *ingestFiles) only(space byte) bool {
	for _, s := range f.spaces {
		if s != space {
			return false
		}
	}
	return true
}

// filesBeside writes b as files to be ingested together with over, b's
// rows written out ahead, and returns both sets as one. It returns nil,
// and removes over's files, when b cannot be written so or writes a key
// space over holds (files ingested together must not overlap).
func (e *Engine) filesBeside(b *pebble.Batch, over *ingestFiles, seqno uint64) *ingestFiles {
	own, err := e.writeIngestFiles(b, fmt.Sprintf("seqno-%d", seqno), nil)
	if err == nil && slices.ContainsFunc(own.spaces, func(s byte) bool { return slices.Contains(over.spaces, s) }) {
		own.remove()
		err = errNotIngestible
	}
	if err != nil {
		over.remove()
		return nil
	}
	return &ingestFiles{fs: over.fs, paths: append(over.paths, own.paths...), spaces: append(over.spaces, own.spaces...)}
}

// remove deletes the files (pebble linked its own copies when it ingested
// them).
func (f *ingestFiles) remove() {
	for _, p := range f.paths {
		_ = f.fs.Remove(p)
	}
}

// writeIngestFiles writes b's final state of every key it touches as
// sstables: one per key space (the first byte of the key), so each file's
// bounds are as tight as its contents and the rows of a big write-set do
// not overlap the raft log's or the metadata's files. name distinguishes
// the files of concurrent callers. every, when not nil, is called after
// every ingestCheckKeys keys written.
func (e *Engine) writeIngestFiles(b *pebble.Batch, name string, every func()) (*ingestFiles, error) {
	dir := e.opts.FS.PathJoin(e.dir, ingestDir)
	if err := e.opts.FS.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	files := &ingestFiles{fs: e.opts.FS}
	// the level-0 writer options: ingested files overlapping the data land
	// in L0, whose blocks are not compressed (see compression)
	wo := e.opts.MakeWriterOptions(0, e.db.TableFormat())
	var w *sstable.Writer
	var space byte
	written := 0
	write := func(k, v []byte, del bool) error {
		if len(k) == 0 {
			return errNotIngestible // no key space to file it under
		}
		if written++; every != nil && written%ingestCheckKeys == 0 {
			every()
		}
		if w == nil || k[0] != space {
			if w != nil {
				if err := w.Close(); err != nil {
					w = nil
					return err
				}
			}
			p := e.opts.FS.PathJoin(dir, fmt.Sprintf("%s-%03d.sst", name, len(files.paths)))
			var err error
			if w, err = CreateSSTable(e.opts.FS, p, wo); err != nil {
				return err
			}
			files.paths = append(files.paths, p)
			files.spaces = append(files.spaces, k[0])
			space = k[0]
		}
		if del {
			return w.Delete(k)
		}
		return w.Set(k, v)
	}
	var err error
	if b.Indexed() {
		err = finalOpsIndexed(b, write)
	} else {
		err = finalOpsSorted(b, write)
	}
	if w != nil {
		if cerr := w.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		files.remove()
		return nil, err
	}
	return files, nil
}

// batchOps calls fn with every Set and Delete of b, in batch order, and
// fails with errNotIngestible at any other operation.
func batchOps(b *pebble.Batch, fn func(k, v []byte, del bool)) error {
	r := b.Reader()
	for {
		kind, k, v, ok, err := r.Next()
		if err != nil {
			return fmt.Errorf("%w: batch: %v", ErrCorruptData, err)
		}
		if !ok {
			return nil
		}
		switch kind {
		case pebble.InternalKeyKindSet:
			fn(k, v, false)
		case pebble.InternalKeyKindDelete, pebble.InternalKeyKindDeleteSized:
			fn(k, nil, true)
		default:
			return errNotIngestible
		}
	}
}

// finalOpsSorted calls fn with the last operation of b on every key, in key
// order, by sorting b's operations.
func finalOpsSorted(b *pebble.Batch, fn func(k, v []byte, del bool) error) error {
	entries := make([]batchEntry, 0, b.Count())
	if err := batchOps(b, func(k, v []byte, del bool) {
		entries = append(entries, batchEntry{key: k, value: v, del: del, pos: len(entries)})
	}); err != nil {
		return err
	}
	// a key's operations stay in batch order, so the last wins (a stable
	// sort did that too, three times slower on a million shuffled keys)
	slices.SortFunc(entries, func(a, b batchEntry) int {
		if c := bytes.Compare(a.key, b.key); c != 0 {
			return c
		}
		return a.pos - b.pos
	})
	for i, en := range entries {
		if i+1 < len(entries) && bytes.Equal(entries[i+1].key, en.key) {
			continue // a later operation on the same key replaces this one
		}
		if err := fn(en.key, en.value, en.del); err != nil {
			return err
		}
	}
	return nil
}

// finalOpsIndexed is finalOpsSorted for an indexed batch (a streaming
// transaction's provisional batch), whose index already orders its keys:
// its own iterator gives every key whose last operation is a Set, and only
// the deleted keys are sorted. Sorting all of a million-row batch's
// operations took most of a second under load, its iterator a tenth.
func finalOpsIndexed(b *pebble.Batch, fn func(k, v []byte, del bool) error) error {
	var dels [][]byte
	if err := batchOps(b, func(k, _ []byte, del bool) {
		if del {
			dels = append(dels, k)
		}
	}); err != nil {
		return err
	}
	slices.SortFunc(dels, bytes.Compare)
	dels = slices.CompactFunc(dels, bytes.Equal)
	it, err := b.NewBatchOnlyIter(context.Background(), nil)
	if err != nil {
		return err
	}
	valid := it.First()
	for err == nil && (valid || len(dels) > 0) {
		switch {
		case len(dels) > 0 && (!valid || bytes.Compare(dels[0], it.Key()) < 0):
			// deleted last: the iterator hides it
			err = fn(dels[0], nil, true)
			dels = dels[1:]
		default:
			if len(dels) > 0 && bytes.Equal(dels[0], it.Key()) {
				dels = dels[1:] // set again after its deletion
			}
			err = fn(it.Key(), it.Value(), false)
			valid = it.Next()
		}
	}
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	return err
}

// CreateSSTable creates the file path on fs and returns a writer of an
// sstable into it. Its writes are buffered a megabyte at a time: pebble's
// own file writer issues one write(2) per 4 KiB block, which made writing
// 100 MB cost more in system calls than in encoding.
func CreateSSTable(fs vfs.FS, path string, wo sstable.WriterOptions) (*sstable.Writer, error) {
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, err
	}
	return sstable.NewWriter(&bufferedWritable{f: f, w: bufio.NewWriterSize(f, 1<<20)}, wo), nil
}

// bufferedWritable is an objstorage.Writable over a file, buffered.
type bufferedWritable struct {
	f vfs.File
	w *bufio.Writer
}

func (b *bufferedWritable) Write(p []byte) error {
	_, err := b.w.Write(p)
	return err
}

func (b *bufferedWritable) Finish() error {
	err := b.w.Flush()
	if err == nil {
		err = b.f.Sync()
	}
	if cerr := b.f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (b *bufferedWritable) Abort() { _ = b.f.Close() }

// ingest makes the files part of the database, all at once.
func (e *Engine) ingest(files *ingestFiles) error {
	defer files.remove()
	if len(files.paths) == 0 {
		return nil
	}
	if err := e.db.Ingest(context.Background(), files.paths); err != nil {
		return err
	}
	e.ingested.Add(1)
	return nil
}

// IngestedBatches is the number of batches committed by ingestion.
func (e *Engine) IngestedBatches() uint64 { return e.ingested.Load() }

// removeIngestLeftovers deletes files a crash left before their ingestion
// (they were never part of the database).
func (e *Engine) removeIngestLeftovers() error {
	dir := e.opts.FS.PathJoin(e.dir, ingestDir)
	if _, err := e.opts.FS.Stat(dir); err != nil {
		return nil // none
	}
	return e.opts.FS.RemoveAll(dir)
}
