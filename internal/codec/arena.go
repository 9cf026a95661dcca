package codec

import (
	"unsafe"

	"github.com/dolthub/go-mysql-server/sql"
)

// Arena hands out the memory of the rows a scan decodes in chunks, so a
// scan allocates once per chunk instead of several times per row: the
// row, each string's bytes, and each boxed string or integer. A 100-row
// range select allocated about 8 objects per row before, and allocation
// with its garbage collection took a third of the node's CPU.
//
// Until Reset, nothing handed out is reused or written again, so rows and
// values stay valid as long as they are referenced, like separately
// allocated ones; a chunk stays alive while anything in it is referenced.
// Chunks start small and double up to full size, so a scan that returns a
// row or two pins little memory should its row or key be kept for long (a
// transaction's write buffer); a string longer than 1 KiB gets its own
// allocation. The zero Arena is ready to use; an Arena is not safe for
// concurrent use.
type Arena struct {
	vals  slab[any]
	strs  slab[string]
	ints  slab[int64]
	int32 slab[int32]
	bytes slab[byte]
	grown int  // chunks allocated so far: sizes double from small to full
	reuse bool // Reset was called: chunks are kept for the next Reset
}

// slab is the chunks of one kind of value: the one being filled, the ones
// filled since the last Reset, and the ones Reset handed back for reuse.
// An arena never Reset keeps no list of its filled chunks, so a long scan
// that streams its rows does not hold them all.
type slab[T any] struct {
	cur        []T
	used, free [][]T
}

const (
	arenaValues = 256      // row slots, strings or integers per full chunk
	arenaBytes  = 16 << 10 // bytes per full chunk of string data
	arenaLarge  = 1 << 10  // a string longer than this gets its own allocation
	arenaFirst  = 5        // the first chunks are 1/32, 1/16, ... of full size
	arenaKeep   = 4        // chunks of each kind Reset keeps for reuse (about 100 KiB in all)
)

// take returns the next n elements of s's current chunk, moving on to a
// chunk Reset handed back or a new one (of a kind whose full size is full)
// when they do not fit. The elements hold what was last written there.
func (s *slab[T]) take(a *Arena, full, n int) []T {
	if len(s.cur)+n > cap(s.cur) {
		if s.cur != nil && a.reuse {
			s.used = append(s.used, s.cur)
		}
		if k := len(s.free); k > 0 && cap(s.free[k-1]) >= n {
			s.cur, s.free = s.free[k-1][:0], s.free[:k-1]
		} else {
			size := full
			if a.grown < arenaFirst {
				size = full >> (arenaFirst - a.grown)
			}
			a.grown++
			s.cur = make([]T, 0, max(size, n))
		}
	}
	k := len(s.cur)
	s.cur = s.cur[:k+n]
	return s.cur[k : k+n : k+n]
}

// reset hands the chunks of s back for reuse, keeping the last
// arenaKeep (the largest, as chunks grow) so that one huge scan does not
// pin its memory for the arena's life.
func (s *slab[T]) reset() {
	if s.cur != nil {
		s.used = append(s.used, s.cur)
		s.cur = nil
	}
	s.free = append(s.free, s.used...)
	clear(s.used)
	s.used = s.used[:0]
	if drop := len(s.free) - arenaKeep; drop > 0 {
		copy(s.free, s.free[drop:])
		clear(s.free[arenaKeep:])
		s.free = s.free[:arenaKeep]
	}
}

// Reset makes the memory a handed out so far available again, so that the
// scans of one session reuse the same chunks instead of allocating their
// own. Everything handed out before is then overwritten by what a hands
// out next: call it only when none of it is referenced any more.
func (a *Arena) Reset() {
	a.reuse = true
	a.vals.reset()
	a.strs.reset()
	a.ints.reset()
	a.int32.reset()
	a.bytes.reset()
}

// Row returns a row of width nil values. Appending to it reallocates.
func (a *Arena) Row(width int) sql.Row {
	if width > arenaValues {
		return make(sql.Row, width)
	}
	r := a.vals.take(a, arenaValues, width)
	clear(r)
	return r
}

// Bytes returns a copy of b. Appending to it reallocates.
func (a *Arena) Bytes(b []byte) []byte {
	if len(b) > arenaLarge {
		return append([]byte(nil), b...)
	}
	c := a.bytes.take(a, arenaBytes, len(b))
	copy(c, b)
	return c
}

// String returns b as a string, boxed.
func (a *Arena) String(b []byte) any {
	if len(b) == 0 {
		return "" // boxing the empty string does not allocate
	}
	c := a.Bytes(b)
	return box(a, &a.strs, unsafe.String(&c[0], len(c)))
}

// Int64 returns x boxed.
func (a *Arena) Int64(x int64) any {
	if x >= 0 && x < 256 {
		return x // Go boxes these without allocating
	}
	return box(a, &a.ints, x)
}

// Int32 returns x boxed.
func (a *Arena) Int32(x int32) any {
	if x >= 0 && x < 256 {
		return x
	}
	return box(a, &a.int32, x)
}

// box keeps x in s, a's chunks of its type, and returns it boxed there.
func box[T string | int64 | int32](a *Arena, s *slab[T], x T) any {
	v := s.take(a, arenaValues, 1)
	v[0] = x
	var zero T
	return boxAt(any(zero), unsafe.Pointer(&v[0]))
}

// boxAt returns an interface of like's dynamic type whose value is the one
// at p: Go keeps a boxed string or integer as its type and a pointer to the
// value, so pointing that word at memory the arena never writes again is
// what boxing would have done, minus the allocation. like must hold a
// value of the type p points to, boxed without allocating.
func boxAt(like any, p unsafe.Pointer) any {
	(*[2]unsafe.Pointer)(unsafe.Pointer(&like))[1] = p
	return like
}
