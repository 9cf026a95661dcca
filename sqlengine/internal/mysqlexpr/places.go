package mysqlexpr

import (
	"math"
	"strconv"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/shopspring/decimal"
)

// ROUND and TRUNCATE as MySQL answers them where go-mysql-server does not:
//
//   - A DECIMAL rounded or truncated to a constant number of places has
//     that many (ROUND(price) of a DECIMAL(8,2) is 20, TRUNCATE(x, 1) is
//     2.2, ROUND(x, 4) is 2.2000; go-mysql-server kept the argument's
//     type, so 20.00, 2.20 and 2.20).
//   - A DOUBLE (or a string, read as one) rounded to an integer rounds
//     half to even, as MySQL's rint does: ROUND(2.5e0) is 2 and
//     ROUND(-2.5e0) is -2 (go-mysql-server: 3 and -3). An exact DECIMAL
//     still rounds half away from zero.

// placesWraps wraps ROUND and TRUNCATE (see WrapBuiltIns).
var placesWraps = map[string]BuiltInWrap{
	"round": func(ctx *sql.Context, inner sql.Function, args []sql.Expression) (sql.Expression, error) {
		return newPlacesCall(ctx, inner, true, args)
	},
	"truncate": func(ctx *sql.Context, inner sql.Function, args []sql.Expression) (sql.Expression, error) {
		return newPlacesCall(ctx, inner, false, args)
	},
}

// placesCall is a call of ROUND or TRUNCATE.
type placesCall struct {
	placesExpr
	ctor  sql.Function
	round bool
}

// placesExpr is what go-mysql-server's Round and Truncate are.
type placesExpr interface {
	sql.FunctionExpression
	sql.CollationCoercible
}

func newPlacesCall(ctx *sql.Context, ctor sql.Function, round bool, args []sql.Expression) (sql.Expression, error) {
	e, err := ctor.NewInstance(ctx, args)
	if err != nil {
		return nil, err
	}
	pe, ok := e.(placesExpr)
	if !ok {
		return e, nil
	}
	return &placesCall{placesExpr: pe, ctor: ctor, round: round}, nil
}

// places is the constant number of places asked for (0 when omitted),
// or ok=false when it is not a constant.
func (f *placesCall) places(ctx *sql.Context) (int64, bool) {
	args := f.Children()
	if len(args) < 2 {
		return 0, true
	}
	lit, ok := args[1].(*expression.Literal)
	if !ok {
		return 0, false
	}
	v, _, err := types.Int64.Convert(ctx, lit.Value())
	d, ok := v.(int64)
	return d, ok && err == nil
}

// Type implements sql.Expression.
func (f *placesCall) Type(ctx *sql.Context) sql.Type {
	t := f.placesExpr.Type(ctx)
	dt, ok := f.Children()[0].Type(ctx).(sql.DecimalType)
	if !ok || !types.IsDecimal(t) {
		return t
	}
	d, ok := f.places(ctx)
	if !ok {
		return t
	}
	scale := decimalPlaces(d)
	prec := int64(dt.Precision()) - int64(dt.Scale()) + scale
	if f.round {
		prec++ // 9.99 rounds to 10.0
	}
	prec = min(max(prec, scale, 1), int64(types.DecimalTypeMaxPrecision))
	nt, err := types.CreateDecimalType(uint8(prec), uint8(scale))
	if err != nil {
		return t
	}
	return nt
}

// decimalPlaces is the scale of a DECIMAL rounded or truncated to d
// places.
func decimalPlaces(d int64) int64 { return min(max(d, 0), types.DecimalTypeMaxScale) }

// Eval implements sql.Expression.
func (f *placesCall) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	num := f.Children()[0]
	d, ok := f.places(ctx)
	if t := num.Type(ctx); f.round && ok && d == 0 && (types.IsFloat(t) || types.IsText(t)) {
		v, err := num.Eval(ctx, row)
		if err != nil || v == nil {
			return nil, err
		}
		switch x := v.(type) {
		case float64:
			return math.RoundToEven(x), nil
		case float32:
			return math.RoundToEven(float64(x)), nil
		case string: // read as a DOUBLE; anything but a number warns as before
			if n, err := strconv.ParseFloat(strings.TrimSpace(x), 64); err == nil {
				return math.RoundToEven(n), nil
			}
		}
	}
	v, err := f.placesExpr.Eval(ctx, row)
	if x, isDec := v.(decimal.Decimal); isDec && ok {
		// the digits Type promises (a truncated 3.00 came back as 3)
		return x.Round(int32(decimalPlaces(d))), err
	}
	return v, err
}

// WithChildren implements sql.Expression.
func (f *placesCall) WithChildren(ctx *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	return newPlacesCall(ctx, f.ctor, f.round, children)
}
