package mysqlexpr

import (
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/expression/function"
	"github.com/dolthub/go-mysql-server/sql/types"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/certusdb/certus/internal/sqllex"
	"github.com/certusdb/certus/sqlengine/internal/treewalk"
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

// IntervalCalls rewrites the interval arithmetic of st, parsed from text,
// in place.
func IntervalCalls(text string, st ast.Statement) {
	if !sqllex.ContainsFold(text, "interval") {
		return
	}
	treewalk.AST(reflect.ValueOf(&st).Elem(), func(v reflect.Value) {
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

// FractionalSeconds makes an interval of a fractional number of seconds
// (`INTERVAL 1.5 SECOND`, `INTERVAL '1.5' SECOND`) the microseconds it is,
// as MySQL counts it: go-mysql-server rounded the number to whole seconds
// (2) and cut the string (1).
func FractionalSeconds(text string, st ast.Statement) {
	if !sqllex.ContainsFold(text, "interval") {
		return
	}
	treewalk.AST(reflect.ValueOf(&st).Elem(), func(v reflect.Value) {
		if v.Kind() != reflect.Pointer || v.Type() != intervalType {
			return
		}
		iv := v.Interface().(*ast.IntervalExpr)
		if !strings.EqualFold(iv.Unit, "second") {
			return
		}
		val, neg := iv.Expr, false
		if u, ok := val.(*ast.UnaryExpr); ok && u.Operator == ast.UMinusStr {
			val, neg = u.Expr, true
		}
		lit, ok := val.(*ast.SQLVal)
		if !ok || lit.Type != ast.FloatVal && lit.Type != ast.StrVal {
			return
		}
		micros, ok := decimalMicros(strings.TrimSpace(string(lit.Val)))
		if !ok {
			return
		}
		if micros < 0 {
			micros, neg = -micros, !neg
		}
		var e ast.Expr = ast.NewIntVal([]byte(strconv.FormatInt(micros, 10)))
		if neg {
			e = &ast.UnaryExpr{Operator: ast.UMinusStr, Expr: e}
		}
		iv.Expr, iv.Unit = e, "microsecond"
	})
}

// intervalType is the type of an INTERVAL expression in the AST.
var intervalType = reflect.TypeOf((*ast.IntervalExpr)(nil))

// decimalMicros is s, a decimal number of seconds with a fraction
// ([+-]digits.digits), in microseconds (digits past the sixth dropped, as
// MariaDB does); ok is false for anything else (whole numbers, exponents,
// other text) and for more than 12 digits before the point.
func decimalMicros(s string) (int64, bool) {
	neg := strings.HasPrefix(s, "-")
	if neg || strings.HasPrefix(s, "+") {
		s = s[1:]
	}
	whole, frac, found := strings.Cut(s, ".")
	if !found || whole == "" && frac == "" || len(whole) > 12 || !allDigits(whole) || !allDigits(frac) {
		return 0, false
	}
	var w int64
	for _, c := range whole {
		w = w*10 + int64(c-'0')
	}
	var f int64
	for _, c := range (frac + "000000")[:6] {
		f = f*10 + int64(c-'0')
	}
	m := w*1_000_000 + f
	if neg {
		m = -m
	}
	return m, true
}

// allDigits reports whether s holds nothing but ASCII digits.
func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// dateArithOverflow reports whether v, what DATE_ADD or DATE_SUB (e)
// answered, stands for a date outside DATETIME's range (years 0 to 9999),
// which MySQL answers with NULL and warning 1441. go-mysql-server answered
// NULL without the warning past 9999, and a date of year -1 below year 0
// (its lower bound is time.Date(0, 0, 0, ...), which is -0001-11-30). A
// NULL go-mysql-server gave without a warning (warned: it gave one, about
// the date or the interval) is checked by computing the sum again, which
// only such a NULL pays for (computed again, a warning would be given
// twice).
func dateArithOverflow(ctx *sql.Context, e sql.Expression, row sql.Row, v any, warned bool) bool {
	switch v := v.(type) {
	case time.Time:
		return v.Year() < 0
	case string:
		return strings.HasPrefix(v, "-")
	case nil:
		if warned {
			return false
		}
	default:
		return false
	}
	var date sql.Expression
	var iv *expression.Interval
	sign := 1
	switch f := e.(type) {
	case *function.DateAdd:
		date, iv = f.Date, f.Interval
	case *function.DateSub:
		date, iv, sign = f.Date, f.Interval, -1
	default:
		return false
	}
	dv, err := date.Eval(ctx, row)
	if err != nil || dv == nil {
		return false
	}
	delta, err := iv.EvalDelta(ctx, row)
	if err != nil || delta == nil {
		return false
	}
	c, _, err := types.DatetimeMaxRange.Convert(ctx, dv)
	t, ok := c.(time.Time)
	if err != nil || !ok || t.Equal(types.ZeroTime) {
		return false // (go-mysql-server warned of the date itself)
	}
	if sign > 0 {
		t = delta.Add(t)
	} else {
		t = delta.Sub(t)
	}
	return outsideDatetime(t)
}

// warningCount is the number of warnings of ctx's statement so far.
func warningCount(ctx *sql.Context) uint16 {
	if ctx == nil || ctx.Session == nil {
		return 0
	}
	return ctx.WarningCount()
}
