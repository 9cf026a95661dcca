package sqlengine

import (
	"bytes"
	"sort"
	"unicode/utf8"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"

	"github.com/certusdb/certus/internal/codec"
	"github.com/certusdb/certus/sqlengine/internal/gmstable"
	"github.com/certusdb/certus/storage"
	"github.com/certusdb/certus/txn"
)

// Index is the primary key or a secondary index of a table.
type Index struct {
	t       *Table
	id      string
	ii      *storage.IndexInfo // nil for the primary key
	ords    []int
	cols    []codec.KeyColumn
	unique  bool
	prefix  []uint16
	comment string
	usable  bool
}

var (
	_ sql.Index         = (*Index)(nil)
	_ sql.OrderedIndex  = (*Index)(nil)
	_ sql.ExtendedIndex = (*Index)(nil)
)

// GetIndexes implements sql.IndexAddressable: the primary key, then the
// secondary indexes by name (the order SHOW CREATE TABLE and
// information_schema list them in, as go-mysql-server's own tables do).
func (t *Table) GetIndexes(ctx *sql.Context) ([]sql.Index, error) {
	_ = t.refresh(ctx)
	var out []sql.Index
	if !t.def.Keyless() {
		out = append(out, &Index{t: t, id: "PRIMARY", ords: t.info.PKOrds, cols: t.info.PKCols, unique: true, usable: true})
	}
	secondary := make([]sql.Index, 0, len(t.info.Indexes))
	for i := range t.info.Indexes {
		ii := &t.info.Indexes[i]
		secondary = append(secondary, &Index{t: t, id: ii.Def.Name, ii: ii, ords: ii.Ords, cols: ii.Cols, unique: ii.Def.Unique,
			prefix: ii.Def.Prefix, comment: ii.Def.Comment, usable: ii.Usable})
	}
	sort.Slice(secondary, func(i, j int) bool { return secondary[i].ID() < secondary[j].ID() })
	return append(out, secondary...), nil
}

// ID implements sql.Index.
func (i *Index) ID() string { return i.id }

// Database implements sql.Index.
func (i *Index) Database() string { return i.t.def.DB }

// Table implements sql.Index.
func (i *Index) Table() string { return i.t.def.Name }

// Expressions implements sql.Index.
func (i *Index) Expressions() []string {
	out := make([]string, len(i.ords))
	for k, o := range i.ords {
		out[k] = i.t.def.Name + "." + i.t.sch[o].Name
	}
	return out
}

// ExtendedExpressions implements sql.ExtendedIndex.
func (i *Index) ExtendedExpressions(*sql.Context) []string {
	ords := i.extendedOrds()
	out := make([]string, len(ords))
	for k, o := range ords {
		out[k] = i.t.def.Name + "." + i.t.sch[o].Name
	}
	return out
}

