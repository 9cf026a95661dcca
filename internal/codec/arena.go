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
// Nothing handed out is ever reused or written again, so rows and values
// stay valid as long as they are referenced, like separately allocated
// ones; a chunk stays alive while anything in it is referenced. Chunks
// start small and double up to full size, so a scan that returns a row or
// two pins little memory should its row or key be kept for long (a
// transaction's write buffer); a string longer than 1 KiB gets its own
// allocation. The zero Arena is ready to use; an Arena is not safe for
// concurrent use.
type Arena struct {
	vals  []any
	strs  []string
	ints  []int64
	int32 []int32
	bytes []byte
	grown int // chunks allocated so far: sizes double from small to full
}

const (
	arenaValues = 256      // row slots, strings or integers per full chunk
	arenaBytes  = 16 << 10 // bytes per full chunk of string data
	arenaLarge  = 1 << 10  // a string longer than this gets its own allocation
	arenaFirst  = 5        // the first chunks are 1/32, 1/16, ... of full size
)

// chunk returns the size of the next chunk, of a kind whose full size is
// full, and at least min.
func (a *Arena) chunk(full, min int) int {
	n := full
	if a.grown < arenaFirst {
		n = full >> (arenaFirst - a.grown)
	}
	a.grown++
	return max(n, min)
}

// Row returns a row of width nil values. Appending to it reallocates.
func (a *Arena) Row(width int) sql.Row {
	if width > arenaValues {
		return make(sql.Row, width)
	}
	if len(a.vals)+width > cap(a.vals) {
		a.vals = make([]any, 0, a.chunk(arenaValues, width))
	}
	n := len(a.vals)
	a.vals = a.vals[:n+width]
	return a.vals[n : n+width : n+width]
}

// Bytes returns a copy of b. Appending to it reallocates.
func (a *Arena) Bytes(b []byte) []byte {
	if len(b) > arenaLarge {
		return append([]byte(nil), b...)
	}
	if len(a.bytes)+len(b) > cap(a.bytes) {
		a.bytes = make([]byte, 0, a.chunk(arenaBytes, len(b)))
	}
	n := len(a.bytes)
	a.bytes = append(a.bytes, b...)
	return a.bytes[n : n+len(b) : n+len(b)]
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

// box keeps x in slab, a's chunk of its type, and returns it boxed there.
func box[T string | int64 | int32](a *Arena, slab *[]T, x T) any {
	if len(*slab) == cap(*slab) {
		*slab = make([]T, 0, a.chunk(arenaValues, 1))
	}
	*slab = append(*slab, x)
	var zero T
	return boxAt(any(zero), unsafe.Pointer(&(*slab)[len(*slab)-1]))
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
