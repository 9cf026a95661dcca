package mysqlexpr

import (
	"math"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/expression/function/aggregation"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/shopspring/decimal"
)

// TestExactSums sums values past int64 both ways, mixed with DECIMALs
// and NULLs, and checks SUM and AVG against DECIMAL arithmetic.
func TestExactSums(t *testing.T) {
	ctx := sql.NewEmptyContext()
	dec := func(s string) decimal.Decimal { return decimal.RequireFromString(s) }
	for _, tc := range []struct {
		typ      sql.Type
		vals     []any
		sum, avg string
	}{
		{types.Int64, []any{int64(math.MaxInt64), int64(1), int64(1)}, "9223372036854775809", "3074457345618258603.0000"},
		{types.Int64, []any{int64(math.MinInt64), int64(-1), nil, int64(5)}, "-9223372036854775804", "-3074457345618258601.3333"},
		{types.Uint64, []any{uint64(math.MaxUint64), uint64(1)}, "18446744073709551616", "9223372036854775808.0000"},
		{types.Int32, []any{int32(7), int32(-3), int32(0)}, "4", "1.3333"},
		{types.MustCreateDecimalType(10, 2), []any{dec("0.10"), dec("0.20"), dec("-0.05")}, "0.25", "0.083333"},
		{types.Int32, []any{nil, nil}, "", ""},
	} {
		gf := expression.NewGetField(0, tc.typ, "c", true)
		for _, avg := range []bool{false, true} {
			var inner aggFunc = aggregation.NewSum(gf)
			want := tc.sum
			if avg {
				inner, want = aggregation.NewAvg(gf), tc.avg
			}
			a := newExactAgg(ctx, inner)
			b, err := a.NewBuffer(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range tc.vals {
				if err := b.Update(ctx, sql.Row{v}); err != nil {
					t.Fatal(err)
				}
			}
			got, err := b.Eval(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if want == "" {
				if got != nil {
					t.Errorf("%v over %v = %v, want NULL", a, tc.vals, got)
				}
				continue
			}
			if d, ok := got.(decimal.Decimal); !ok || !d.Equal(dec(want)) {
				t.Errorf("%v (avg %v) over %v = %v, want %s", tc.typ, avg, tc.vals, got, want)
			}
		}
	}
}
