package mysqlexpr

import (
	"math"
	"math/big"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"

	"github.com/certusdb/certus/sqlengine/internal/sqlvalue"
)

// Integer +, - and * overflow as MySQL's do: a result outside BIGINT's
// range (or BIGINT UNSIGNED's, when the operation is unsigned) is 1690
// (22003) "BIGINT value is out of range in '(a + b)'". go-mysql-server
// computed them in int64 and wrapped around (9223372036854775807 + 1 was
// -9223372036854775808), and clamped a BIGINT UNSIGNED operand past 2^63
// to 2^63-1 first (18446744073709551615 + 0 was 9223372036854775807).
// checkedIntArith computes them exactly instead, keeping go-mysql-server's
// result type: where that type is BIGINT and MySQL's would be BIGINT
// UNSIGNED (an unsigned operand with a signed one), a result past BIGINT
// is 1690 too, never a wrong number, and so is a negative one, as in MySQL:
// `CAST(5 AS UNSIGNED) - 10` and `unsigned_col - 1` of 0 are "BIGINT
// UNSIGNED value is out of range" (they were -5 and -1), unless sql_mode
// has NO_UNSIGNED_SUBTRACTION (a subtraction is then signed).

// checkedIntArith is an integer +, - or * checked for overflow.
type checkedIntArith struct {
	*expression.Arithmetic
	unsigned bool // its type is BIGINT UNSIGNED
	// unsignedOperand: an operand is unsigned, so MySQL's result is
	// BIGINT UNSIGNED (whatever go-mysql-server's type) and may not be
	// negative
	unsignedOperand bool
}

// intArithOps are the operators checkedIntArith checks.
var intArithOps = map[string]bool{"+": true, "-": true, "*": true}

// checkIntArith wraps the integer arithmetic in e (see above).
func checkIntArith(ctx *sql.Context, e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
	return transform.Expr(ctx, e, func(ctx *sql.Context, e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
		a, ok := e.(*expression.Arithmetic)
		if !ok || !intArithOps[a.Op] {
			return e, transform.SameTree, nil
		}
		t := a.Type(ctx).Type()
		if t != sqltypes.Int64 && t != sqltypes.Uint64 {
			return e, transform.SameTree, nil
		}
		for _, c := range a.Children() {
			if _, interval := c.(*expression.Interval); interval || !sqlvalue.IsIntegerType(c.Type(ctx)) {
				return e, transform.SameTree, nil
			}
		}
		return newCheckedIntArith(ctx, a), transform.NewTree, nil
	})
}

func newCheckedIntArith(ctx *sql.Context, a *expression.Arithmetic) *checkedIntArith {
	c := &checkedIntArith{Arithmetic: a, unsigned: a.Type(ctx).Type() == sqltypes.Uint64}
	for _, o := range a.Children() {
		c.unsignedOperand = c.unsignedOperand || types.IsUnsigned(o.Type(ctx))
	}
	return c
}

// WithChildren implements sql.Expression.
func (c *checkedIntArith) WithChildren(ctx *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	n, err := c.Arithmetic.WithChildren(ctx, children...)
	if err != nil {
		return nil, err
	}
	if a, ok := n.(*expression.Arithmetic); ok {
		return newCheckedIntArith(ctx, a), nil
	}
	return n, nil
}

// Eval implements sql.Expression.
func (c *checkedIntArith) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	l, err := c.LeftChild.Eval(ctx, row)
	if err != nil || l == nil {
		return nil, err
	}
	r, err := c.RightChild.Eval(ctx, row)
	if err != nil || r == nil {
		return nil, err
	}
	li, lok := sqlvalue.AsInt(l)
	ri, rok := sqlvalue.AsInt(r)
	if !lok || !rok {
		lb, lok := bigInt(l)
		rb, rok := bigInt(r)
		if !lok || !rok {
			return c.Arithmetic.Eval(ctx, row) // not two integers: as go-mysql-server does
		}
		return c.fit(ctx, c.bigResult(lb, rb))
	}
	var res int64
	overflow := false
	switch c.Op {
	case "+":
		res = li + ri
		overflow = (ri > 0 && res < li) || (ri < 0 && res > li)
	case "-":
		res = li - ri
		overflow = (ri > 0 && res > li) || (ri < 0 && res < li)
	case "*":
		res = li * ri
		overflow = li != 0 && (res/li != ri || li == -1 && ri == math.MinInt64 || ri == -1 && li == math.MinInt64)
	}
	if overflow {
		return c.fit(ctx, c.bigResult(big.NewInt(li), big.NewInt(ri)))
	}
	if res < 0 && c.mayNotBeNegative(ctx) {
		return nil, c.outOfRange(true)
	}
	if c.unsigned {
		return uint64(res), nil
	}
	return res, nil
}

// mayNotBeNegative reports whether MySQL's result is unsigned: the
// operation's type is, or an operand is (but for a subtraction under
// NO_UNSIGNED_SUBTRACTION).
func (c *checkedIntArith) mayNotBeNegative(ctx *sql.Context) bool {
	if c.unsigned {
		return true
	}
	return c.unsignedOperand && !(c.Op == "-" && sql.LoadSqlMode(ctx).ModeEnabled("NO_UNSIGNED_SUBTRACTION"))
}

// bigResult is the exact result of the operation on l and r.
func (c *checkedIntArith) bigResult(l, r *big.Int) *big.Int {
	switch c.Op {
	case "+":
		return new(big.Int).Add(l, r)
	case "-":
		return new(big.Int).Sub(l, r)
	}
	return new(big.Int).Mul(l, r)
}

// maxUint64 is BIGINT UNSIGNED's largest value.
var maxUint64 = new(big.Int).SetUint64(math.MaxUint64)

// fit returns res as the operation's type, or 1690 if it is out of range.
func (c *checkedIntArith) fit(ctx *sql.Context, res *big.Int) (any, error) {
	if res.Sign() < 0 && c.mayNotBeNegative(ctx) {
		return nil, c.outOfRange(true)
	}
	if c.unsigned {
		if res.Cmp(maxUint64) > 0 {
			return nil, c.outOfRange(true)
		}
		return res.Uint64(), nil
	}
	if !res.IsInt64() {
		return nil, c.outOfRange(false)
	}
	return res.Int64(), nil
}

// outOfRange is MySQL's 1690 for this operation, whose result is BIGINT
// UNSIGNED or BIGINT.
func (c *checkedIntArith) outOfRange(unsigned bool) error {
	typ := "BIGINT"
	if unsigned {
		typ = "BIGINT UNSIGNED"
	}
	return mysql.NewSQLError(mysql.ERDataOutOfRange, "22003", "%s value is out of range in '%s'", typ,
		strings.ReplaceAll(c.Arithmetic.String(), "'", "''"))
}

// bigInt is v as a big.Int, if v is a Go integer.
func bigInt(v any) (*big.Int, bool) {
	switch x := v.(type) {
	case int8:
		return big.NewInt(int64(x)), true
	case int16:
		return big.NewInt(int64(x)), true
	case int32:
		return big.NewInt(int64(x)), true
	case int64:
		return big.NewInt(x), true
	case int:
		return big.NewInt(int64(x)), true
	case uint8:
		return new(big.Int).SetUint64(uint64(x)), true
	case uint16:
		return new(big.Int).SetUint64(uint64(x)), true
	case uint32:
		return new(big.Int).SetUint64(uint64(x)), true
	case uint64:
		return new(big.Int).SetUint64(x), true
	case uint:
		return new(big.Int).SetUint64(uint64(x)), true
	}
	return nil, false
}
