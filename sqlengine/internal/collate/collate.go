// Package collate compares SQL strings under their collations faster than
// go-mysql-server does for the hot cases: a set of rows (DISTINCT, the
// fast path's DISTINCT, COUNT(DISTINCT)) and the order of one string
// column (the fast path's sort), with a collation's rune weights, ASCII
// ones from a table. Equal under the collation is equal here, as in
// go-mysql-server's StringType.Compare and hash.HashOf.
package collate

import (
	"cmp"
	"encoding/binary"
	"hash/maphash"
	"sync"
	"unicode/utf8"
	"unsafe"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/hash"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// Set is a set of rows compared under their columns' collations
// (by hash, as go-mysql-server's GROUP BY compares keys); DISTINCT, the
// fast path's DISTINCT and COUNT(DISTINCT) share it.
//
// When every column is a string, the set hashes each value's rune
// weights itself (an ASCII character's from a table) in one write:
// go-mysql-server's hash.HashOf looked every rune's weight up in a map and
// wrote its four bytes to the hash one call at a time, which was two
// thirds of the CPU of sysbench's distinct_ranges queries.
type Set struct {
	sch  sql.Schema
	seen map[uint64]struct{}
	// weights are the string columns' collations' rune weights (nil for a
	// binary column); nil when a column is not a string
	weights []*runeWeights
	h       maphash.Hash
	buf     []byte
}

// NewSet returns an empty set of rows of types.
func NewSet(types []sql.Type) *Set {
	sch := make(sql.Schema, len(types))
	for i, t := range types {
		sch[i] = &sql.Column{Type: t}
	}
	return NewSetOf(sch)
}

// NewSetOf returns an empty set of rows of sch.
func NewSetOf(sch sql.Schema) *Set {
	s := &Set{sch: sch, seen: map[uint64]struct{}{}}
	weights := make([]*runeWeights, len(sch))
	for i, c := range sch {
		st, ok := c.Type.(sql.StringType)
		if !ok {
			return s
		}
		if coll := st.Collation(); coll != sql.Collation_binary {
			if coll.Sorter() == nil {
				return s
			}
			weights[i] = runeWeightsOf(coll)
		}
	}
	s.weights = weights
	return s
}

// Add adds row and reports whether it was new.
func (s *Set) Add(ctx *sql.Context, row sql.Row) (bool, error) {
	h, err := s.hash(ctx, row)
	if err != nil {
		return false, err
	}
	if _, dup := s.seen[h]; dup {
		return false, nil
	}
	s.seen[h] = struct{}{}
	return true, nil
}

// Len is the number of rows in the set.
func (s *Set) Len() int { return len(s.seen) }

// hash is row's hash: equal under the columns' collations, equal hashes.
func (s *Set) hash(ctx *sql.Context, row sql.Row) (uint64, error) {
	if s.weights == nil || len(row) != len(s.weights) {
		return hash.HashOf(ctx, s.sch, row)
	}
	s.h.Reset()
	for i, v := range row {
		if i > 0 {
			s.h.WriteByte(0)
		}
		if v == nil {
			s.h.WriteString("<nil>")
			continue
		}
		var str string
		switch x := v.(type) {
		case string:
			str = x
		case []byte:
			str = BytesOf(x)
		default:
			var err error
			if str, err = types.ConvertToString(ctx, v, s.sch[i].Type.(sql.StringType), nil); err != nil {
				return 0, err
			}
		}
		w := s.weights[i]
		if w == nil { // binary: the bytes themselves
			s.h.WriteString(str)
			continue
		}
		buf, err := w.appendWeights(s.buf[:0], str)
		if err != nil {
			return 0, err
		}
		s.buf = buf
		s.h.Write(buf)
	}
	return s.h.Sum64(), nil
}

// runeWeights are a collation's rune weights, the ASCII characters' in a
// table.
type runeWeights struct {
	ascii  [utf8.RuneSelf]int32
	weight func(rune) int32
}

// weightsByCollation caches runeWeightsOf (sql.CollationID ->
// *runeWeights), so a sort or a DISTINCT does not weigh ASCII again.
var weightsByCollation sync.Map

// runeWeightsOf returns coll's rune weights; coll must have a Sorter.
func runeWeightsOf(coll sql.CollationID) *runeWeights {
	if v, ok := weightsByCollation.Load(coll); ok {
		return v.(*runeWeights)
	}
	w := &runeWeights{weight: coll.Sorter()}
	for c := range w.ascii {
		w.ascii[c] = w.weight(rune(c))
	}
	v, _ := weightsByCollation.LoadOrStore(coll, w)
	return v.(*runeWeights)
}

// next is the weight of s's first rune and its length in bytes.
func (w *runeWeights) next(s string) (int32, int) {
	if s[0] < utf8.RuneSelf {
		return w.ascii[s[0]], 1
	}
	r, n := utf8.DecodeRuneInString(s)
	return w.weight(r), n
}

// appendWeights appends the weights of s's runes to buf, four bytes
// each, little-endian (go-mysql-server's weight string), or fails on
// malformed UTF-8 as go-mysql-server's hashing does.
func (w *runeWeights) appendWeights(buf []byte, s string) ([]byte, error) {
	for len(s) > 0 {
		if s[0] < utf8.RuneSelf {
			buf = binary.LittleEndian.AppendUint32(buf, uint32(w.ascii[s[0]]))
			s = s[1:]
			continue
		}
		r, n := utf8.DecodeRuneInString(s)
		if r == utf8.RuneError && n <= 1 {
			return buf, sql.ErrCollationMalformedString.New("hashing")
		}
		buf = binary.LittleEndian.AppendUint32(buf, uint32(w.weight(r)))
		s = s[n:]
	}
	return buf, nil
}

// WeightCompare returns StringType.Compare for valid UTF-8 strings of
// coll, which has rune weights: weights compared rune by rune, then the
// shorter string first.
func WeightCompare(coll sql.CollationID) func(a, b string) int {
	w := runeWeightsOf(coll)
	return func(a, b string) int {
		for len(a) > 0 && len(b) > 0 {
			if a[0] == b[0] && a[0] < utf8.RuneSelf {
				a, b = a[1:], b[1:]
				continue
			}
			wa, na := w.next(a)
			wb, nb := w.next(b)
			if wa != wb {
				return cmp.Compare(wa, wb)
			}
			a, b = a[na:], b[nb:]
		}
		return cmp.Compare(len(a), len(b))
	}
}

// BytesOf is the bytes of a string or []byte value, as a string that
// shares them.
func BytesOf(v any) string {
	if b, ok := v.([]byte); ok {
		return unsafe.String(unsafe.SliceData(b), len(b))
	}
	return v.(string)
}
