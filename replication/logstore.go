package replication

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/certusdb/certus/storage"
)

// Keys of the raft log and state inside the engine's pebble database.
var (
	keyHardState = []byte{storage.SpaceReplication, 'h'}
	keyConfState = []byte{storage.SpaceReplication, 'c'}
	keySnapMeta  = []byte{storage.SpaceReplication, 's'} // index(8) term(8) of the log's compaction point
	logPrefix    = []byte{storage.SpaceReplication, 'l'}
)

// LogSpans are the prefixes of the keys this package appends in
// increasing order and truncates by range: the raft log and the
// certification records (storage.Config.LogSpans).
func LogSpans() [][]byte { return [][]byte{logPrefix, certPrefix} }

func logKey(i uint64) []byte {
	return binary.BigEndian.AppendUint64(append([]byte{}, logPrefix...), i)
}

// LogStore is the raft log and hard state, kept in pebble. It implements
// raft.Storage. Entries are written by the Ready loop; raft reads them back
// through the Storage methods (from a small in-memory tail when possible).
type LogStore struct {
	db *pebble.DB

	mu        sync.Mutex
	hs        *pb.HardState
	cs        *pb.ConfState
	snapIndex uint64 // entries ≤ snapIndex are compacted
	snapTerm  uint64
	last      uint64
	tail      []*pb.Entry // recent entries, tail[i].Index == tailStart+i
	tailStart uint64
	// sizes[i] is the stored size of entry snapIndex+1+i; bytes their sum.
	sizes []uint32
	bytes uint64
	// snapshot, when set, builds the raft snapshot the leader sends to a
	// follower that needs compacted entries.
	snapshot func() (*pb.Snapshot, error)
}

const tailCap = 4096

var _ raft.Storage = (*LogStore)(nil)

// OpenLogStore loads the log's state from db.
func OpenLogStore(db *pebble.DB) (*LogStore, error) {
	s := &LogStore{db: db, hs: &pb.HardState{}, cs: &pb.ConfState{}}
	if v, ok, err := get(db, keyHardState); err != nil {
		return nil, err
	} else if ok {
		if err := proto.Unmarshal(v, s.hs); err != nil {
			return nil, fmt.Errorf("replication: corrupt hard state: %w", err)
		}
	}
	if v, ok, err := get(db, keyConfState); err != nil {
		return nil, err
	} else if ok {
		if err := proto.Unmarshal(v, s.cs); err != nil {
			return nil, fmt.Errorf("replication: corrupt conf state: %w", err)
		}
	}
	if v, ok, err := get(db, keySnapMeta); err != nil {
		return nil, err
	} else if ok {
		if len(v) != 16 {
			return nil, errors.New("replication: corrupt snapshot metadata")
		}
		s.snapIndex, s.snapTerm = binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:])
	}
	s.last = s.snapIndex
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: logKey(s.snapIndex + 1), UpperBound: prefixEnd(logPrefix)})
	if err != nil {
		return nil, err
	}
	for it.First(); it.Valid(); it.Next() {
		i := binary.BigEndian.Uint64(it.Key()[len(logPrefix):])
		if i != s.last+1 {
			it.Close()
			return nil, fmt.Errorf("replication: raft log has a gap: entry %d follows %d", i, s.last)
		}
		s.last = i
		s.sizes = append(s.sizes, uint32(len(it.Value())))
		s.bytes += uint64(len(it.Value()))
	}
	if err := it.Close(); err != nil {
		return nil, err
	}
	s.tailStart = s.last + 1
	return s, nil
}

func get(db pebble.Reader, key []byte) ([]byte, bool, error) {
	v, closer, err := db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	out := append([]byte(nil), v...)
	closer.Close()
	return out, true, nil
}

func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	end[len(end)-1]++
	return end
}

// InitialState implements raft.Storage.
func (s *LogStore) InitialState() (*pb.HardState, *pb.ConfState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return proto.Clone(s.hs).(*pb.HardState), proto.Clone(s.cs).(*pb.ConfState), nil
}

// Entries implements raft.Storage.
func (s *LogStore) Entries(lo, hi, maxSize uint64) ([]*pb.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if lo <= s.snapIndex {
		return nil, raft.ErrCompacted
	}
	if hi > s.last+1 {
		return nil, raft.ErrUnavailable
	}
	var out []*pb.Entry
	size := uint64(0)
	add := func(e *pb.Entry) bool {
		size += uint64(proto.Size(e))
		if len(out) > 0 && size > maxSize {
			return false
		}
		out = append(out, e)
		return true
	}
	i := lo
	for ; i < hi && i < s.tailStart; i++ {
		v, ok, err := get(s.db, logKey(i))
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, raft.ErrUnavailable
		}
		e := &pb.Entry{}
		if err := proto.Unmarshal(v, e); err != nil {
			return nil, fmt.Errorf("replication: corrupt log entry %d: %w", i, err)
		}
		if !add(e) {
			return out, nil
		}
	}
	for ; i < hi; i++ {
		if !add(s.tail[i-s.tailStart]) {
			break
		}
	}
	return out, nil
}

