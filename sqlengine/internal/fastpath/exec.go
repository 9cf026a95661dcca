package fastpath

import (
	"cmp"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"

	"github.com/certusdb/certus/internal/codec"
	"github.com/certusdb/certus/internal/fastsql"
	"github.com/certusdb/certus/sqlengine/internal/collate"
	"github.com/certusdb/certus/sqlengine/internal/gmstable"
	"github.com/certusdb/certus/storage"
	"github.com/certusdb/certus/txn"
)

// Exec is what one execution needs besides its plan. The context's
// session is the client's: the execution reads its variables and sets its
// last query's row counts and insert id.
type Exec struct {
	Txn  *txn.Txn
	Args []any // from Args
	// Fields are a SELECT's column metadata (Plan.Fields).
	Fields []*querypb.Field
	// Scratch is the session's memory for the rows of its SELECTs.
	Scratch *Scratch
	// Mgr allocates AUTO_INCREMENT values.
	Mgr *txn.Manager
}

// Scratch holds the rows of a session's last fast path SELECT, and the
// slice it listed them in; the next SELECT reuses both.
type Scratch struct {
	arena codec.Arena
	rows  []sql.Row
}

// Run executes the plan's statement in x.Txn, without committing it. It
// returns ErrFallBack, having changed nothing, when the general path must
// run it.
func (p *Plan) Run(ctx *sql.Context, x Exec) (*sqltypes.Result, error) {
	switch p.st.Kind {
	case fastsql.Select:
		return p.selectRows(ctx, x)
	case fastsql.Update:
		return p.update(ctx, x)
	case fastsql.Delete:
		return p.delete(ctx, x)
	case fastsql.Insert, fastsql.Replace:
		return p.insert(ctx, x)
	}
	return nil, ErrFallBack
}

// uniqueKey is the lock key of a unique index value.
func uniqueKey(p *Plan, vals []byte) []byte {
	return storage.UniqueCertKey(p.def.ID, p.ii.Def.ID, vals)
}

// selectRows runs a point, IN-list or key-range SELECT, with DISTINCT,
// ORDER BY, LIMIT or one aggregate. It mirrors the plan go-mysql-server
// builds for these shapes — rows in index order, then Distinct on the
// projected rows, then a stable Sort (TopN with a LIMIT is one too), then Limit —
// with go-mysql-server's own hashing, sorting and aggregation, so ties and
// types come out the same.
func (p *Plan) selectRows(ctx *sql.Context, x Exec) (*sqltypes.Result, error) {
	t, st, args := x.Txn, p.st, x.Args
	keys, ok := p.keys(ctx, st, args)
	if !ok {
		return nil, ErrFallBack
	}
	limit := int64(-1)
	if st.HasLimit {
		l, ok := args[st.Limit].(int64)
		if !ok || l < 0 {
			return nil, ErrFallBack
		}
		limit = l
	}
	// the session's last select left nothing that refers to its rows:
	// its result holds copies (sqlInto), so their memory is reused
	x.Scratch.arena.Reset()
	rows, err := p.scanRows(ctx, t, st, keys, limit, &x.Scratch.arena, x.Scratch.rows[:0])
	if cap(rows) <= maxKeptRows {
		x.Scratch.rows = rows[:0]
	}
	if err != nil {
		return nil, err
	}
	var out []sql.Row // projected
	switch {
	case p.agg != nil:
		v, err := p.aggregate(ctx, rows)
		if err != nil {
			return nil, err
		}
		out = []sql.Row{{v}}
	case st.Distinct:
		out = p.project(rows)
		if sorted, ok := distinctSorted(ctx, out, p.projSort); ok {
			out = limitRows(sorted, limit)
			break
		}
		if out, err = distinctRows(ctx, p.types, out); err != nil {
			return nil, err
		}
		if out, err = sortRows(ctx, out, p.projSort); err != nil {
			return nil, err
		}
		out = limitRows(out, limit)
	default:
		if rows, err = sortRows(ctx, rows, p.sort); err != nil {
			return nil, err
		}
		out = p.project(limitRows(rows, limit))
	}
	res := &sqltypes.Result{Fields: x.Fields, Rows: make([][]sqltypes.Value, len(out))}
	n := 0
	for _, row := range out {
		n += len(row)
	}
	vals := make([]sqltypes.Value, n) // one allocation for the result's values
	var buf []byte
	for i, row := range out {
		rv := vals[:len(row):len(row)]
		vals = vals[len(row):]
		for j, v := range row {
			sv, err := sqlInto(ctx, p.types[j], v, &buf)
			if err != nil {
				return nil, err
			}
			rv[j] = sv
		}
		res.Rows[i] = rv
	}
	lqi := ctx.Session.GetLastQueryInfo()
	lqi.RowCount.Store(-1)
	lqi.FoundRows.Store(int64(len(res.Rows)))
	sql.IncrementStatusVariable(ctx, "Com_select", 1)
	return res, nil
}

