package sqlengine

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"

	"github.com/certusdb/certus/sqlengine/internal/sqlvalue"
)

// SELECTs of system variables and integer literals.
//
// Drivers and pools send them all the time: Connector/J reads eighteen
// variables in one SELECT at every connect, the mysql client asks for
// @@version_comment, connection pools validate with SELECT 1.
// go-mysql-server's planner analyses such a statement like any other:
// SELECT 1 took 400 us on one node, six point selects' worth, and
// Connector/J's connect query 4 ms. The handler answers them itself once
// it has seen the general path's answer to the same text under the same
// character_set_results and produced the same bytes: the column metadata
// comes from that answer, each value from the variable's own type, as the
// general path converts it. Any difference, and that text always goes to
// the general path. Only autocommit statements outside a transaction are
// answered, so no transaction starts or ends differently.

// constSelectRE matches `SELECT items [LIMIT n] [;]`.
var constSelectRE = regexp.MustCompile(`(?is)^\s*select\s+(.+?)(?:\s+limit\s+[1-9][0-9]{0,8})?\s*;?\s*$`)

// constItemRE matches one item: @@[scope.]name or an integer literal, with
// an optional alias.
var constItemRE = regexp.MustCompile("(?is)^\\s*(?:@@(?:(session|local|global)\\.)?([a-z_][a-z0-9_]*)|([0-9]{1,9}))(?:\\s+(?:as\\s+)?(?:[a-z_][a-z0-9_]*|`[^`,]+`))?\\s*$")

// maxConstSelects bounds the statement texts remembered.
const maxConstSelects = 1024

// constSelects remembers the constant SELECTs seen, by text.
type constSelects struct {
	mu sync.Mutex
	m  map[string]*constSelect
}

// constSelect is one statement text.
type constSelect struct {
	items []constItem
	// learned is the general path's answer it reproduced; nil until then
	learned atomic.Pointer[constAnswer]
	// never is set when its answer differed from the general path's
	never atomic.Bool
}

// constItem is one selected value: a system variable (name set) or a
// literal (its value is the learned one).
type constItem struct {
	name   string
	global bool
}

// constAnswer is the general path's result of a statement under one
// character_set_results.
type constAnswer struct {
	charset string
	fields  []*querypb.Field
	row     []sqltypes.Value
}

// lookup returns the statement for query, parsing it the first time, or
// nil when query is not a constant SELECT.
func (cs *constSelects) lookup(query string) *constSelect {
	if len(query) > 4096 {
		return nil
	}
	cs.mu.Lock()
	c, seen := cs.m[query]
	cs.mu.Unlock()
	if seen {
		return c
	}
	c = parseConstSelect(query)
	cs.mu.Lock()
	if cs.m == nil || len(cs.m) >= maxConstSelects {
		cs.m = map[string]*constSelect{}
	}
	cs.m[query] = c
	cs.mu.Unlock()
	return c
}

func parseConstSelect(query string) *constSelect {
	m := constSelectRE.FindStringSubmatch(query)
	if m == nil {
		return nil
	}
	c := &constSelect{}
	for _, item := range strings.Split(m[1], ",") {
		im := constItemRE.FindStringSubmatch(item)
		if im == nil {
			return nil
		}
		if im[3] != "" {
			c.items = append(c.items, constItem{})
			continue
		}
		c.items = append(c.items, constItem{name: strings.ToLower(im[2]), global: strings.EqualFold(im[1], "global")})
	}
	return c
}