// Term implements raft.Storage.
func (s *LogStore) Term(i uint64) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i == s.snapIndex {
		return s.snapTerm, nil
	}
	if i < s.snapIndex {
		return 0, raft.ErrCompacted
	}
	if i > s.last {
		return 0, raft.ErrUnavailable
	}
	if i >= s.tailStart {
		return s.tail[i-s.tailStart].GetTerm(), nil
	}
	v, ok, err := get(s.db, logKey(i))
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, raft.ErrUnavailable
	}
	e := &pb.Entry{}
	if err := proto.Unmarshal(v, e); err != nil {
		return 0, fmt.Errorf("replication: corrupt log entry %d: %w", i, err)
	}
	return e.GetTerm(), nil
}

// LastIndex implements raft.Storage.
func (s *LogStore) LastIndex() (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last, nil
}

// FirstIndex implements raft.Storage.
func (s *LogStore) FirstIndex() (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snapIndex + 1, nil
}

// Snapshot implements raft.Storage. Certus sends state by its own state
// transfer: the raft snapshot carries the metadata of the leader's applied
// state and, as data, where to fetch it (see Core.snapshot).
func (s *LogStore) Snapshot() (*pb.Snapshot, error) {
	s.mu.Lock()
	fn := s.snapshot
	s.mu.Unlock()
	if fn != nil {
		return fn()
	}
	return nil, raft.ErrSnapshotTemporarilyUnavailable
}

// Bytes is the stored size of the log's entries.
func (s *LogStore) Bytes() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes
}

// BytesAfter is the stored size of the entries after index.
func (s *LogStore) BytesAfter(index uint64) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if index <= s.snapIndex {
		return s.bytes
	}
	n := uint64(0)
	for _, sz := range s.sizes[min(index-s.snapIndex, uint64(len(s.sizes))):] {
		n += uint64(sz)
	}
	return n
}

// RetentionPoint returns the highest index that may be compacted so that
// the entries after it take at most retain bytes (0 when nothing may go).
func (s *LogStore) RetentionPoint(retain uint64) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bytes <= retain {
		return s.snapIndex
	}
	over := s.bytes - retain
	i := 0
	for dropped := uint64(0); dropped < over && i < len(s.sizes); i++ {
		dropped += uint64(s.sizes[i])
	}
	return s.snapIndex + uint64(i)
}

// Compact discards the entries up to and including index (which must be
// stored); index becomes the log's compaction point.
func (s *LogStore) Compact(index uint64) error {
	s.mu.Lock()
	first, last := s.snapIndex+1, s.last
	s.mu.Unlock()
	if index < first {
		return nil
	}
	if index > last {
		return fmt.Errorf("replication: compact to %d beyond the last entry %d", index, last)
	}
	term, err := s.Term(index)
	if err != nil {
		return err
	}
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.DeleteRange(logKey(first), logKey(index+1), nil); err != nil {
		return err
	}
	if err := b.Set(keySnapMeta, snapMetaValue(index, term), nil); err != nil {
		return err
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := index - s.snapIndex
	for _, sz := range s.sizes[:n] {
		s.bytes -= uint64(sz)
	}
	s.sizes = append(s.sizes[:0:0], s.sizes[n:]...)
	s.snapIndex, s.snapTerm = index, term
	if s.tailStart <= index {
		if drop := index + 1 - s.tailStart; drop >= uint64(len(s.tail)) {
			s.tail = nil
			s.tailStart = s.last + 1
		} else {
			s.tail = append([]*pb.Entry(nil), s.tail[drop:]...)
			s.tailStart = index + 1
		}
	}
	return nil
}

func snapMetaValue(index, term uint64) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, index), term)
}

// resetTo writes into b the replacement of the whole log by a compaction
// point at index/term (a state transfer installed the state at or after
// index). Call resetDone after b is committed.
func (s *LogStore) resetTo(b *pebble.Batch, index, term uint64) error {
	if err := b.DeleteRange(logPrefix, prefixEnd(logPrefix), nil); err != nil {
		return err
	}
	return b.Set(keySnapMeta, snapMetaValue(index, term), nil)
}

