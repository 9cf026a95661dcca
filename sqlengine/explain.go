package sqlengine

import (
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"
)

// explain answers EXPLAIN (and DESCRIBE of a statement) with MySQL's
// tabular output, read from the plan go-mysql-server chose: one row per
// table access with its access type (const, eq_ref, ref, range, index,
// ALL), the index and the length of its key used, what the key is
// compared with, and the Extra notes (Using where, Using index, Using
// filesort, Using temporary, Using join buffer). go-mysql-server answers
// it with one placeholder row whose numeric columns hold the text 'NULL',
// which drivers that parse numbers (PyMySQL, JDBC) fail on. rows is an
// estimate from the table's row count, not from index dives. EXPLAIN
// FORMAT=TREE, EXPLAIN PLAN and EXPLAIN ANALYZE keep go-mysql-server's
// output (ok is false for them).
func explain(ctx *sql.Context, d *plan.DescribeQuery) (iter sql.RowIter, ok bool) {
	if d.Format.Plan || d.Format.Analyze {
		return nil, false
	}
	x := &explainer{ctx: ctx}
	x.statement(d.Query())
	rows := make([]sql.Row, len(x.rows))
	for i, r := range x.rows {
		rows[i] = r.sqlRow()
	}
	return sql.RowsToRowIter(rows...), true
}

// explainRow is one row of EXPLAIN's output; nil fields are NULL.
type explainRow struct {
	id           any
	selectType   string
	table        any
	typ          any
	possibleKeys any
	key          any
	keyLen       any
	ref          any
	rows         any
	filtered     any
	extra        []string
}

func (r *explainRow) sqlRow() sql.Row {
	var extra any
	if len(r.extra) > 0 {
		extra = strings.Join(r.extra, "; ")
	}
	return sql.Row{r.id, r.selectType, r.table, nil, r.typ, r.possibleKeys, r.key, r.keyLen, r.ref, r.rows, r.filtered, extra}
}

// explainer walks a plan, one query block (a SELECT, a derived table, a
// subquery, a part of a UNION) at a time.
type explainer struct {
	ctx    *sql.Context
	rows   []*explainRow
	nextID uint64
	// more is set when the statement has more than one query block:
	// the outermost one is then PRIMARY instead of SIMPLE
	more bool
}

// block is the state of the query block being walked.
type block struct {
	id         uint64
	selectType string
	first      *explainRow // its first table row
	filesort   bool
	temporary  bool
}

// statement explains a whole statement.
func (x *explainer) statement(n sql.Node) {
	top := x.newBlock("SIMPLE")
	switch n := n.(type) {
	case *plan.Update:
		top.selectType = "UPDATE"
		x.walk(n.Child, top, "")
	case *plan.DeleteFrom:
		top.selectType = "DELETE"
		x.walk(n.Child, top, "")
	case *plan.InsertInto:
		top.selectType = "INSERT"
		var name any
		if nm, ok := n.Destination.(sql.Nameable); ok {
			name = nm.Name()
		}
		x.row(top, &explainRow{table: name, typ: "ALL"})
		if !n.LiteralValueSource && n.Source != nil {
			src := &block{id: top.id, selectType: "SIMPLE"}
			x.walk(n.Source, src, "")
			x.finish(src)
		}
	default:
		x.walk(n, top, "")
	}
	x.finish(top)
	if x.more && top.selectType == "SIMPLE" {
		for _, r := range x.rows {
			if r.id == top.id && r.selectType == "SIMPLE" {
				r.selectType = "PRIMARY"
			}
		}
	}
	if len(x.rows) == 0 {
		x.rows = append(x.rows, &explainRow{id: top.id, selectType: top.selectType, extra: []string{"No tables used"}})
	}
}

func (x *explainer) newBlock(selectType string) *block {
	x.nextID++
	if x.nextID > 1 {
		x.more = true
	}
	return &block{id: x.nextID, selectType: selectType}
}

// finish puts the block's sort and temporary-table notes on its first row.
func (x *explainer) finish(b *block) {
	if b.first == nil {
		return
	}
	if b.temporary {
		b.first.extra = append(b.first.extra, "Using temporary")
	}
	if b.filesort {
		b.first.extra = append(b.first.extra, "Using filesort")
	}
}

