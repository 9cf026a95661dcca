package sqlengine

import (
	"reflect"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/types"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// In MySQL `expr + INTERVAL n unit`, `INTERVAL n unit + expr` and
// `expr - INTERVAL n unit` are DATE_ADD and DATE_SUB under another
// spelling. go-mysql-server builds them as arithmetic typed DATETIME
// whatever expr is: `d + INTERVAL 1 DAY` of a DATE printed
// `2024-02-01 00:00:00`, a TIME plus an hour became today's date and
// time, a DATETIME(2) lost its fraction and a string came back as a
// DATETIME rather than the string MySQL gives. They are rewritten after
// parsing (see rewritingParser) into the DATE_ADD and DATE_SUB calls they
// are, typed as MySQL types them (dateArithFsp).

// intervalCalls rewrites the interval arithmetic of st, parsed from text,
// in place.
func intervalCalls(text string, st ast.Statement) {
	if !containsFold(text, "interval") {
		return
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
}

// exprType is the type of the AST's expression interface.
var exprType = reflect.TypeOf((*ast.Expr)(nil)).Elem()

// intervalCall is the DATE_ADD/DATE_SUB call be spells, or nil if be is
// not interval arithmetic (or is one MySQL refuses, such as
// `INTERVAL 1 DAY - d`, left for go-mysql-server to refuse).
func intervalCall(be *ast.BinaryExpr) ast.Expr {
	_, lok := be.Left.(*ast.IntervalExpr)
	_, rok := be.Right.(*ast.IntervalExpr)
	var name string
	var date, interval ast.Expr
	switch {
	case lok == rok:
		return nil
	case be.Operator == ast.PlusStr && rok:
		name, date, interval = "date_add", be.Left, be.Right
	case be.Operator == ast.PlusStr && lok:
		name, date, interval = "date_add", be.Right, be.Left
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
// (0 for a DATE or TIME), or 6 for an interval of MICROSECOND units.
// (go-mysql-server rounds a fractional number of SECONDs to a whole one:
// docs/COMPAT.md.)
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
	if iv, ok := args[1].(*expression.Interval); ok && strings.Contains(strings.ToUpper(iv.Unit), "MICROSECOND") {
		return 6
	}
	return fsp // also ADDDATE(d, n): n days
}