// resetDone updates the in-memory state after resetTo's batch committed.
func (s *LogStore) resetDone(index, term uint64, cs *pb.ConfState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.snapIndex, s.snapTerm, s.last = index, term, index
	s.tail, s.tailStart = nil, index+1
	s.sizes, s.bytes = nil, 0
	if cs != nil {
		s.cs = proto.Clone(cs).(*pb.ConfState)
	}
}

// setHardState records hs as persisted (it was written by a batch of the
// caller's).
func (s *LogStore) setHardState(hs *pb.HardState) {
	s.mu.Lock()
	s.hs = proto.Clone(hs).(*pb.HardState)
	s.mu.Unlock()
}

// setSnapshotter installs the function that builds raft snapshots.
func (s *LogStore) setSnapshotter(fn func() (*pb.Snapshot, error)) {
	s.mu.Lock()
	s.snapshot = fn
	s.mu.Unlock()
}

// Save persists entries and hard state in one batch, replacing any
// conflicting suffix of the log, syncing when sync is set.
func (s *LogStore) Save(entries []*pb.Entry, hs *pb.HardState, sync bool) error {
	if len(entries) == 0 && raft.IsEmptyHardState(hs) {
		return nil
	}
	b := s.db.NewBatch()
	defer b.Close()
	s.mu.Lock()
	last := s.last
	s.mu.Unlock()
	var sizes []int
	if len(entries) > 0 {
		first := entries[0].GetIndex()
		if first <= last {
			if err := b.DeleteRange(logKey(first), logKey(last+1), nil); err != nil {
				return err
			}
		}
		for _, e := range entries {
			data, err := proto.Marshal(e)
			if err != nil {
				return err
			}
			sizes = append(sizes, len(data))
			if err := b.Set(logKey(e.GetIndex()), data, nil); err != nil {
				return err
			}
		}
	}
	if !raft.IsEmptyHardState(hs) {
		data, err := proto.Marshal(hs)
		if err != nil {
			return err
		}
		if err := b.Set(keyHardState, data, nil); err != nil {
			return err
		}
	}
	opts := pebble.NoSync
	if sync {
		opts = pebble.Sync
	}
	if err := b.Commit(opts); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !raft.IsEmptyHardState(hs) {
		s.hs = proto.Clone(hs).(*pb.HardState)
	}
	if len(entries) > 0 {
		first := entries[0].GetIndex()
		if keep := first - 1 - s.snapIndex; keep < uint64(len(s.sizes)) {
			for _, sz := range s.sizes[keep:] {
				s.bytes -= uint64(sz)
			}
			s.sizes = s.sizes[:keep]
		}
		for _, sz := range sizes {
			s.sizes = append(s.sizes, uint32(sz))
			s.bytes += uint64(sz)
		}
		if first < s.tailStart {
			s.tail = s.tail[:0]
			s.tailStart = first
		} else {
			s.tail = s.tail[:first-s.tailStart]
		}
		s.tail = append(s.tail, entries...)
		s.last = entries[len(entries)-1].GetIndex()
		if len(s.tail) > tailCap {
			drop := len(s.tail) - tailCap/2
			s.tail = append([]*pb.Entry(nil), s.tail[drop:]...)
			s.tailStart += uint64(drop)
		}
	}
	return nil
}

// confStateKV is the write that persists cs; it is committed with the
// applied seqno of the conf change, after which setConfState records it.
func confStateKV(cs *pb.ConfState) (storage.KV, error) {
	data, err := proto.Marshal(cs)
	if err != nil {
		return storage.KV{}, err
	}
	return storage.KV{Key: keyConfState, Value: data}, nil
}

func (s *LogStore) setConfState(cs *pb.ConfState) {
	s.mu.Lock()
	s.cs = proto.Clone(cs).(*pb.ConfState)
	s.mu.Unlock()
}

// ConfState returns the current configuration.
func (s *LogStore) ConfState() *pb.ConfState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return proto.Clone(s.cs).(*pb.ConfState)
}

// IsFresh reports whether the engine holds no raft log yet: a node that
// has never been part of a cluster.
func IsFresh(eng *storage.Engine) (bool, error) {
	s, err := OpenLogStore(eng.DB())
	if err != nil {
		return false, err
	}
	last, _ := s.LastIndex()
	if last != 0 || eng.Applied() != 0 {
		return false, nil
	}
	// an interrupted state transfer wiped the state: not fresh
	_, pending, err := get(eng.DB(), TransferRecordKey)
	return !pending, err
}