// row adds r as a row of block b.
func (x *explainer) row(b *block, r *explainRow) {
	r.id, r.selectType = b.id, b.selectType
	if r.filtered == nil && r.typ != nil {
		r.filtered = float64(100)
	}
	if b.first == nil {
		b.first = r
	}
	x.rows = append(x.rows, r)
}

// walk explains node n of block b; alias names the table below a
// TableAlias.
func (x *explainer) walk(n sql.Node, b *block, alias string) {
	defer x.subqueries(n, b) // their blocks follow the tables of b
	switch n := n.(type) {
	case *plan.TableAlias:
		x.walk(n.Child, b, n.Name())
		return
	case *plan.Sort, *plan.TopN:
		b.filesort = true
	case *plan.GroupBy:
		if len(n.GroupByExprs) > 0 {
			b.temporary = true
		}
	case *plan.Distinct:
		b.temporary = true
	case *plan.Filter:
		x.walk(n.Child, b, alias)
		if last := x.lastTableRow(b); last != nil {
			last.extra = appendOnce(last.extra, "Using where")
		}
		return
	case *plan.ResolvedTable:
		x.table(b, n, nil, alias)
		return
	case *plan.IndexedTableAccess:
		x.table(b, n.TableNode, n, alias)
		return
	case *plan.EmptyTable:
		x.row(b, &explainRow{extra: []string{"Impossible WHERE"}})
		return
	case *plan.JoinNode:
		x.walk(n.Left(), b, "")
		x.walk(n.Right(), b, "")
		if last := x.lastTableRow(b); last != nil {
			jt := n.JoinType()
			if jt.IsHash() {
				last.extra = appendOnce(last.extra, "Using where")
				last.extra = append(last.extra, "Using join buffer (hash join)")
			} else if !jt.IsLookup() && n.Filter != nil && !jt.IsCross() {
				last.extra = appendOnce(last.extra, "Using where")
			}
		}
		return
	case *plan.SubqueryAlias:
		d := x.newBlock("DERIVED")
		x.row(b, &explainRow{table: fmt.Sprintf("<derived%d>", d.id), typ: "ALL"})
		x.walk(n.Child, d, "")
		x.finish(d)
		return
	case *plan.SetOp:
		x.setOp(n, b)
		return
	}
	for _, c := range n.Children() {
		x.walk(c, b, alias)
	}
}

// setOp explains a UNION (or INTERSECT, EXCEPT): its first part is block
// b, each other part a block of its own, and a distinct one ends with
// the temporary table that removes duplicates.
func (x *explainer) setOp(n *plan.SetOp, b *block) {
	var parts []sql.Node
	var collect func(sql.Node)
	collect = func(c sql.Node) {
		if s, ok := c.(*plan.SetOp); ok && s.SetOpType == n.SetOpType {
			collect(s.Left())
			collect(s.Right())
			return
		}
		parts = append(parts, c)
	}
	collect(n.Left())
	collect(n.Right())
	if b.selectType == "SIMPLE" {
		b.selectType = "PRIMARY"
	}
	ids := []string{fmt.Sprint(b.id)}
	x.walk(parts[0], b, "")
	for _, p := range parts[1:] {
		u := x.newBlock("UNION")
		ids = append(ids, fmt.Sprint(u.id))
		x.walk(p, u, "")
		x.finish(u)
	}
	if n.Distinct {
		x.rows = append(x.rows, &explainRow{selectType: "UNION RESULT",
			table: "<union" + strings.Join(ids, ",") + ">", typ: "ALL", extra: []string{"Using temporary"}})
	}
}

// subqueries explains the subqueries in n's own expressions, each as a
// block of its own.
func (x *explainer) subqueries(n sql.Node, b *block) {
	ex, ok := n.(sql.Expressioner)
	if !ok {
		return
	}
	for _, e := range ex.Expressions() {
		transform.InspectExpr(x.ctx, e, func(_ *sql.Context, e sql.Expression) bool {
			sq, ok := e.(*plan.Subquery)
			if !ok {
				return false
			}
			kind := "SUBQUERY"
			if !sq.Correlated().Empty() {
				kind = "DEPENDENT SUBQUERY"
			}
			s := x.newBlock(kind)
			x.walk(sq.Query, s, "")
			x.finish(s)
			return false
		})
	}
}