// values returns the row's values now, as the general path converts them;
// ok is false when a variable is unknown or cannot be read.
func (c *constSelect) values(ctx *sql.Context, s *Session, literals []sqltypes.Value) ([]sqltypes.Value, bool) {
	row := make([]sqltypes.Value, len(c.items))
	for i, it := range c.items {
		if it.name == "" {
			row[i] = literals[i]
			continue
		}
		sv, global, ok := sql.SystemVariables.GetGlobal(it.name)
		if !ok {
			return nil, false
		}
		v := global
		if !it.global {
			var err error
			if v, err = s.GetSessionVariable(ctx, it.name); err != nil {
				return nil, false
			}
		}
		if v == nil {
			row[i] = sqltypes.NULL
			continue
		}
		sv2, err := sv.GetType().SQL(ctx, nil, v)
		if err != nil {
			return nil, false
		}
		row[i] = sv2
	}
	return row, true
}

// constAnswerable reports whether the session may be answered without the
// general path: autocommit on, no transaction open, fast path on.
func constAnswerable(s *Session) bool {
	if s == nil || s.GetTransaction() != nil || s.GetIgnoreAutoCommit() {
		return false
	}
	if v, err := s.GetSessionVariable(nil, "certus_fast_path"); err == nil && !sqlvalue.Truthy(v) {
		return false
	}
	ac, err := s.GetSessionVariable(nil, "autocommit")
	return err == nil && sqlvalue.Truthy(ac)
}

// constSelect answers fc's query when it is a constant SELECT whose answer
// was learned. A constant SELECT not learned yet (for this
// character_set_results) is left to the general path, with fc set to learn
// from its result.
func (fc *fastCall) constSelect(ctx context.Context) (handled bool, err error) {
	s := fc.s
	if fc.h.consts == nil || fc.h.fast == nil || !constAnswerable(s) {
		return false, nil
	}
	c := fc.h.consts.lookup(fc.query)
	if c == nil || c.never.Load() {
		return false, nil
	}
	charset := fc.charset()
	a := c.learned.Load()
	if a == nil || a.charset != charset {
		fc.learnConst, fc.learnCharset = c, charset
		return false, nil
	}
	sctx := sql.NewContext(ctx, sql.WithSession(s), sql.WithQuery(fc.query))
	row, ok := c.values(sctx, s, a.row)
	if !ok {
		return false, nil
	}
	_ = s.CommandBegin()
	defer s.CommandEnd()
	sql.IncrementStatusVariable(sctx, "Questions", 1)
	sql.IncrementStatusVariable(sctx, "Com_select", 1)
	s.ClearWarnings()
	lqi := s.GetLastQueryInfo()
	lqi.RowCount.Store(-1)
	lqi.FoundRows.Store(1)
	fc.setStatus(nil, true)
	fc.h.fast.Ran()
	return true, fc.out(&sqltypes.Result{Fields: cloneFields(a.fields), Rows: [][]sqltypes.Value{row}})
}

// learnConstFrom keeps the general path's answer r of the statement being
// learned if this handler computes the same row; otherwise the statement
// is never answered here.
func (fc *fastCall) learnConstFrom(r *sqltypes.Result) {
	c := fc.learnConst
	fc.learnConst = nil
	if len(r.Fields) != len(c.items) || len(r.Rows) != 1 || len(r.Rows[0]) != len(c.items) {
		c.never.Store(true)
		return
	}
	sctx := sql.NewContext(context.Background(), sql.WithSession(fc.s))
	row, ok := c.values(sctx, fc.s, r.Rows[0])
	if !ok || !sameRow(row, r.Rows[0]) {
		c.never.Store(true)
		return
	}
	// the result's bytes belong to the protocol's buffers
	kept := make([]sqltypes.Value, len(row))
	for i, v := range r.Rows[0] {
		kept[i] = sqltypes.MakeTrusted(v.Type(), bytes.Clone(v.Raw()))
	}
	c.learned.Store(&constAnswer{charset: fc.learnCharset, fields: cloneFields(r.Fields), row: kept})
}

func sameRow(a, b []sqltypes.Value) bool {
	for i := range a {
		if a[i].Type() != b[i].Type() || a[i].IsNull() != b[i].IsNull() || !bytes.Equal(a[i].Raw(), b[i].Raw()) {
			return false
		}
	}
	return true
}
