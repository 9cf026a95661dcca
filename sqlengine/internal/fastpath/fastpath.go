// Package fastpath executes the statement shapes that dominate OLTP
// traffic (package fastsql recognises them) directly against the
// transaction layer, skipping go-mysql-server's parser and analyzer. It
// takes a statement only when it can prove the result equal to the general
// path's: a plain table (no triggers, foreign keys, checks, generated or
// ON UPDATE columns), integer key arguments, and values that convert
// without warnings; otherwise it answers ErrFallBack, having changed
// nothing. A SELECT runs here from its second execution: the first, through
// go-mysql-server, teaches its plan the exact column metadata (Plan.Learn).
//
// Package sqlengine decides when to try it (privileges, checked as
// go-mysql-server checks them, at every execution; temporary tables; the
// session's transaction) and commits what it wrote.
package fastpath

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/expression/function/aggregation"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"

	"github.com/certusdb/certus/internal/fastsql"
	"github.com/certusdb/certus/sqlengine/internal/mysqlexpr"
	"github.com/certusdb/certus/sqlengine/internal/sqlvalue"
	"github.com/certusdb/certus/storage"
)

// Cache holds the recognised statements of a server.
type Cache struct {
	mu      sync.Mutex
	entries map[string]*Entry // by database + text (prepared) or shape (text protocol)

	// statements counts the statements the fast path ran (status variable
	// certus_fast_path_statements).
	statements atomic.Uint64
}

// Entry is a recognised statement and its plan for the latest catalog it
// ran in.
type Entry struct {
	st   *fastsql.Statement
	lits []fastsql.Value // literals of a prepared statement's text

	mu   sync.Mutex
	plan *Plan
}

// Plan binds a statement to a table definition in one catalog.
type Plan struct {
	st   *fastsql.Statement
	cat  *storage.Catalog // the plan holds in this catalog only
	def  *storage.TableDef
	info *storage.TableInfo
	sch  sql.Schema

	keyOrd int                // ordinal of the WHERE column
	ii     *storage.IndexInfo // WHERE on a secondary index; nil: primary key
	proj   []int              // SELECT columns
	types  []sql.Type         // SELECT result column types

	// keyOrder: ORDER BY the primary key, which the scan order gives.
	keyOrder bool
	// sort orders table rows, projSort projected rows (DISTINCT), by an
	// ORDER BY column the scan order does not give; nil without one.
	sort, projSort sql.SortFields
	// agg is the aggregate of SELECT AGG(col); nil without one.
	agg sql.Aggregation
	// need marks the columns a SELECT reads (projection, ORDER BY,
	// aggregate): scans decode only these.
	need []bool
	sets []assignment // UPDATE assignments
	ins  []int        // INSERT column ordinals

	// fields are the SELECT's column metadata as go-mysql-server sends
	// them, learned from its first execution, for one character_set_results.
	fields atomic.Pointer[learnedFields]
}

// learnedFields are a SELECT's column metadata for one character set.
type learnedFields struct {
	fields  []*querypb.Field
	charset string
}

// assignment is an UPDATE assignment: col = ?, or col = col ± ?.
type assignment struct {
	ord  int
	self bool
	sign int
	arg  fastsql.Arg
}

// maxEntries bounds the cache of recognised statements.
const maxEntries = 4096

// NewCache returns an empty cache.
func NewCache() *Cache {
	return &Cache{entries: map[string]*Entry{}}
}

// ErrFallBack means the fast path does not take the statement.
var ErrFallBack = fmt.Errorf("fast path: fall back")

// Ran counts a statement the fast path answered.
func (f *Cache) Ran() { f.statements.Add(1) }

// Statements is the number of statements the fast path answered (status
// variable certus_fast_path_statements).
func (f *Cache) Statements() uint64 { return f.statements.Load() }

// Statement is the recognised statement.
func (e *Entry) Statement() *fastsql.Statement { return e.st }

// Plan binds the entry to def, its table's definition in cat (sch is
// def's go-mysql-server schema): the plan made in cat before, or a new
// one. A plan holds for one catalog, not one table definition: a foreign
// key or a trigger created since on another table, or on the database,
// makes the fast path leave the table to the general path. It is nil when
// the fast path does not run the statement on that table.
func (e *Entry) Plan(def *storage.TableDef, cat *storage.Catalog, sch func(*storage.TableDef, *storage.TableInfo) sql.Schema) (*Plan, error) {
	e.mu.Lock()
	p := e.plan
	e.mu.Unlock()
	if p != nil && p.cat == cat {
		return p, nil
	}
	old := p
	p, err := newPlan(e.st, def, cat, sch)
	if err != nil || p == nil {
		return nil, err
	}
	if old != nil && old.def == def {
		// the result's columns depend on the table's definition only
		p.fields.Store(old.fields.Load())
	}
	e.mu.Lock()
	e.plan = p
	e.mu.Unlock()
	return p, nil
}