// maxKeptRows bounds the slice of rows a session keeps for its next
// select.
const maxKeptRows = 1024

// scanRows appends to rows the rows the WHERE selects, in the order of the
// index (reversed for ORDER BY key DESC), decoded into a. With nothing to
// reorder or merge them it stops at the LIMIT.
func (p *Plan) scanRows(ctx *sql.Context, t *txn.Txn, st *fastsql.Statement, keys [][]byte, limit int64, a *codec.Arena, rows []sql.Row) ([]sql.Row, error) {
	early := limit >= 0 && p.sort == nil && !st.Distinct && p.agg == nil
	if early && limit == 0 {
		return rows, nil
	}
	full := func() bool { return early && int64(len(rows)) >= limit }
	scan := func(lo, hi []byte, rev bool) error {
		var it *txn.RowIter
		var err error
		if p.ii == nil {
			it, err = t.Scan(ctx, p.info, lo, hi, rev, txn.Snapshot)
		} else {
			it, err = t.IndexScan(ctx, p.info, p.ii, lo, hi, rev, txn.Snapshot)
		}
		if err != nil {
			return err
		}
		defer it.Close()
		it.DecodeOnly(p.need)
		it.DecodeInto(a)
		for !full() {
			_, row, ok, err := it.Next()
			if err != nil || !ok {
				return err
			}
			rows = append(rows, row)
		}
		return nil
	}
	rev := p.keyOrder && st.Desc
	switch st.Op {
	case fastsql.Eq, fastsql.In:
		if rev {
			slices.Reverse(keys)
		}
		for _, k := range keys {
			if full() {
				break
			}
			if p.ii != nil {
				if err := scan(k, codec.PrefixEnd(k), false); err != nil {
					return nil, err
				}
				continue
			}
			row, found, err := t.Get(ctx, p.info, k, txn.Snapshot)
			if err != nil {
				return nil, err
			}
			if found {
				rows = append(rows, row)
			}
		}
	case fastsql.Between:
		if string(keys[0]) <= string(keys[1]) {
			if err := scan(keys[0], codec.PrefixEnd(keys[1]), rev); err != nil {
				return nil, err
			}
		}
	}
	return rows, nil
}

// sqlBufSize is the size of the buffers sqlInto converts values into.
const sqlBufSize = 8 << 10

// sqlInto converts v to its wire value as typ does, into the free
// capacity of *buf, so the values of a result set share a few buffers
// instead of allocating one each. go-mysql-server's SQL methods append the
// value's bytes to the dest they are given (and may return bytes
// elsewhere, or a shorter tail of what they appended); the part of *buf up
// to the end of the returned bytes is taken, and the rest stays free.
// Bytes returned elsewhere are copied, since they may be the scanned
// row's own, which the session's next select reuses (see selectRows): a
// result refers to no memory but its own. Taken bytes are never written
// again.
func sqlInto(ctx *sql.Context, typ sql.Type, v any, buf *[]byte) (sqltypes.Value, error) {
	reserve(buf, 256)
	free := (*buf)[len(*buf):]
	sv, err := typ.SQL(ctx, free, v)
	if err != nil {
		return sv, err
	}
	raw := sv.Raw()
	if len(raw) == 0 {
		return sv, nil
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(free)))
	at := uintptr(unsafe.Pointer(unsafe.SliceData(raw)))
	if at >= start && at+uintptr(len(raw)) <= start+uintptr(cap(free)) {
		*buf = (*buf)[:len(*buf)+int(at-start)+len(raw)]
		return sv, nil
	}
	var c []byte
	if len(raw) <= sqlBufSize/4 {
		reserve(buf, len(raw))
		n := len(*buf)
		*buf = append(*buf, raw...)
		c = (*buf)[n:len(*buf):len(*buf)]
	} else {
		c = append([]byte(nil), raw...)
	}
	return sqltypes.MakeTrusted(sv.Type(), c), nil
}