// lastTableRow is the last row block b added.
func (x *explainer) lastTableRow(b *block) *explainRow {
	for i := len(x.rows) - 1; i >= 0; i-- {
		if x.rows[i].id == b.id {
			return x.rows[i]
		}
	}
	return nil
}

// table explains one table access: a scan of tn, or the index access ita.
func (x *explainer) table(b *block, tn sql.TableNode, ita *plan.IndexedTableAccess, alias string) {
	name := tn.Name()
	if alias != "" {
		name = alias
	}
	t := tn.UnderlyingTable()
	if name == "" || t == nil || strings.EqualFold(t.Name(), "dual") && t.Schema(x.ctx) == nil {
		x.row(b, &explainRow{extra: []string{"No tables used"}})
		return
	}
	r := &explainRow{table: name, typ: "ALL"}
	var total uint64
	if st, ok := t.(sql.StatisticsTable); ok {
		total, _, _ = st.RowCount(x.ctx)
	}
	r.rows = total
	if ita == nil {
		x.row(b, r)
		return
	}
	idx := ita.Index()
	r.key = idx.ID()
	r.possibleKeys = idx.ID()
	sch := t.Schema(x.ctx)
	cols := indexColumns(sch, idx)
	unique := idx.IsUnique() || strings.EqualFold(idx.ID(), "primary")
	if !ita.IsStatic() {
		keys := ita.Expressions()
		refs := make([]string, len(keys))
		for i, k := range keys {
			refs[i] = k.String()
		}
		r.ref = strings.Join(refs, ",")
		r.keyLen = keyLen(cols, len(keys))
		if ita.IsStrictLookup(x.ctx) {
			r.typ, r.rows = "eq_ref", uint64(1)
		} else {
			r.typ, r.rows = "ref", refRows(total, unique && len(keys) >= len(cols))
		}
	} else if lookup, _, err := ita.GetLookup(x.ctx, nil); err == nil {
		x.staticLookup(r, lookup, cols, unique, total)
	}
	if covering(t, sch, cols) && !strings.EqualFold(idx.ID(), "primary") {
		r.extra = append(r.extra, "Using index")
	}
	x.row(b, r)
}

// staticLookup sets r's access type, key length and row estimate from the
// ranges a lookup reads.
func (x *explainer) staticLookup(r *explainRow, lookup sql.IndexLookup, cols []keyPart, unique bool, total uint64) {
	ranges, ok := lookup.Ranges.(sql.MySQLRangeCollection)
	if !ok || len(ranges) == 0 {
		r.typ = "range"
		return
	}
	used, minPoints, allPoints := 0, len(cols), true
	for _, rg := range ranges {
		points, bounded := 0, 0
		for _, c := range rg {
			if !c.HasLowerBound() && !c.HasUpperBound() || c.Type() == sql.RangeType_All {
				break
			}
			bounded++
			if !isPoint(x.ctx, c) {
				break
			}
			points++
		}
		used = max(used, bounded)
		minPoints = min(minPoints, points)
		if points < len(rg) && points < len(cols) {
			allPoints = false
		}
	}
	switch {
	case used == 0:
		r.typ = "index" // the whole index, for its order
	case len(ranges) == 1 && allPoints && unique:
		r.typ, r.ref, r.rows = "const", constRefs(len(cols)), uint64(1)
	case len(ranges) == 1 && minPoints == used:
		r.typ, r.ref, r.rows = "ref", constRefs(used), refRows(total, false)
	default:
		r.typ = "range"
		if allPoints && unique {
			r.rows = uint64(len(ranges))
		} else {
			r.rows = rangeRows(x.ctx, ranges, total)
		}
	}
	if used > 0 {
		r.keyLen = keyLen(cols, used)
	}
}