// Fields are the SELECT's column metadata learned for charset (the
// session's character_set_results); nil before the general path ran it.
func (p *Plan) Fields(charset string) []*querypb.Field {
	if lf := p.fields.Load(); lf != nil && lf.charset == charset {
		return lf.fields
	}
	return nil
}

// Learn keeps fields, the general path's column metadata of the SELECT
// for charset, which the caller no longer changes.
func (p *Plan) Learn(fields []*querypb.Field, charset string) {
	if len(fields) == len(p.types) {
		p.fields.Store(&learnedFields{fields: fields, charset: charset})
	}
}

// Entry finds or recognises a statement. For the text protocol the key is
// the statement's shape and the literals come from this text. It is nil
// for a statement the fast path does not run.
func (f *Cache) Entry(db, query string, prepared bool) (*Entry, []fastsql.Value) {
	var key string
	var lits []fastsql.Value
	if prepared {
		key = db + "\x00p\x00" + query
	} else {
		shape, l, ok := fastsql.Shape(query)
		if !ok {
			return nil, nil
		}
		key, lits = db+"\x00t\x00"+shape, l
	}
	f.mu.Lock()
	e, ok := f.entries[key]
	f.mu.Unlock()
	if ok {
		if e == nil {
			return nil, nil
		}
		if prepared {
			return e, e.lits
		}
		lits, ok := e.st.Literals(lits)
		if !ok {
			return nil, nil
		}
		return e, lits
	}
	st, plits, _, ok := fastsql.Parse(query)
	if ok {
		e = &Entry{st: st, lits: plits}
		if !prepared {
			lits = plits
		} else {
			lits = e.lits
		}
	}
	f.mu.Lock()
	if len(f.entries) >= maxEntries {
		f.entries = map[string]*Entry{}
	}
	f.entries[key] = e
	f.mu.Unlock()
	if e == nil {
		return nil, nil
	}
	return e, lits
}

func newPlan(st *fastsql.Statement, def *storage.TableDef, cat *storage.Catalog, schema func(*storage.TableDef, *storage.TableInfo) sql.Schema) (*Plan, error) {
	if len(def.FKs) > 0 || (st.Kind != fastsql.Select && len(def.Checks) > 0) {
		return nil, nil
	}
	if d, ok := cat.Database(def.DB); ok && len(d.Triggers) > 0 && st.Kind != fastsql.Select {
		return nil, nil
	}
	for _, t := range cat.AllTables() {
		for _, fk := range t.FKs {
			if strings.EqualFold(fk.ParentTable, def.Name) {
				return nil, nil
			}
		}
	}
	info, err := def.Info()
	if err != nil {
		return nil, err
	}
	p := &Plan{st: st, cat: cat, def: def, info: info, sch: schema(def, info), keyOrd: -1}
	for i, c := range def.Columns {
		if st.Kind != fastsql.Select && (c.Generated != "" || c.OnUpdate != "" || c.Virtual) {
			return nil, nil
		}
		_ = i
	}
	col := func(name string) int {
		_, ord := def.ColumnByName(name)
		return ord
	}
	if st.Kind != fastsql.Insert && st.Kind != fastsql.Replace {
		p.keyOrd = col(st.WhereCol)
		if p.keyOrd < 0 {
			return nil, nil
		}
		switch {
		case len(info.PKOrds) == 1 && info.PKOrds[0] == p.keyOrd:
		default:
			for i := range info.Indexes {
				ii := &info.Indexes[i]
				if ii.Usable && len(ii.Ords) == 1 && ii.Ords[0] == p.keyOrd && len(ii.Def.Prefix) == 0 && (ii.Def.Unique || st.Kind == fastsql.Select) {
					p.ii = ii
					break
				}
			}
			if p.ii == nil {
				return nil, nil
			}
		}
		if !sqlvalue.IsIntegerType(p.sch[p.keyOrd].Type) {
			return nil, nil
		}
	}
	switch st.Kind {
	case fastsql.Select:
		if st.Agg != "" {
			return p.planAggregate(st, col)
		}
		if st.Columns == nil {
			for i, c := range p.sch {
				if !c.Hidden {
					p.proj = append(p.proj, i)
				}
			}
		}
		for _, n := range st.Columns {
			o := col(n)
			if o < 0 {
				return nil, nil
			}
			p.proj = append(p.proj, o)
		}
		for _, o := range p.proj {
			p.types = append(p.types, p.sch[o].Type)
		}
		if !p.planOrder(st, col) {
			return nil, nil
		}
		p.reads(p.proj...)
	case fastsql.Update:
		for _, s := range st.Sets {
			o := col(s.Col)
			if o < 0 || o == p.keyOrd {
				return nil, nil
			}
			if s.Self && !sqlvalue.IsIntegerType(p.sch[o].Type) {
				return nil, nil
			}
			p.sets = append(p.sets, assignment{ord: o, self: s.Self, sign: s.Sign, arg: s.Arg})
		}
	case fastsql.Insert, fastsql.Replace:
		seen := map[int]bool{}
		for _, n := range st.InsertCols {
			o := col(n)
			if o < 0 || seen[o] {
				return nil, nil
			}
			seen[o] = true
			p.ins = append(p.ins, o)
		}
		for i, c := range p.sch {
			if seen[i] {
				continue
			}
			// a missing column needs a literal default (or is nullable without
			// one); a missing AUTO_INCREMENT column is generated, as for NULL
			if c.AutoIncrement {
				continue
			}
			if c.Default != nil && !c.Default.IsLiteral() {
				return nil, nil
			}
			if c.Default == nil && !c.Nullable {
				return nil, nil
			}
		}
	}
	return p, nil
}