// sqlBufFirst is the size of a result's first conversion buffer; each
// next one doubles, up to sqlBufSize. A point select's values take a few
// hundred bytes, and zeroing a full-size buffer for each of them was 8% of
// a node's CPU under 16 threads of oltp_point_select.
const sqlBufFirst = 512

// reserve starts a new buffer in *buf unless n bytes are free in it.
func reserve(buf *[]byte, n int) {
	if cap(*buf)-len(*buf) < n {
		size := min(max(2*cap(*buf), sqlBufFirst), sqlBufSize)
		*buf = make([]byte, 0, max(size, n))
	}
}

// project returns the SELECT columns of rows.
func (p *Plan) project(rows []sql.Row) []sql.Row {
	out := make([]sql.Row, len(rows))
	w := len(p.proj)
	vals := make([]any, len(rows)*w) // one allocation for all rows
	for i, row := range rows {
		pr := vals[i*w : (i+1)*w : (i+1)*w]
		for j, o := range p.proj {
			pr[j] = row[o]
		}
		out[i] = pr
	}
	return out
}

// aggregate folds rows into the plan's aggregate.
func (p *Plan) aggregate(ctx *sql.Context, rows []sql.Row) (any, error) {
	buf, err := p.agg.NewBuffer(ctx)
	if err != nil {
		return nil, err
	}
	defer buf.Dispose(ctx)
	for _, row := range rows {
		if err := buf.Update(ctx, row); err != nil {
			return nil, err
		}
	}
	return buf.Eval(ctx)
}

// distinctRows keeps the first of rows with equal values, compared as the
// general path's DISTINCT compares them (collate.Set).
func distinctRows(ctx *sql.Context, types []sql.Type, rows []sql.Row) ([]sql.Row, error) {
	set := collate.NewSet(types)
	out := rows[:0]
	for _, row := range rows {
		fresh, err := set.Add(ctx, row)
		if err != nil {
			return nil, err
		}
		if fresh {
			out = append(out, row)
		}
	}
	return out, nil
}

// distinctSorted is distinctRows followed by sortRows for rows of one
// column ordered by it, where stringOrder takes the column: sorted stably
// first, equal values are neighbours and the first of them is the one
// that came first, which distinctRows keeps; so the rest are dropped by
// comparing neighbours, without hashing every value's weights (sysbench's
// distinct_ranges: SELECT DISTINCT c ... ORDER BY c). ok is false, with
// rows untouched, for any other query.
func distinctSorted(ctx *sql.Context, rows []sql.Row, fields sql.SortFields) (out []sql.Row, ok bool) {
	for _, row := range rows {
		if len(row) != 1 {
			return nil, false
		}
	}
	order := stringOrder(ctx, rows, fields) // one field, so the rows' column
	if order == nil {
		return nil, false
	}
	sortStable(rows, order)
	out = rows[:0]
	for _, row := range rows {
		if len(out) == 0 || order(out[len(out)-1], row) != 0 {
			out = append(out, row)
		}
	}
	return out, true
}

// sortRows orders rows stably by fields, as go-mysql-server's Sort and
// TopN (which breaks ties by arrival) do. No fields: rows stay as they are.
func sortRows(ctx *sql.Context, rows []sql.Row, fields sql.SortFields) ([]sql.Row, error) {
	if fields == nil {
		return rows, nil
	}
	if order := stringOrder(ctx, rows, fields); order != nil {
		sortStable(rows, order)
		return rows, nil
	}
	s := &expression.Sorter{SortFields: fields, Rows: rows, Ctx: ctx}
	sort.Stable(s)
	return rows, s.LastError
}

