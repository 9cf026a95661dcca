package sqlengine

import (
	"context"
	"reflect"
	"strconv"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/certusdb/certus/sqlengine/internal/mysqlexpr"
	"github.com/certusdb/certus/sqlengine/internal/treewalk"
)

// rewritingParser is go-mysql-server's MySQL parser followed by the
// rewrites Certus makes of what it parsed, before planning (the analyzer
// skips its rules for simple SELECTs, and a result's type must be right
// before the plan is built): interval arithmetic becomes DATE_ADD/DATE_SUB
// and a fractional number of seconds microseconds (mysqlexpr.IntervalCalls
// and mysqlexpr.FractionalSeconds), a
// TIME(n) column a TIME column (timeColumns), a
// CREATE VIEW's table its view's name (viewDatabase), and outside strict
// mode an INSERT's values for generated columns are left out
// (dropGeneratedValues).
// go-mysql-server refuses a foreign key's SET DEFAULT action only under
// its own parser type: see refuseSetDefault.
type rewritingParser struct {
	sql.Parser
	p *Provider // the tables, for dropGeneratedValues
}

// ParseSimple implements sql.Parser.
func (p rewritingParser) ParseSimple(query string) (ast.Statement, error) {
	st, err := p.Parser.ParseSimple(query)
	return p.rewrite(nil, query, st, err)
}

// Parse implements sql.Parser.
func (p rewritingParser) Parse(ctx *sql.Context, query string, multi bool) (ast.Statement, string, string, error) {
	st, parsed, rest, err := p.Parser.Parse(ctx, query, multi)
	st, err = p.rewrite(ctx, parsed, st, err)
	return st, parsed, rest, err
}

// ParseWithOptions implements sql.Parser.
func (p rewritingParser) ParseWithOptions(ctx context.Context, query string, delimiter rune, multi bool, options ast.ParserOptions) (ast.Statement, string, string, error) {
	st, parsed, rest, err := p.Parser.ParseWithOptions(ctx, query, delimiter, multi, options)
	sctx, _ := ctx.(*sql.Context)
	st, err = p.rewrite(sctx, parsed, st, err)
	return st, parsed, rest, err
}

// ParseOneWithOptions implements sql.Parser.
func (p rewritingParser) ParseOneWithOptions(ctx context.Context, query string, options ast.ParserOptions) (ast.Statement, int, error) {
	st, n, err := p.Parser.ParseOneWithOptions(ctx, query, options)
	sctx, _ := ctx.(*sql.Context)
	st, err = p.rewrite(sctx, query, st, err)
	return st, n, err
}

// rewrite checks st, parsed from text with the parser's error perr, with
// the statement guard, then rewrites it in place and returns it. ctx is
// the statement's context, or nil.
func (p rewritingParser) rewrite(ctx *sql.Context, text string, st ast.Statement, perr error) (ast.Statement, error) {
	if perr != nil {
		return st, nestingError(perr)
	}
	if st == nil {
		return nil, nil
	}
	if p.p != nil {
		if err := p.p.guard.check(ctx, text, st); err != nil {
			return nil, err
		}
	}
	mysqlexpr.IntervalCalls(text, st)
	mysqlexpr.WindowCalls(text, st)
	mysqlexpr.FractionalSeconds(text, st)
	timeColumns(st)
	viewDatabase(st)
	if ins, ok := st.(*ast.Insert); ok && ctx != nil && p.p != nil {
		p.p.dropGeneratedValues(ctx, ins)
	}
	return st, nil
}

// viewDatabase gives a CREATE VIEW statement's table the view's name:
// go-mysql-server takes the view's database from the table, which the
// parser leaves empty, so with no database selected `CREATE VIEW db.v`
// was 1046 "no database selected". (Reading one with none selected is
// lentDatabase's.)
func viewDatabase(st ast.Statement) {
	if d, ok := st.(*ast.DDL); ok && d.ViewSpec != nil && d.Table.IsEmpty() {
		d.Table = d.ViewSpec.ViewName
	}
}

// go-mysql-server has one TIME type, which keeps microseconds, and
// refused a column of TIME(0) to TIME(5) with 1105 "TIME length not yet
// supported", so a schema with a TIME(3) column could not be loaded.
// timeColumns makes such a column a TIME, as a TIME column is already in
// Certus: it stores the fraction given, where MySQL would round it to n
// digits (docs/COMPAT.md).
func timeColumns(st ast.Statement) {
	switch st.(type) {
	case *ast.DDL, *ast.AlterTable:
	default:
		return
	}
	treewalk.AST(reflect.ValueOf(&st).Elem(), func(v reflect.Value) {
		if v.Kind() != reflect.Struct || !v.CanAddr() {
			return
		}
		ct, ok := v.Addr().Interface().(*ast.ColumnType)
		if !ok || ct.Length == nil || !strings.EqualFold(ct.Type, "time") {
			return
		}
		if n, err := strconv.Atoi(string(ct.Length.Val)); err == nil && n >= 0 && n < 6 {
			ct.Length = nil
		}
	})
}