// planOrder decides how ORDER BY is met: by the primary key scan, or by
// sorting on a column. It reports false for the cases left to the general
// path (ORDER BY the secondary index column of the WHERE).
func (p *Plan) planOrder(st *fastsql.Statement, col func(string) int) bool {
	if st.OrderBy == "" {
		return true
	}
	o := col(st.OrderBy)
	switch {
	case o < 0:
		return false
	case o == p.keyOrd:
		p.keyOrder = true
		return p.ii == nil
	}
	order := sql.Ascending
	if st.Desc {
		order = sql.Descending
	}
	c := p.sch[o]
	p.reads(o)
	p.sort = sql.SortFields{{Column: expression.NewGetField(o, c.Type, c.Name, c.Nullable), Order: order}}
	if st.Distinct {
		i := slices.Index(p.proj, o)
		if i < 0 {
			return false
		}
		p.projSort = sql.SortFields{{Column: expression.NewGetField(i, c.Type, c.Name, c.Nullable), Order: order}}
	}
	return true
}

// reads marks columns the SELECT reads.
func (p *Plan) reads(ords ...int) {
	if p.need == nil {
		p.need = make([]bool, len(p.sch))
	}
	for _, o := range ords {
		p.need[o] = true
	}
}

// planAggregate builds SELECT AGG(col) with go-mysql-server's aggregate,
// for numeric columns (SUM, AVG) or any column (COUNT, MIN, MAX).
func (p *Plan) planAggregate(st *fastsql.Statement, col func(string) int) (*Plan, error) {
	var child sql.Expression
	if n := st.Columns[0]; n == "*" {
		child = expression.NewStar()
		p.reads() // COUNT(*) reads no column
	} else {
		o := col(n)
		if o < 0 {
			return nil, nil
		}
		c := p.sch[o]
		if (st.Agg == "SUM" || st.Agg == "AVG") && !types.IsNumber(c.Type) {
			return nil, nil
		}
		child = expression.NewGetField(o, c.Type, c.Name, c.Nullable)
		p.reads(o)
	}
	switch st.Agg {
	case "SUM":
		p.agg = aggregation.NewSum(child)
	case "COUNT":
		p.agg = aggregation.NewCount(child)
	case "MIN":
		p.agg = aggregation.NewMin(child)
	case "MAX":
		p.agg = aggregation.NewMax(child)
	case "AVG":
		p.agg = aggregation.NewAvg(child)
	default:
		return nil, nil
	}
	p.types = []sql.Type{p.agg.Type(nil)}
	if st.Agg == "SUM" || st.Agg == "AVG" {
		// as the general path types them: DECIMAL for an exact argument
		// (mysqlexpr.ExactSum), else DOUBLE as go-mysql-server's planbuilder does
		p.types[0] = types.Float64
		if a := mysqlexpr.ExactSum(p.agg); a != nil {
			p.agg, p.types[0] = a, a.Type(nil)
		}
	}
	return p, nil
}