// stringOrder returns the order of rows by fields when that is one string
// column, for sorting without go-mysql-server's Sorter, which converts
// both values and looks up the collation's weight function at every
// comparison: equal values (under the collation) compare 0. Where the
// collation weighs a character by its code point (utf8mb4_0900_bin,
// binary) it compares the values' bytes: for valid UTF-8 that is the
// order StringType.Compare finds rune by rune. For another collation of a
// UTF-8 character set it compares weights rune by rune as
// StringType.Compare does, ASCII ones from a table. It returns nil for any
// other field (or a column the rows lack), collation or value of rows.
func stringOrder(ctx *sql.Context, rows []sql.Row, fields sql.SortFields) func(a, b sql.Row) int {
	if len(fields) != 1 {
		return nil
	}
	f := fields[0]
	gf, ok := f.Column.(*expression.GetField)
	if !ok {
		return nil
	}
	st, ok := gf.Type(ctx).(sql.StringType)
	if !ok {
		return nil
	}
	coll := st.Collation()
	binary := coll == sql.Collation_binary
	compare := strings.Compare
	if !binary && coll != sql.Collation_utf8mb4_0900_bin {
		cs := coll.CharacterSet()
		if coll.Sorter() == nil || (cs != sql.CharacterSet_utf8mb4 && cs != sql.CharacterSet_utf8mb3) {
			return nil
		}
		compare = collate.WeightCompare(coll)
	}
	i := gf.Index()
	for _, row := range rows {
		if i >= len(row) {
			return nil
		}
		switch v := row[i].(type) {
		case nil:
		case string:
			if !binary && !utf8.ValidString(v) {
				return nil
			}
		case []byte:
			if !binary {
				return nil
			}
		default:
			return nil
		}
	}
	first := -1 // where a NULL goes against a value, as Sorter places it
	if f.NullOrdering != sql.NullsFirst {
		first = 1
	}
	desc := f.Order == sql.Descending
	return func(a, b sql.Row) int {
		x, y := a[i], b[i]
		if desc {
			x, y = y, x
		}
		switch {
		case x == nil && y == nil:
			return 0
		case x == nil:
			return first
		case y == nil:
			return -first
		}
		return compare(collate.BytesOf(x), collate.BytesOf(y))
	}
}

// sortStable sorts rows by order, ties kept in their order: pdqsort with
// the original position breaking ties, which takes fewer comparisons and
// moves than slices.SortStableFunc's merges.
func sortStable(rows []sql.Row, order func(a, b sql.Row) int) {
	keyed := make([]keyedRow, len(rows))
	for n, row := range rows {
		keyed[n] = keyedRow{row, n}
	}
	slices.SortFunc(keyed, func(a, b keyedRow) int {
		if c := order(a.row, b.row); c != 0 {
			return c
		}
		return cmp.Compare(a.pos, b.pos)
	})
	for n, k := range keyed {
		rows[n] = k.row
	}
}

// keyedRow is a row and its position before sorting.
type keyedRow struct {
	row sql.Row
	pos int
}

func limitRows(rows []sql.Row, limit int64) []sql.Row {
	if limit >= 0 && int64(len(rows)) > limit {
		return rows[:limit]
	}
	return rows
}

// currentRow locks and reads the row of a single-key WHERE.
func (p *Plan) currentRow(ctx *sql.Context, t *txn.Txn, args []any) (sql.Row, bool, error) {
	keys, ok := p.keys(ctx, p.st, args)
	if !ok || len(keys) != 1 {
		return nil, false, ErrFallBack
	}
	if p.ii == nil {
		return t.Get(ctx, p.info, keys[0], txn.CurrentExclusive)
	}
	// a unique secondary key: lock its value, then find the row
	if err := t.LockKey(ctx, uniqueKey(p, keys[0]), txn.CurrentExclusive); err != nil {
		return nil, false, err
	}
	it, err := t.IndexScan(ctx, p.info, p.ii, keys[0], codec.PrefixEnd(keys[0]), false, txn.CurrentExclusive)
	if err != nil {
		return nil, false, err
	}
	defer it.Close()
	_, row, found, err := it.Next()
	return row, found, err
}

