package storage

import (
	"encoding/binary"
	"sync"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
	"github.com/cockroachdb/pebble/v2"
)

// The row cache keeps the stored bytes of rows that point reads fetched,
// so that the next point read of a row skips pebble (whose Get walks the
// memtables and every level: most of a primary-key lookup's storage time).
// It is InnoDB's buffer pool for the hot rows, and it must never show a
// read view a value other than the one pebble would give it.
//
// Generations order the cache against commits. Every commit that writes
// table keys takes the next generation, and with Engine.pubMu held for
// writing (so no view is taken meanwhile) removes the keys it writes from
// the cache before pebble commits the batch. A view's snapshot records the
// generation current when it was taken: every commit of a lower or equal
// generation is in the snapshot, every higher one is not.
//
//   - A read fills the cache with what its snapshot read, stamped with the
//     snapshot's generation, unless a commit newer than the snapshot has
//     written a key of the same shard (shard.maxDel): then the value may
//     already be outdated. The check and the insertion hold the shard's
//     lock, which the invalidation takes too; so either the fill came
//     first and the commit removes it, or the commit came first and the
//     fill is refused.
//   - A read uses an entry only if its own snapshot is at least as new as
//     the entry's (a newer entry may hold a value written after the
//     snapshot). Such an entry is the value in the snapshot: a commit that
//     changed the key after the entry was filled removed it before pebble
//     committed, and so before any snapshot could see the change.
//
// Commits that replace many keys at once (range deletions, a batch of
// more than rowCacheBatchKeys entries, a state transfer) clear the cache
// instead of removing keys one by one, which also costs O(shards) inside
// pubMu rather than O(rows).
//
// Each shard stores its entries in a ring of rowCacheChunk-sized byte
// chunks (no pointers inside for the garbage collector to scan), allocated
// as they are first filled and indexed by the key's hash; writing into a
// chunk again drops the entries it held.

const (
	rowCacheShards = 64
	// rowCacheChunk is the unit a shard's ring is overwritten in; an entry
	// never spans two chunks, so larger rows are not cached.
	rowCacheChunk = 64 << 10
	// rowCacheHeader is an entry's fixed part: key hash (8), generation
	// (8), key length (2), value length (4).
	rowCacheHeader = 22
	// rowCacheBatchKeys is the batch size above which a commit clears the
	// cache instead of removing its keys.
	rowCacheBatchKeys = 4096
	// DefaultRowCacheBytes is the row cache's size when Config leaves it 0.
	DefaultRowCacheBytes = 64 << 20
)

// rowCache is the engine's cache of stored rows; nil when turned off.
type rowCache struct {
	// gen is the generation of the last commit; written with pubMu held
	// for writing, read with it held for reading.
	gen    uint64
	shards [rowCacheShards]rowShard
}

// rowShard is one lock's share of the cache.
type rowShard struct {
	mu sync.RWMutex
	// ring holds the entries: chunk i holds the logical positions p
	// with p/rowCacheChunk%len(ring) == i, nil until first filled.
	ring [][]byte
	// head is the logical position where the next entry goes; the ring
	// holds the entries at logical positions [head-ringBytes, head).
	head uint64
	// index maps a key's hash to the logical position of its entry.
	index map[uint64]uint64
	// maxDel is the newest generation that removed a key of this shard.
	maxDel uint64

	hits, misses atomic.Uint64 // reads served and not
	chunks       atomic.Int64  // chunks allocated
}

// RowCacheStats are the row cache's counters (SHOW STATUS).
type RowCacheStats struct {
	Hits   uint64 // reads the cache served
	Misses uint64 // cacheable reads it did not
	Bytes  uint64 // memory its filled chunks take
}

// RowCacheStats returns the row cache's counters (zero when it is off).
func (e *Engine) RowCacheStats() RowCacheStats {
	var st RowCacheStats
	if e.rows == nil {
		return st
	}
	for i := range e.rows.shards {
		s := &e.rows.shards[i]
		st.Hits += s.hits.Load()
		st.Misses += s.misses.Load()
		st.Bytes += uint64(s.chunks.Load()) * rowCacheChunk
	}
	return st
}

// newRowCache returns a cache of about bytes, or nil when bytes is too
// small to hold a chunk per shard.
func newRowCache(bytes int64) *rowCache {
	chunks := bytes / (rowCacheShards * rowCacheChunk)
	if chunks < 2 {
		return nil
	}
	c := &rowCache{}
	for i := range c.shards {
		c.shards[i].index = map[uint64]uint64{}
		c.shards[i].ring = make([][]byte, chunks)
	}
	return c
}

// cacheable reports whether key is a table key (a row or index entry),
// the only keys the cache holds.
func cacheable(key []byte) bool { return len(key) > 0 && key[0] == spaceTable }

func (c *rowCache) shard(h uint64) *rowShard { return &c.shards[h%rowCacheShards] }

// get returns a copy of the cached value of key for a view of generation
// gen.
func (c *rowCache) get(key []byte, gen uint64) ([]byte, bool) {
	h := xxhash.Sum64(key)
	s := c.shard(h)
	s.mu.RLock()
	v, ok := s.lookup(h, key, gen)
	s.mu.RUnlock()
	if !ok {
		s.misses.Add(1)
		return nil, false
	}
	s.hits.Add(1)
	return v, true
}

