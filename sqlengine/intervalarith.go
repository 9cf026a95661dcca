package sqlengine

import (
	"context"
	"reflect"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/types"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
	"github.com/shopspring/decimal"
)

// In MySQL `expr + INTERVAL n unit`, `INTERVAL n unit + expr` and
// `expr - INTERVAL n unit` are DATE_ADD and DATE_SUB under another
// spelling. go-mysql-server builds them as arithmetic typed DATETIME
// whatever expr is: `d + INTERVAL 1 DAY` of a DATE printed
// `2024-02-01 00:00:00`, a TIME plus an hour became today's date and
// time, a DATETIME(2) lost its fraction and a string came back as a
// DATETIME rather than the string MySQL gives. intervalParser parses as
// go-mysql-server does and rewrites those operators into the DATE_ADD and
// DATE_SUB calls they are, typed as MySQL types them (dateArithFsp).

// intervalParser is go-mysql-server's MySQL parser with interval
// arithmetic rewritten into DATE_ADD/DATE_SUB. (go-mysql-server refuses a
// foreign key's SET DEFAULT action only under its own parser type: see
// refuseSetDefault.)
type intervalParser struct{ sql.Parser }

// ParseSimple implements sql.Parser.
func (p intervalParser) ParseSimple(query string) (ast.Statement, error) {
	st, err := p.Parser.ParseSimple(query)
	return intervalCalls(query, st), err
}

// Parse implements sql.Parser.
func (p intervalParser) Parse(ctx *sql.Context, query string, multi bool) (ast.Statement, string, string, error) {
	st, parsed, rest, err := p.Parser.Parse(ctx, query, multi)
	return intervalCalls(parsed, st), parsed, rest, err
}

// ParseWithOptions implements sql.Parser.
func (p intervalParser) ParseWithOptions(ctx context.Context, query string, delimiter rune, multi bool, options ast.ParserOptions) (ast.Statement, string, string, error) {
	st, parsed, rest, err := p.Parser.ParseWithOptions(ctx, query, delimiter, multi, options)
	return intervalCalls(parsed, st), parsed, rest, err
}

// ParseOneWithOptions implements sql.Parser.
func (p intervalParser) ParseOneWithOptions(ctx context.Context, query string, options ast.ParserOptions) (ast.Statement, int, error) {
	st, n, err := p.Parser.ParseOneWithOptions(ctx, query, options)
	return intervalCalls(query, st), n, err
}

// intervalCalls rewrites the interval arithmetic of st, parsed from text,
// in place and returns it.
func intervalCalls(text string, st ast.Statement) ast.Statement {
	if st == nil || !containsFold(text, "interval") {
		return st
	}
	walkAST(reflect.ValueOf(&st).Elem(), func(v reflect.Value) {
		if v.Kind() != reflect.Interface || !v.CanSet() || v.Type() != exprType {
			return
		}
		if be, ok := v.Elem().Interface().(*ast.BinaryExpr); ok {
			if call := intervalCall(be); call != nil {
				v.Set(reflect.ValueOf(call))
			}
		}
	})
	return st
}

// exprType is the type of the AST's expression interface.
var exprType = reflect.TypeOf((*ast.Expr)(nil)).Elem()

// walkAST calls visit on every non-nil pointer and interface under v
// (fields, slices, pointers, interfaces), then walks what it holds then,
// so that visit may replace an interface's value first: in
// `d + INTERVAL 1 DAY + INTERVAL 1 HOUR` both additions become calls.
func walkAST(v reflect.Value, visit func(reflect.Value)) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return
		}
		visit(v)
		walkAST(v.Elem(), visit)
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < v.NumField(); i++ {
			if t.Field(i).IsExported() {
				walkAST(v.Field(i), visit)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			walkAST(v.Index(i), visit)
		}
	}
}

// intervalCall is the DATE_ADD/DATE_SUB call be spells, or nil if be is
// not interval arithmetic (or is one MySQL refuses, such as
// `INTERVAL 1 DAY - d`, left for go-mysql-server to refuse).
func intervalCall(be *ast.BinaryExpr) ast.Expr {
	li, lok := be.Left.(*ast.IntervalExpr)
	_, rok := be.Right.(*ast.IntervalExpr)
	var name string
	var date, interval ast.Expr
	switch {
	case lok == rok:
		return nil
	case be.Operator == ast.PlusStr && rok:
		name, date, interval = "date_add", be.Left, be.Right
	case be.Operator == ast.PlusStr && lok:
		name, date, interval = "date_add", be.Right, li
	case be.Operator == ast.MinusStr && rok:
		name, date, interval = "date_sub", be.Left, be.Right
	default:
		return nil
	}
	return &ast.FuncExpr{
		Name:  ast.NewColIdent(name),
		Exprs: ast.SelectExprs{&ast.AliasedExpr{Expr: date}, &ast.AliasedExpr{Expr: interval}},
	}
}

// dateArithFsp is the fractional seconds precision MySQL gives a
// DATETIME result of DATE_ADD(date, interval) and its kin: that of date
// (0 for a DATE or TIME), or more if the interval has a fraction of a
// second (6 for its MICROSECOND units, the scale of a decimal number of
// SECONDs).
func dateArithFsp(ctx *sql.Context, args []sql.Expression) int {
	if len(args) != 2 {
		return -1
	}
	fsp := 0
	switch t := args[0].Type(ctx).(type) {
	case sql.DatetimeType: // DATE, DATETIME, TIMESTAMP
		fsp = t.Precision()
	default:
		if !types.IsTimespan(t) {
			return -1 // a string or a parameter: go-mysql-server's type
		}
	}
	iv, ok := args[1].(*expression.Interval)
	if !ok {
		return fsp // ADDDATE(d, n): n days
	}
	unit := strings.ToUpper(iv.Unit)
	switch {
	case strings.Contains(unit, "MICROSECOND"):
		return 6
	case unit == "SECOND":
		if lit, ok := iv.Child.(*expression.Literal); ok {
			if d, ok := lit.Value().(decimal.Decimal); ok && d.Exponent() < 0 {
				fsp = max(fsp, min(int(-d.Exponent()), 6))
			}
		}
	}
	return fsp
}