// rangeRows estimates the rows in ranges of a table of total rows: a
// range on an integer column bounded on both sides holds at most one row
// per value in it; another is taken to hold a third of the table.
func rangeRows(ctx *sql.Context, ranges sql.MySQLRangeCollection, total uint64) uint64 {
	var n uint64
	for _, rg := range ranges {
		est := max(1, total/3)
		if len(rg) > 0 && types.IsInteger(rg[0].Typ) && rg[0].HasLowerBound() && rg[0].HasUpperBound() {
			lo, _, err1 := types.Int64.Convert(ctx, sql.GetMySQLRangeCutKey(rg[0].LowerBound))
			hi, _, err2 := types.Int64.Convert(ctx, sql.GetMySQLRangeCutKey(rg[0].UpperBound))
			l, lok := lo.(int64)
			h, hok := hi.(int64)
			if err1 == nil && err2 == nil && lok && hok && h >= l && uint64(h-l) < total {
				est = uint64(h-l) + 1
			}
		}
		n += est
	}
	return min(max(n, 1), max(total, 1))
}

// isPoint reports whether c is one value.
func isPoint(ctx *sql.Context, c sql.MySQLRangeColumnExpr) bool {
	switch c.Type() {
	case sql.RangeType_EqualNull:
		return true
	case sql.RangeType_ClosedClosed:
		cmp, err := c.Typ.Compare(ctx, sql.GetMySQLRangeCutKey(c.LowerBound), sql.GetMySQLRangeCutKey(c.UpperBound))
		return err == nil && cmp == 0
	}
	return false
}

// refRows estimates the rows of an equality lookup: one for a whole
// unique key, else a tenth of the table.
func refRows(total uint64, unique bool) uint64 {
	if unique {
		return 1
	}
	return max(1, total/10)
}

func constRefs(n int) string {
	return strings.TrimSuffix(strings.Repeat("const,", n), ",")
}

// keyPart is a column of an index, or its first prefix characters.
type keyPart struct {
	col    *sql.Column
	prefix uint16 // 0: the whole value
}

// indexColumns are the key parts of idx, in key order.
func indexColumns(sch sql.Schema, idx sql.Index) []keyPart {
	var out []keyPart
	prefixes := idx.PrefixLengths()
	for k, e := range idx.Expressions() {
		name := e[strings.LastIndexByte(e, '.')+1:]
		if i := sch.IndexOfColName(name); i >= 0 {
			p := keyPart{col: sch[i]}
			if k < len(prefixes) {
				p.prefix = prefixes[k]
			}
			out = append(out, p)
		}
	}
	return out
}

// covering reports whether the columns the scan of t reads are all in the
// index columns cols or the primary key (which every secondary index
// entry holds).
func covering(t sql.Table, sch sql.Schema, cols []keyPart) bool {
	pt, ok := t.(sql.ProjectedTable)
	if !ok || pt.Projections() == nil {
		return false
	}
	in := map[string]bool{}
	for _, c := range cols {
		if c.prefix == 0 { // a prefix key does not hold the value
			in[strings.ToLower(c.col.Name)] = true
		}
	}
	for _, c := range sch {
		if c.PrimaryKey {
			in[strings.ToLower(c.Name)] = true
		}
	}
	for _, p := range pt.Projections() {
		if !in[strings.ToLower(p)] {
			return false
		}
	}
	return true
}

// keyLen is MySQL's key_len: the bytes of the first n key columns, as
// InnoDB stores them in an index (a NULL flag byte for a nullable column,
// two length bytes for a variable-length one).
func keyLen(cols []keyPart, n int) string {
	total := 0
	for _, c := range cols[:min(n, len(cols))] {
		total += keyPartBytes(c)
		if c.col.Nullable {
			total++
		}
	}
	return fmt.Sprint(total)
}

// keyPartBytes is the bytes a value of key part p takes in an index key:
// its column's storage size in a row (rowsize.go), but a string counts
// its prefix's characters when it has one, and two length bytes when it
// is of variable length.
func keyPartBytes(p keyPart) int {
	s, ok := p.col.Type.(sql.StringType)
	if !ok {
		return int(columnSize(p.col.Type))
	}
	n := int(s.MaxByteLength())
	if p.prefix > 0 {
		n = int(p.prefix) * int(s.CharacterSet().MaxLength())
	}
	switch s.Type() {
	case sqltypes.VarChar, sqltypes.VarBinary, sqltypes.Text, sqltypes.Blob:
		return n + 2
	}
	return n
}

func appendOnce(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}