// extendedOrds are the ordinals of the index's columns followed, for a
// secondary index, by the primary key columns it does not contain.
func (i *Index) extendedOrds() []int {
	out := append([]int(nil), i.ords...)
	if i.ii == nil {
		return out
	}
	for _, o := range i.t.info.PKOrds {
		if !containsInt(i.ords, o) {
			out = append(out, o)
		}
	}
	return out
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// ColumnExpressionTypes implements sql.Index.
func (i *Index) ColumnExpressionTypes(*sql.Context) []sql.ColumnExpressionType {
	out := make([]sql.ColumnExpressionType, len(i.ords))
	for k, o := range i.ords {
		out[k] = sql.ColumnExpressionType{Expression: i.t.def.Name + "." + i.t.sch[o].Name, Type: i.t.sch[o].Type}
	}
	return out
}

// ExtendedColumnExpressionTypes implements sql.ExtendedIndex.
func (i *Index) ExtendedColumnExpressionTypes(ctx *sql.Context) []sql.ColumnExpressionType {
	ords := i.extendedOrds()
	out := make([]sql.ColumnExpressionType, len(ords))
	for k, o := range ords {
		out[k] = sql.ColumnExpressionType{Expression: i.t.def.Name + "." + i.t.sch[o].Name, Type: i.t.sch[o].Type}
	}
	return out
}

// IsUnique implements sql.Index.
func (i *Index) IsUnique() bool { return i.unique }

// IsSpatial implements sql.Index.
func (i *Index) IsSpatial() bool { return i.ii != nil && i.ii.Def.Kind == "SPATIAL" }

// IsFullText implements sql.Index.
func (i *Index) IsFullText() bool { return i.ii != nil && i.ii.Def.Kind == "FULLTEXT" }

// IsVector implements sql.Index.
func (i *Index) IsVector() bool { return i.ii != nil && i.ii.Def.Kind == "VECTOR" }

// Comment implements sql.Index.
func (i *Index) Comment() string { return i.comment }

// IndexType implements sql.Index.
func (i *Index) IndexType() string {
	if i.ii != nil && i.ii.Def.Kind != "" {
		return i.ii.Def.Kind
	}
	return "BTREE"
}

// IsGenerated implements sql.Index.
func (i *Index) IsGenerated() bool { return false }

// CanSupport implements sql.Index: lookups work on every index whose
// columns have a key encoding.
func (i *Index) CanSupport(*sql.Context, ...sql.Range) bool { return i.usable }

// CanSupportOrderBy implements sql.Index.
func (i *Index) CanSupportOrderBy(sql.Expression) bool { return false }

// PrefixLengths implements sql.Index.
func (i *Index) PrefixLengths() []uint16 { return i.prefix }

// Order implements sql.OrderedIndex.
func (i *Index) Order(*sql.Context) sql.IndexOrder {
	if !i.usable {
		return sql.IndexOrderNone
	}
	return sql.IndexOrderAsc
}

// Reversible implements sql.OrderedIndex.
func (i *Index) Reversible(*sql.Context) bool { return i.usable }

// IndexedAccess implements sql.IndexAddressable.
func (t *Table) IndexedAccess(ctx *sql.Context, lookup sql.IndexLookup) sql.IndexedTable {
	return &IndexedTable{Table: t, lookup: lookup}
}

// PreciseMatch implements sql.IndexAddressable: lookups return exactly the
// rows of their ranges (ranges the key encoding cannot express exactly are
// re-checked against the rows).
func (t *Table) PreciseMatch() bool { return true }

// IndexedTable is a table read through an index lookup.
type IndexedTable struct {
	*Table
	lookup sql.IndexLookup
	// refCheck is set for a foreign key's check that a parent row exists.
	refCheck bool
	// live lookups (a foreign key's) also read the rows the statement
	// changed so far.
	live bool
}

var _ sql.ReferenceChecker = (*IndexedTable)(nil)

// SetReferenceCheck implements sql.ReferenceChecker: the lookup checks
// that a foreign key's parent row exists, and reads it with
// txn.Reference.
func (t *IndexedTable) SetReferenceCheck() error {
	t.refCheck = true
	return nil
}

// LookupPartitions implements sql.IndexedTable.
func (t *IndexedTable) LookupPartitions(ctx *sql.Context, lookup sql.IndexLookup) (sql.PartitionIter, error) {
	t.lookup = lookup
	return gmstable.Partitions(), nil
}

// PartitionRows implements sql.Table for the lookup.
func (t *IndexedTable) PartitionRows(ctx *sql.Context, _ sql.Partition) (sql.RowIter, error) {
	if err := t.refresh(ctx); err != nil {
		return nil, err
	}
	idx, ok := t.lookup.Index.(*Index)
	if !ok {
		return nil, sql.ErrIndexNotFound.New(t.lookup.Index.ID())
	}
	// the index object may predate the table's refresh; find it again
	var ii *storage.IndexInfo
	if idx.ii != nil {
		ii = t.info.IndexByID(idx.ii.Def.ID)
		if ii == nil {
			return nil, sql.ErrIndexNotFound.New(idx.id)
		}
	}
	// IsEmptyRange is not honoured: go-mysql-server sets it for any NULL
	// key, also one a null-safe join (<=>) looks up; rangeBounds finds the
	// ranges that match nothing
	ranges, ok := t.lookup.Ranges.(sql.MySQLRangeCollection)
	if !ok {
		return nil, sql.ErrUnsupportedFeature.New("non-MySQL index ranges")
	}
	cols := t.info.PKCols
	if ii != nil {
		cols = ii.Cols
	}
	// Each range the key bounds cannot express exactly gets its own filter
	// of the rows scanned for it: the ranges (boxes over the index
	// columns) are disjoint, but their bounds on the key may overlap, and a
	// row must come out of the one range that holds it only.
	var bounds []keyRange
	for _, r := range ranges {
		kr, exact, empty, err := rangeBounds(ctx, cols, r)
		if err != nil {
			return nil, err
		}
		if empty {
			continue
		}
		if !exact {
			if kr.filter, err = t.rangeFilter(ctx, idx, r); err != nil {
				return nil, err
			}
		}
		bounds = append(bounds, kr)
	}
	// A reverse lookup's ranges come in descending order already
	// (sql.NewIndexLookup reverses them); each is scanned backwards.
	tx := t.p.txnFor(ctx)
	mode := readMode(ctx)
	if t.refCheck {
		mode = txn.Reference
	}
	rev := t.lookup.IsReverse
	ords, err := t.projOrds()
	if err != nil {
		return nil, err
	}
	ri := &rowIter{proj: ords}
	open := func() (*txn.RowIter, error) {
		if len(bounds) == 0 {
			return nil, nil
		}
		b := bounds[0]
		bounds = bounds[1:]
		ri.filter = b.filter
		if b.point != nil && mode != txn.Snapshot {
			// Lock the key even when no row has it (InnoDB's record or gap
			// lock on a unique key), so DELETE/UPDATE of a missing row
			// orders against a concurrent INSERT of it.
			key := storage.CertKey(t.def.ID, b.point)
			if ii != nil {
				if !ii.Def.Unique {
					key = nil
				} else {
					key = storage.UniqueCertKey(t.def.ID, ii.Def.ID, b.point)
				}
			}
			if key != nil {
				if err := tx.LockKey(ctx, key, mode); err != nil {
					return nil, err
				}
			}
		}
		switch {
		case t.live:
			return tx.LiveScan(ctx, t.info, ii, b.lo, b.hi, rev, mode)
		case ii == nil:
			return tx.Scan(ctx, t.info, b.lo, b.hi, rev, mode)
		}
		return tx.IndexScan(ctx, t.info, ii, b.lo, b.hi, rev, mode)
	}
	ri.next = func() (*txn.RowIter, error) {
		it, err := open()
		return it, engineErr(err)
	}
	return ri, nil
}

// keyRange is [lo, hi) over encoded keys (nil hi: unbounded). point holds
// the full key when the range is an equality on every key column; filter,
// when set, re-checks the rows scanned against the range.
type keyRange struct {
	lo, hi, point []byte
	filter        sql.Expression
}

// rangeFilter is an expression true for the rows in range r of idx (whose
// columns may extend to the primary key's).
func (t *IndexedTable) rangeFilter(ctx *sql.Context, idx *Index, r sql.MySQLRange) (sql.Expression, error) {
	ords := idx.extendedOrds()
	if len(ords) > len(r) {
		ords = ords[:len(r)]
	}
	exprs := make([]sql.Expression, len(ords))
	for k, o := range ords {
		c := t.sch[o]
		exprs[k] = expression.NewGetFieldWithTable(o, 0, c.Type, t.def.DB, t.def.Name, c.Name, c.Nullable)
	}
	return expression.NewRangeFilterExpr(ctx, exprs, []sql.MySQLRange{r})
}

// rangeBounds converts one range (a box over the index columns) to encoded
// key bounds. exact is false when the bounds cover more than the range and
// rows must be re-checked; empty when no key can match.
func rangeBounds(ctx *sql.Context, cols []codec.KeyColumn, r sql.MySQLRange) (keyRange, bool, bool, error) {
	var prefix []byte
	exact := true
	for i, ce := range r {
		if i >= len(cols) {
			// a range over a secondary index's primary key columns: scan
			// the index values' range and re-check
			return keyRange{lo: prefix, hi: codec.PrefixEnd(prefix)}, false, false, nil
		}
		kc := cols[i]
		if nullBound(ce) {
			return keyRange{}, true, true, nil // = NULL matches nothing
		}
		if v, ok := pointKey(ce); ok {
			enc, precise, ok := encodeBound(ctx, kc, v, ce.Typ)
			switch {
			case ok && precise:
				prefix = append(prefix, enc...)
				continue
			case ok:
				// a value longer than the index prefix: scan the keys of
				// its prefix, re-check
				p := append(prefix, enc...)
				return keyRange{lo: p, hi: codec.PrefixEnd(p)}, false, false, nil
			}
			// an inexact point: scan the column's whole range, re-check
			return keyRange{lo: prefix, hi: codec.PrefixEnd(prefix)}, false, false, nil
		}
		if ce.Type() == sql.RangeType_EqualNull {
			prefix = append(prefix, codec.TagNull)
			continue
		}
		lo, hi, ex, empty, err := columnBounds(ctx, kc, ce, prefix)
		if err != nil || empty {
			return keyRange{}, false, empty, err
		}
		if !ex {
			exact = false
		}
		for _, rest := range r[i+1:] {
			if rest.Type() != sql.RangeType_All {
				exact = false
			}
		}
		return keyRange{lo: lo, hi: hi}, exact, false, nil
	}
	kr := keyRange{lo: prefix, hi: codec.PrefixEnd(prefix)}
	if len(r) == len(cols) {
		kr.point = prefix
	}
	return kr, exact, false, nil
}

// nullBound reports whether a bound of ce compares with a NULL key (a
// lookup of a NULL value without <=>).
func nullBound(ce sql.MySQLRangeColumnExpr) bool {
	switch b := ce.LowerBound.(type) {
	case sql.Below:
		if b.Key == nil {
			return true
		}
	case sql.Above:
		if b.Key == nil {
			return true
		}
	}
	switch b := ce.UpperBound.(type) {
	case sql.Below:
		return b.Key == nil
	case sql.Above:
		return b.Key == nil
	}
	return false
}

// pointKey reports whether ce is an equality on one non-NULL value.
func pointKey(ce sql.MySQLRangeColumnExpr) (interface{}, bool) {
	lo, ok1 := ce.LowerBound.(sql.Below)
	hi, ok2 := ce.UpperBound.(sql.Above)
	if !ok1 || !ok2 || lo.Key == nil || hi.Key == nil {
		return nil, false
	}
	c, err := ce.Typ.Compare(nil, lo.Key, hi.Key)
	if err != nil || c != 0 {
		return nil, false
	}
	return lo.Key, true
}

// encodeBound converts a range key to the column type and encodes it. ok
// is false when it has no encoding (the conversion changed the value);
// precise is false when a prefix index keeps only the value's first
// characters: enc is then the key of every value starting with them.
func encodeBound(ctx *sql.Context, kc codec.KeyColumn, v interface{}, typ sql.Type) (enc []byte, precise, ok bool) {
	cv, inRange, err := typ.Convert(ctx, v)
	if err != nil || inRange != sql.InRange {
		return nil, false, false
	}
	if cmp, err := typ.Compare(ctx, cv, v); err != nil || cmp != 0 {
		return nil, false, false
	}
	enc, err = kc.AppendKey(nil, cv)
	if err != nil {
		return nil, false, false
	}
	return enc, !truncated(kc, cv), true
}

// truncated reports whether a prefix key column cuts value v.
func truncated(kc codec.KeyColumn, v interface{}) bool {
	if kc.Prefix <= 0 {
		return false
	}
	switch x := v.(type) {
	case string:
		if kc.Kind == codec.KindBytes {
			return len(x) > kc.Prefix
		}
		return utf8.RuneCountInString(x) > kc.Prefix
	case []byte:
		return len(x) > kc.Prefix
	}
	return false
}

// columnBounds converts the cuts of the first non-point column.
func columnBounds(ctx *sql.Context, kc codec.KeyColumn, ce sql.MySQLRangeColumnExpr, prefix []byte) (lo, hi []byte, exact, empty bool, err error) {
	exact = true
	with := func(b []byte) []byte { return append(append([]byte{}, prefix...), b...) }
	switch c := ce.LowerBound.(type) {
	case sql.BelowNull:
		lo = with(nil)
	case sql.AboveNull:
		lo = with([]byte{codec.TagValue})
	case sql.Below:
		enc, precise, ok := encodeBound(ctx, kc, c.Key, ce.Typ)
		switch {
		case ok:
			lo, exact = with(enc), precise
		default:
			lo, exact = with([]byte{codec.TagValue}), false
		}
	case sql.Above:
		enc, precise, ok := encodeBound(ctx, kc, c.Key, ce.Typ)
		switch {
		case ok && precise:
			lo = codec.PrefixEnd(with(enc))
		case ok:
			// values after the key may share its prefix's key
			lo, exact = with(enc), false
		default:
			lo, exact = with([]byte{codec.TagValue}), false
		}
	case sql.AboveAll:
		return nil, nil, true, true, nil
	default:
		lo, exact = with(nil), false
	}
	switch c := ce.UpperBound.(type) {
	case sql.AboveAll:
		hi = codec.PrefixEnd(prefix)
	case sql.Above:
		enc, precise, ok := encodeBound(ctx, kc, c.Key, ce.Typ)
		switch {
		case ok:
			hi, exact = codec.PrefixEnd(with(enc)), exact && precise
		default:
			hi, exact = codec.PrefixEnd(prefix), false
		}
	case sql.Below:
		enc, precise, ok := encodeBound(ctx, kc, c.Key, ce.Typ)
		switch {
		case ok && precise:
			hi = with(enc)
		case ok:
			// values before the key may share its prefix's key
			hi, exact = codec.PrefixEnd(with(enc)), false
		default:
			hi, exact = codec.PrefixEnd(prefix), false
		}
	case sql.AboveNull:
		hi = with([]byte{codec.TagValue})
	case sql.BelowNull:
		return nil, nil, true, true, nil
	default:
		hi, exact = codec.PrefixEnd(prefix), false
	}
	if hi != nil && bytes.Compare(lo, hi) >= 0 {
		return nil, nil, true, true, nil
	}
	return lo, hi, exact, false, nil
}