func (p *Plan) update(ctx *sql.Context, x Exec) (*sqltypes.Result, error) {
	t, args := x.Txn, x.Args
	row, found, err := p.currentRow(ctx, t, args)
	if err != nil {
		return nil, err
	}
	matched, changed := 0, 0
	if found {
		matched = 1
		nrow := row.Copy()
		for _, s := range p.sets {
			col := p.sch[s.ord]
			if !s.self {
				v, ok := columnValue(ctx, col, args[s.arg])
				if !ok {
					return nil, ErrFallBack
				}
				nrow[s.ord] = v
				continue
			}
			if nrow[s.ord] == nil {
				continue // NULL + n is NULL
			}
			v, ok := addInt(nrow[s.ord], args[s.arg], s.sign)
			if !ok {
				return nil, ErrFallBack
			}
			cv, ok := columnValue(ctx, col, v)
			if !ok {
				return nil, ErrFallBack
			}
			nrow[s.ord] = cv
		}
		equal, err := row.Equals(ctx, nrow, p.sch)
		if err != nil {
			return nil, ErrFallBack
		}
		if !equal {
			t.StatementBegin()
			if err := t.Update(ctx, p.info, row, nrow); err != nil {
				t.StatementDiscard()
				return nil, err
			}
			t.StatementComplete()
			changed = 1
		}
	}
	affected := changed
	if ctx.Session.Client().Capabilities&mysql.CapabilityClientFoundRows != 0 {
		affected = matched
	}
	lqi := ctx.Session.GetLastQueryInfo()
	lqi.FoundRows.Store(int64(matched))
	lqi.RowCount.Store(int64(affected))
	sql.IncrementStatusVariable(ctx, "Com_update", 1)
	return &sqltypes.Result{RowsAffected: uint64(affected),
		Info: plan.UpdateInfo{Matched: matched, Updated: changed}.String()}, nil
}

// addInt returns v + sign*arg for integer values, or false on overflow or
// non-integers.
func addInt(v, arg any, sign int) (any, bool) {
	a, ok := arg.(int64)
	if !ok {
		return nil, false
	}
	if sign < 0 {
		if a == -1<<63 {
			return nil, false
		}
		a = -a
	}
	switch x := v.(type) {
	case int8:
		return int64(x) + a, true
	case int16:
		return int64(x) + a, true
	case int32:
		return int64(x) + a, true
	case int64:
		s := x + a
		if (a > 0 && s < x) || (a < 0 && s > x) {
			return nil, false
		}
		return s, true
	case uint8:
		return int64(x) + a, true
	case uint16:
		return int64(x) + a, true
	case uint32:
		return int64(x) + a, true
	}
	return nil, false
}

func (p *Plan) delete(ctx *sql.Context, x Exec) (*sqltypes.Result, error) {
	t := x.Txn
	row, found, err := p.currentRow(ctx, t, x.Args)
	if err != nil {
		return nil, err
	}
	affected := 0
	if found {
		t.StatementBegin()
		if err := t.Delete(ctx, p.info, row); err != nil {
			t.StatementDiscard()
			return nil, err
		}
		t.StatementComplete()
		affected = 1
	}
	ctx.Session.GetLastQueryInfo().RowCount.Store(int64(affected))
	sql.IncrementStatusVariable(ctx, "Com_delete", 1)
	return &sqltypes.Result{RowsAffected: uint64(affected)}, nil
}

