package sqlengine

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
)

// A string stored into a numeric column is read as MySQL reads it: blanks,
// a number, blanks. When there is no number ('' or 'abc') MySQL reports
// 1366 (Incorrect integer value); when something follows the number
// ('3x') it reports 1265 (Data truncated). In strict mode either fails
// the statement; otherwise, or with IGNORE, the column gets 0 or the
// number and the statement a warning. go-mysql-server stores '' as 0
// without a word and fails '3x' with its own 1366, so INSERT's rows and
// UPDATE's assignments are checked here first (the fast path never stores
// a string into a numeric column). A string that is no valid date for a
// DATE, DATETIME or TIMESTAMP column is MySQL's 1292 naming the column in
// strict mode (go-mysql-server's 1366 did not name it).

// numberIn finds the number a string stored into a numeric column holds:
// s[start:end], and whether anything but blanks follows it. ok is false
// when s holds no number.
func numberIn(s string) (start, end int, trailing, ok bool) {
	i := skipBlanks(s, 0)
	start = i
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := 0
	for ; i < len(s) && isDigit(s[i]); i++ {
		digits++
	}
	if i < len(s) && s[i] == '.' {
		j := i + 1
		for ; j < len(s) && isDigit(s[j]); j++ {
			digits++
		}
		if digits > 0 {
			i = j
		}
	}
	if digits == 0 {
		return start, start, false, false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && isDigit(s[j]) {
			for j < len(s) && isDigit(s[j]) {
				j++
			}
			i = j
		}
	}
	return start, i, skipBlanks(s, i) < len(s), true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// skipBlanks returns the index of the first byte at or after i that is
// not one of MySQL's blanks.
func skipBlanks(s string, i int) int {
	for i < len(s) {
		switch s[i] {
		case ' ', '\t', '\n', '\r', '\v', '\f':
			i++
		default:
			return i
		}
	}
	return i
}

// storedKind names a column type as MySQL's 1366 and 1292 messages do,
// or is "" for a type whose strings are not checked here.
func storedKind(t sql.Type) string {
	switch {
	case types.IsInteger(t):
		return "integer"
	case types.IsDecimal(t):
		return "decimal"
	case types.IsFloat(t):
		return "double"
	case types.IsDateType(t):
		return "date"
	case types.IsDatetimeType(t), types.IsTimestampType(t):
		return "datetime"
	}
	return ""
}

// storeValue checks v, about to be stored into the column col of type typ
// (checked when checkedColumn holds) as row number row of the statement,
// and returns what to store instead: a string read as a number or date
// (storeString), then a value that does not fit the column (fitValue). lenient is true for IGNORE and
// outside strict mode: a bad string then warns instead of failing.
func storeValue(ctx *sql.Context, col string, typ sql.Type, v any, row int64, lenient bool) (any, error) {
	v, err := storeString(ctx, col, typ, v, row, lenient)
	if err != nil {
		return nil, err
	}
	return fitValue(ctx, col, typ, v, row, lenient)
}

// checkedColumn reports whether storeValue checks values for a column of
// type t.
func checkedColumn(t sql.Type) bool { return storedKind(t) != "" || fitChecked(t) }

// storeString is storeValue's check of a string stored into a numeric or
// date column (see above).
func storeString(ctx *sql.Context, col string, typ sql.Type, v any, row int64, lenient bool) (any, error) {
	s, ok := v.(string) // not []byte: 0x7E is a number here
	if !ok {
		return v, nil
	}
	kind := storedKind(typ)
	if kind == "" {
		return v, nil
	}
	if kind == "date" || kind == "datetime" {
		// go-mysql-server refuses an invalid date as 1366 without naming
		// the column; outside strict mode it is left to go-mysql-server
		if _, _, err := typ.Convert(ctx, s); err != nil && !lenient {
			return nil, mysql.NewSQLError(erTruncatedWrongValue, "22007",
				"Incorrect %s value: '%s' for column '%s' at row %d", kind, s, col, row)
		}
		return v, nil
	}
	start, end, trailing, ok := numberIn(s)
	var se *mysql.SQLError
	switch {
	case !ok:
		se = mysql.NewSQLError(mysql.ERTruncatedWrongValueForField, "HY000",
			"Incorrect %s value: '%s' for column '%s' at row %d", kind, s, col, row)
	case trailing:
		se = mysql.NewSQLError(mysql.ERWarnDataTruncated, "01000", "Data truncated for column '%s' at row %d", col, row)
	default:
		return v, nil
	}
	if !lenient {
		return nil, se
	}
	ctx.Session.Warn(&sql.Warning{Level: "Warning", Code: se.Number(), Message: se.Message})
	if !ok {
		return int64(0), nil
	}
	return s[start:end], nil
}

// erTruncatedWrongValue is MySQL's ER_TRUNCATED_WRONG_VALUE (1292).
const erTruncatedWrongValue = 1292

// lenientStore reports whether a bad value warns rather than fails the
// statement: with IGNORE, or when sql_mode is not strict.
func lenientStore(ctx *sql.Context, ignore bool) bool {
	return ignore || !sql.LoadSqlMode(ctx).Strict()
}

// strictInsertSource is an INSERT's source whose rows storeValue checks
// before go-mysql-server converts them to the destination's types.
type strictInsertSource struct {
	plan.UnaryNode
	dst     sql.Schema
	checked []int // indexes of dst's checked columns
	ignore  bool
}

var _ sql.Node = (*strictInsertSource)(nil)

// checkedInsert returns ii with its source checked, or nil when ii has no
// checked column or is checked already.
func checkedInsert(ctx *sql.Context, ii *plan.InsertInto) *plan.InsertInto {
	if _, ok := ii.Source.(*strictInsertSource); ok {
		return nil
	}
	dst := ii.Destination.Schema(ctx)
	var checked []int
	for i, c := range dst {
		if checkedColumn(c.Type) {
			checked = append(checked, i)
		}
	}
	if checked == nil {
		return nil
	}
	return ii.WithSource(&strictInsertSource{UnaryNode: plan.UnaryNode{Child: ii.Source}, dst: dst, checked: checked, ignore: ii.Ignore})
}

// String implements sql.Node.
func (n *strictInsertSource) String() string { return n.Child.String() }

// IsReadOnly implements sql.Node.
func (n *strictInsertSource) IsReadOnly() bool { return n.Child.IsReadOnly() }

// WithChildren implements sql.Node.
func (n *strictInsertSource) WithChildren(_ *sql.Context, children ...sql.Node) (sql.Node, error) {
	if len(children) != 1 {
		return nil, sql.ErrInvalidChildrenNumber.New(n, len(children), 1)
	}
	c := *n
	c.Child = children[0]
	return &c, nil
}

// checkRows checks the rows of n's source it with storeValue.
func checkRows(ctx *sql.Context, n *strictInsertSource, it sql.RowIter) sql.RowIter {
	lenient := lenientStore(ctx, n.ignore)
	var row int64
	return &mappedRows{RowIter: it, f: func(ctx *sql.Context, r sql.Row) error {
		row++
		if len(r) != len(n.dst) {
			// a row laid out otherwise (a trigger's INSERT also carries
			// the outer row's columns) is left to go-mysql-server
			return nil
		}
		for _, i := range n.checked {
			c := n.dst[i]
			v, err := storeValue(ctx, c.Name, c.Type, r[i], row, lenient)
			if err != nil {
				return err
			}
			r[i] = v
		}
		return nil
	}}
}

// strictAssign is the value of an UPDATE's assignment to a checked column
// (see storedKind), checked by storeValue.
type strictAssign struct {
	expression.UnaryExpressionStub
	col     string
	typ     sql.Type
	lenient bool
	row     *int64 // the number of the row being updated (see countedRows)
}

var _ sql.Expression = (*strictAssign)(nil)

// checkedAssignments returns the assignments of an UPDATE with their
// values to checked columns checked, or nil when there are none (or they
// are checked already). row is to count the rows the UPDATE reads (see
// countedRows).
func checkedAssignments(ctx *sql.Context, u *plan.UpdateSource, exprs []sql.Expression, row *int64) []sql.Expression {
	var out []sql.Expression
	lenient := lenientStore(ctx, u.Ignore)
	for i, e := range exprs {
		sf, ok := e.(*expression.SetField)
		if !ok {
			continue
		}
		gf, ok := sf.LeftChild.(*expression.GetField)
		if !ok {
			continue
		}
		if !checkedColumn(gf.Type(ctx)) {
			continue
		}
		if _, ok := sf.RightChild.(*strictAssign); ok {
			return nil
		}
		if out == nil {
			out = append([]sql.Expression(nil), exprs...)
		}
		out[i] = expression.NewSetField(gf, &strictAssign{UnaryExpressionStub: expression.UnaryExpressionStub{Child: sf.RightChild},
			col: gf.Name(), typ: gf.Type(ctx), lenient: lenient, row: row})
	}
	return out
}

// countedRows counts the rows asked of an UPDATE's source into row before
// its assignments are evaluated for each, so a checked assignment knows
// the row number MySQL's messages give.
type countedRows struct {
	sql.RowIter
	row *int64
}

// Next implements sql.RowIter.
func (it *countedRows) Next(ctx *sql.Context) (sql.Row, error) {
	*it.row++
	return it.RowIter.Next(ctx)
}

// Eval implements sql.Expression.
func (a *strictAssign) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	v, err := a.Child.Eval(ctx, row)
	if err != nil || v == nil {
		return v, err
	}
	return storeValue(ctx, a.col, a.typ, v, *a.row, a.lenient)
}

// Type implements sql.Expression.
func (a *strictAssign) Type(ctx *sql.Context) sql.Type { return a.Child.Type(ctx) }

// String implements sql.Expression.
func (a *strictAssign) String() string { return a.Child.String() }

// WithChildren implements sql.Expression.
func (a *strictAssign) WithChildren(_ *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	if len(children) != 1 {
		return nil, sql.ErrInvalidChildrenNumber.New(a, len(children), 1)
	}
	c := *a
	c.Child = children[0]
	return &c, nil
}