// Args resolves the statement's arguments: its literals, and binds, the
// bound parameters of its placeholders (v1, v2, ... in order).
func Args(st *fastsql.Statement, lits []fastsql.Value, binds map[string]*querypb.BindVariable) ([]any, bool) {
	out := make([]any, len(lits))
	k := 0
	for i, l := range lits {
		switch l.Kind {
		case 0:
			k++
			bv := binds["v"+strconv.Itoa(k)]
			if bv == nil {
				return nil, false
			}
			v, ok := bindValue(bv)
			if !ok {
				return nil, false
			}
			out[i] = v
		case fastsql.Null:
			out[i] = nil
		case fastsql.Int:
			out[i] = l.Int
		case fastsql.Uint:
			out[i] = l.Uint
		case fastsql.String:
			out[i] = l.Str
		default:
			return nil, false // decimals and floats: the general path's rules
		}
	}
	return out, true
}

// bindValue converts a bound parameter: integers and strings only.
func bindValue(bv *querypb.BindVariable) (any, bool) {
	switch {
	case bv.Type == sqltypes.Null:
		return nil, true
	case sqltypes.IsSigned(bv.Type):
		v, err := strconv.ParseInt(string(bv.Value), 10, 64)
		return v, err == nil
	case sqltypes.IsUnsigned(bv.Type):
		v, err := strconv.ParseUint(string(bv.Value), 10, 64)
		return v, err == nil
	case bv.Type == sqltypes.VarChar || bv.Type == sqltypes.Char || bv.Type == sqltypes.Text:
		return string(bv.Value), true
	case bv.Type == sqltypes.VarBinary || bv.Type == sqltypes.Binary || bv.Type == sqltypes.Blob:
		// Clients send string parameters as MYSQL_TYPE_STRING, which the
		// protocol layer hands over as binary. Assigned to a text column,
		// valid UTF-8 converts exactly as a string does (go-mysql-server
		// checks and converts only invalid UTF-8); anything else takes the
		// general path. Arguments are only ever keys (integers) or values
		// assigned to columns, and columnValue refuses binary columns.
		if !utf8.Valid(bv.Value) {
			return nil, false
		}
		return string(bv.Value), true
	}
	return nil, false
}

// keyValue converts an argument used as a key: an integer within the
// column type's range, or fall back.
func keyValue(ctx *sql.Context, typ sql.Type, v any) (any, bool) {
	switch v.(type) {
	case int64, uint64:
	default:
		return nil, false
	}
	cv, inRange, err := typ.Convert(ctx, v)
	if err != nil || inRange != sql.InRange {
		return nil, false
	}
	if cmp, err := typ.Compare(ctx, cv, v); err != nil || cmp != 0 {
		return nil, false
	}
	return cv, true
}

// columnValue converts an argument assigned to a column, refusing
// anything that would warn or fail (the general path reports those).
func columnValue(ctx *sql.Context, c *sql.Column, v any) (any, bool) {
	if v == nil {
		return nil, c.Nullable
	}
	switch v.(type) {
	case int64, uint64:
		if !sqlvalue.IsIntegerType(c.Type) {
			return nil, false
		}
	case string:
		if !types.IsText(c.Type) || types.IsBinaryType(c.Type) {
			return nil, false
		}
	default:
		return nil, false
	}
	cv, inRange, err := c.Type.Convert(ctx, v)
	if err != nil || inRange != sql.InRange {
		return nil, false
	}
	if s, ok := v.(string); ok {
		// CHAR pads and trims; anything but an exact value goes the long way
		if cs, ok := cv.(string); !ok || cs != s {
			return nil, false
		}
	}
	return cv, true
}

// keys returns the encoded keys of the statement's WHERE arguments,
// sorted and deduplicated as an index lookup returns them.
func (p *Plan) keys(ctx *sql.Context, st *fastsql.Statement, args []any) ([][]byte, bool) {
	kc := p.info.PKCols
	if p.ii != nil {
		kc = p.ii.Cols
	}
	var keys [][]byte
	for _, a := range st.Args {
		v, ok := keyValue(ctx, p.sch[p.keyOrd].Type, args[a])
		if !ok {
			return nil, false
		}
		k, err := kc[0].AppendKey(nil, v)
		if err != nil {
			return nil, false
		}
		keys = append(keys, k)
	}
	if st.Op == fastsql.In {
		sort.Slice(keys, func(i, j int) bool { return string(keys[i]) < string(keys[j]) })
		out := keys[:0]
		for i, k := range keys {
			if i == 0 || string(k) != string(keys[i-1]) {
				out = append(out, k)
			}
		}
		keys = out
	}
	return keys, true
}