// lookup is get's search in the shard; s.mu is held.
func (s *rowShard) lookup(h uint64, key []byte, gen uint64) ([]byte, bool) {
	pos, ok := s.index[h]
	if !ok {
		return nil, false
	}
	e := s.entry(pos)
	if binary.LittleEndian.Uint64(e[8:]) > gen {
		return nil, false
	}
	klen := int(binary.LittleEndian.Uint16(e[16:]))
	vlen := int(binary.LittleEndian.Uint32(e[18:]))
	if string(e[rowCacheHeader:rowCacheHeader+klen]) != string(key) {
		return nil, false // another key with the same hash
	}
	v := e[rowCacheHeader+klen : rowCacheHeader+klen+vlen]
	return append(make([]byte, 0, vlen), v...), true
}

// chunk returns the chunk that holds logical position pos (nil if never
// filled).
func (s *rowShard) chunk(pos uint64) *[]byte {
	return &s.ring[pos/rowCacheChunk%uint64(len(s.ring))]
}

// entry returns the ring's bytes from logical position pos, a filled one,
// to the end of its chunk.
func (s *rowShard) entry(pos uint64) []byte {
	return (*s.chunk(pos))[pos%rowCacheChunk:]
}

// ringBytes is the size of the shard's ring.
func (s *rowShard) ringBytes() uint64 { return uint64(len(s.ring)) * rowCacheChunk }

// put caches val as key's value in a view of generation gen.
func (c *rowCache) put(key, val []byte, gen uint64) {
	n := rowCacheHeader + len(key) + len(val)
	if n > rowCacheChunk || len(key) > 0xffff {
		return
	}
	h := xxhash.Sum64(key)
	s := c.shard(h)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.maxDel > gen {
		return // a newer commit wrote into this shard: val may be outdated
	}
	if room := rowCacheChunk - s.head%rowCacheChunk; uint64(n) > room {
		s.head += room // the rest of this chunk stays unused
	}
	if s.head%rowCacheChunk == 0 && s.head >= s.ringBytes() {
		s.dropChunk(s.head - s.ringBytes())
	}
	if ch := s.chunk(s.head); *ch == nil {
		*ch = make([]byte, rowCacheChunk)
		s.chunks.Add(1)
	}
	e := s.entry(s.head)
	binary.LittleEndian.PutUint64(e, h)
	binary.LittleEndian.PutUint64(e[8:], gen)
	binary.LittleEndian.PutUint16(e[16:], uint16(len(key)))
	binary.LittleEndian.PutUint32(e[18:], uint32(len(val)))
	copy(e[rowCacheHeader:], key)
	copy(e[rowCacheHeader+len(key):], val)
	s.index[h] = s.head
	s.head += uint64(n)
	// a chunk that is not full ends with a zero key length
	if end := s.head % rowCacheChunk; end != 0 && rowCacheChunk-end >= rowCacheHeader {
		binary.LittleEndian.PutUint16(s.entry(s.head)[16:], 0)
	}
}

// dropChunk removes from the index the entries of the chunk that starts at
// logical position start, about to be overwritten.
func (s *rowShard) dropChunk(start uint64) {
	if *s.chunk(start) == nil {
		return
	}
	for pos := start; pos+rowCacheHeader <= start+rowCacheChunk; {
		e := s.entry(pos)
		klen := int(binary.LittleEndian.Uint16(e[16:]))
		if klen == 0 {
			return
		}
		h := binary.LittleEndian.Uint64(e)
		if p, ok := s.index[h]; ok && p == pos {
			delete(s.index, h)
		}
		pos += uint64(rowCacheHeader + klen + int(binary.LittleEndian.Uint32(e[18:])))
	}
}

// invalidate removes from the cache the table keys that b writes, before
// b commits; pubMu is held for writing.
func (c *rowCache) invalidate(b *pebble.Batch) {
	c.gen++
	if b.Count() > rowCacheBatchKeys {
		c.clearShards()
		return
	}
	r := b.Reader()
	for {
		kind, key, value, ok, err := r.Next()
		if err != nil {
			c.clearShards() // cannot happen for a batch built in memory; stay safe
			return
		}
		if !ok {
			return
		}
		switch kind {
		case pebble.InternalKeyKindLogData:
		case pebble.InternalKeyKindSet, pebble.InternalKeyKindDelete, pebble.InternalKeyKindSingleDelete,
			pebble.InternalKeyKindSetWithDelete, pebble.InternalKeyKindDeleteSized, pebble.InternalKeyKindMerge:
			if cacheable(key) {
				c.remove(key)
			}
		case pebble.InternalKeyKindRangeDelete:
			// [key, value) overlaps the table space
			if string(key) < string([]byte{spaceTable + 1}) && string(value) > string([]byte{spaceTable}) {
				c.clearShards()
				return
			}
		default:
			c.clearShards()
			return
		}
	}
}

// remove drops key's entry and fences off older fills of its shard.
func (c *rowCache) remove(key []byte) {
	h := xxhash.Sum64(key)
	s := c.shard(h)
	s.mu.Lock()
	delete(s.index, h)
	s.maxDel = c.gen
	s.mu.Unlock()
}

// clear empties the cache for a change made outside commit (a state
// transfer); pubMu is held for writing.
func (c *rowCache) clear() {
	c.gen++
	c.clearShards()
}

func (c *rowCache) clearShards() {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		if len(s.index) > 0 {
			s.index = map[uint64]uint64{}
		}
		s.maxDel = c.gen
		s.mu.Unlock()
	}
}