func (p *Plan) insert(ctx *sql.Context, x Exec) (*sqltypes.Result, error) {
	t, st, args := x.Txn, p.st, x.Args
	if st.Kind == fastsql.Replace {
		for _, ii := range p.info.Indexes {
			if ii.Def.Unique {
				return nil, ErrFallBack // which rows REPLACE removes: the general path
			}
		}
	}
	if v, err := ctx.Session.GetSessionVariable(ctx, "sql_mode"); err != nil || strings.Contains(strings.ToUpper(toString(v)), "NO_AUTO_VALUE_ON_ZERO") {
		return nil, ErrFallBack
	}
	autoOrd := p.info.AutoInc
	var rows []sql.Row
	for _, r := range st.Rows {
		row := make(sql.Row, len(p.sch))
		for i, c := range p.sch {
			if c.Default != nil {
				d, err := c.Default.Eval(ctx, nil)
				if err != nil {
					return nil, ErrFallBack
				}
				cv, ok := defaultValue(ctx, c, d)
				if !ok {
					return nil, ErrFallBack
				}
				row[i] = cv
			}
		}
		for j, o := range p.ins {
			v := args[r[j]]
			if o == autoOrd && (v == nil || v == int64(0) || v == uint64(0)) {
				row[o] = nil // generated below
				continue
			}
			cv, ok := columnValue(ctx, p.sch[o], v)
			if !ok {
				return nil, ErrFallBack
			}
			row[o] = cv
		}
		for i, c := range p.sch {
			if row[i] == nil && !c.Nullable && i != autoOrd {
				return nil, ErrFallBack // the general path reports it
			}
		}
		rows = append(rows, row)
	}
	// all values are known good: allocate AUTO_INCREMENT values and write
	var insertID uint64
	generated := false
	if autoOrd >= 0 {
		typ := p.sch[autoOrd].Type
		inc, off := gmstable.AutoIncrementStep(ctx, ctx.Session)
		for i, row := range rows {
			if row[autoOrd] == nil {
				id := x.Mgr.NextAutoIncrement(p.def.ID, inc, off)
				cv, inRange, err := typ.Convert(ctx, id)
				if err != nil || inRange != sql.InRange {
					return nil, ErrFallBack
				}
				row[autoOrd] = cv
				if !generated {
					generated = true
					ctx.Session.GetLastQueryInfo().LastInsertId.Store(int64(id))
				}
			} else if n, err := gmstable.AutoIncrementArg(ctx, row[autoOrd]); err == nil && n != 0 {
				x.Mgr.PassAutoIncrement(p.def.ID, n)
			}
			if i == 0 {
				insertID = toUint64(row[autoOrd])
			}
		}
	}
	affected := 0
	t.StatementBegin()
	for _, row := range rows {
		if st.Kind == fastsql.Replace {
			pk, err := p.info.EncodePK(ctx, row)
			if err != nil {
				t.StatementDiscard()
				return nil, ErrFallBack
			}
			old, found, err := t.Get(ctx, p.info, pk, txn.CurrentExclusive)
			if err != nil {
				t.StatementDiscard()
				return nil, err
			}
			if found {
				if err := t.Delete(ctx, p.info, old); err != nil {
					t.StatementDiscard()
					return nil, err
				}
				affected++
			}
		}
		if err := t.Insert(ctx, p.info, row); err != nil {
			t.StatementDiscard()
			return nil, err
		}
		affected++
	}
	t.StatementComplete()
	ctx.Session.GetLastQueryInfo().RowCount.Store(int64(affected))
	if st.Kind == fastsql.Replace {
		sql.IncrementStatusVariable(ctx, "Com_replace", 1)
		insertID = uint64(ctx.Session.GetLastQueryInfo().LastInsertId.Load())
	} else {
		sql.IncrementStatusVariable(ctx, "Com_insert", 1)
	}
	return &sqltypes.Result{RowsAffected: uint64(affected), InsertID: insertID}, nil
}

// defaultValue converts a column's literal default to the column type.
func defaultValue(ctx *sql.Context, c *sql.Column, v any) (any, bool) {
	if v == nil {
		return nil, true
	}
	cv, inRange, err := c.Type.Convert(ctx, v)
	return cv, err == nil && inRange == sql.InRange
}

func toString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return ""
}

func toUint64(v any) uint64 {
	switch x := v.(type) {
	case int8:
		return uint64(x)
	case int16:
		return uint64(x)
	case int32:
		return uint64(x)
	case int64:
		return uint64(x)
	case uint8:
		return uint64(x)
	case uint16:
		return uint64(x)
	case uint32:
		return uint64(x)
	case uint64:
		return x
	}
	return 0
}
