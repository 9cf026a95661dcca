package mysqlexpr

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/expression/function/aggregation"
	"github.com/dolthub/go-mysql-server/sql/expression/function/aggregation/window"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/certusdb/certus/internal/sqllex"
	"github.com/certusdb/certus/sqlengine/internal/sqlvalue"
	"github.com/certusdb/certus/sqlengine/internal/treewalk"
)

// MySQL's window functions go-mysql-server does not have (it answered
// 1305, FUNCTION does not exist): CUME_DIST() and NTH_VALUE(expr, n).
// Each is an expression go-mysql-server's window operator runs like its
// own (sql.WindowAdaptableExpression, built on the one of its functions
// whose expression has the same shape) with a window function of ours
// computing the value. go-mysql-server's planner builds a call with an
// OVER clause as a window function only under the names it knows, so
// WindowCalls renames the calls after parsing to one of those:
// NTH_VALUE(e, n) to FIRST_VALUE(e, n), CUME_DIST() to
// PERCENT_RANK(cumeDistMark), and windowWraps builds ours from those
// calls (the column keeps the name the query gave it).

// cumeDistMark is the argument that makes a PERCENT_RANK call a CUME_DIST
// (PERCENT_RANK takes none).
const cumeDistMark = "cume_dist"

// WindowCalls renames, in st parsed from text, the calls of MySQL window
// functions go-mysql-server lacks (see above). It also gives FIRST_VALUE,
// LAST_VALUE and NTH_VALUE over a window without PARTITION BY and ORDER
// BY (`OVER ()`, or only a frame) the partition `PARTITION BY NULL`, the
// same rows: go-mysql-server's planner failed on such a window with a nil
// pointer (1105).
func WindowCalls(text string, st ast.Statement) {
	if !sqllex.ContainsFold(text, "_value") && !sqllex.ContainsFold(text, "cume_dist") {
		return
	}
	treewalk.AST(reflect.ValueOf(&st).Elem(), func(v reflect.Value) {
		f, ok := v.Interface().(*ast.FuncExpr)
		if !ok || f == nil || f.Over == nil || !f.Qualifier.IsEmpty() {
			return
		}
		switch f.Name.Lowered() {
		case "cume_dist":
			if len(f.Exprs) == 0 {
				f.Name = ast.NewColIdent("percent_rank")
				f.Exprs = ast.SelectExprs{&ast.AliasedExpr{Expr: ast.NewStrVal([]byte(cumeDistMark))}}
			}
			return
		case "nth_value":
			f.Name = ast.NewColIdent("first_value")
		case "first_value", "last_value":
		default:
			return
		}
		if w := f.Over; w.NameRef.IsEmpty() && len(w.PartitionBy) == 0 && len(w.OrderBy) == 0 {
			w.PartitionBy = ast.Exprs{&ast.NullVal{}}
		}
	})
}

// windowWraps build CUME_DIST and NTH_VALUE from the calls WindowCalls
// renamed, and leave PERCENT_RANK's and FIRST_VALUE's own calls to them.
var windowWraps = map[string]BuiltInWrap{
	"percent_rank": func(ctx *sql.Context, inner sql.Function, args []sql.Expression) (sql.Expression, error) {
		if len(args) == 1 {
			if lit, ok := args[0].(*expression.Literal); ok && lit.Value() == cumeDistMark {
				return &cumeDist{PercentRank: window.NewPercentRank(ctx).(*window.PercentRank)}, nil
			}
		}
		return inner.NewInstance(ctx, args)
	},
	"first_value": func(ctx *sql.Context, inner sql.Function, args []sql.Expression) (sql.Expression, error) {
		if len(args) == 2 {
			return newNthValue(ctx, args...)
		}
		return inner.NewInstance(ctx, args)
	},
}

// cumeDist is CUME_DIST(): the share of the partition's rows that come
// before the current row or are its peers in the window's order (1 for
// every row without an ORDER BY). Like MySQL, it ignores a frame.
type cumeDist struct{ *window.PercentRank }

var _ sql.WindowAdaptableExpression = (*cumeDist)(nil)

// FunctionName implements sql.FunctionExpression.
func (c *cumeDist) FunctionName() string { return "CUME_DIST" }

// Description implements sql.FunctionExpression.
func (c *cumeDist) Description() string {
	return "returns the cumulative distribution of the current row in its partition."
}

func (c *cumeDist) String() string {
	return strings.Replace(c.PercentRank.String(), "percent_rank()", "cume_dist()", 1)
}

// DebugString implements sql.DebugStringer.
func (c *cumeDist) DebugString(ctx *sql.Context) string {
	return strings.Replace(c.PercentRank.DebugString(ctx), "percent_rank()", "cume_dist()", 1)
}

// WithId implements sql.IdExpression.
func (c *cumeDist) WithId(id sql.ColumnId) sql.IdExpression {
	return &cumeDist{c.PercentRank.WithId(id).(*window.PercentRank)}
}

// WithChildren implements sql.Expression.
func (c *cumeDist) WithChildren(ctx *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	e, err := c.PercentRank.WithChildren(ctx, children...)
	if err != nil {
		return nil, err
	}
	return &cumeDist{e.(*window.PercentRank)}, nil
}

// WithWindow implements sql.WindowAdaptableExpression.
func (c *cumeDist) WithWindow(ctx *sql.Context, w *sql.WindowDefinition) sql.WindowAdaptableExpression {
	return &cumeDist{c.PercentRank.WithWindow(ctx, w).(*window.PercentRank)}
}

// NewWindowFunction implements sql.WindowAdaptableExpression.
func (c *cumeDist) NewWindowFunction(ctx *sql.Context) (sql.WindowFunction, error) {
	return &peerRows{orderBy: c.Window().OrderBy.ToExpressions(), value: func(_ *sql.Context, r *peerRows, peers sql.WindowInterval, _ sql.WindowBuffer) (any, error) {
		return float64(peers.End-r.start) / float64(r.end-r.start), nil
	}}, nil
}

// nthValue is NTH_VALUE(expr, n): expr at the frame's nth row, NULL when
// the frame has fewer rows (n is a positive integer constant; 0 stands
// for any other argument, which fails as MySQL's 1210). Without a frame it
// is MySQL's default: from the partition's first row to the current row's
// last peer (the whole partition without an ORDER BY).
type nthValue struct {
	*window.FirstValue
	n int64
}

var _ sql.WindowAdaptableExpression = (*nthValue)(nil)

func newNthValue(ctx *sql.Context, args ...sql.Expression) (sql.Expression, error) {
	e, n := args[0], args[1]
	lit, ok := n.(*expression.Literal)
	var k int64
	if ok {
		k, ok = sqlvalue.AsInt(lit.Value())
	}
	if !ok || k < 1 {
		k = 0 // refused when it runs (go-mysql-server's planner hides an error here)
	}
	return &nthValue{FirstValue: window.NewFirstValue(ctx, e).(*window.FirstValue), n: k}, nil
}

// FunctionName implements sql.FunctionExpression.
func (f *nthValue) FunctionName() string { return "NTH_VALUE" }

// Description implements sql.FunctionExpression.
func (f *nthValue) Description() string {
	return "returns value of argument from the nth row of the window frame."
}

func (f *nthValue) String() string {
	s := fmt.Sprintf("nth_value(%s, %d)", f.Child, f.n)
	if w := f.Window(); w != nil {
		s += " " + w.String()
	}
	return s
}

// DebugString implements sql.DebugStringer.
func (f *nthValue) DebugString(ctx *sql.Context) string { return f.String() }

// WithId implements sql.IdExpression.
func (f *nthValue) WithId(id sql.ColumnId) sql.IdExpression {
	return &nthValue{f.FirstValue.WithId(id).(*window.FirstValue), f.n}
}

// WithChildren implements sql.Expression.
func (f *nthValue) WithChildren(ctx *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	e, err := f.FirstValue.WithChildren(ctx, children...)
	if err != nil {
		return nil, err
	}
	return &nthValue{e.(*window.FirstValue), f.n}, nil
}

// WithWindow implements sql.WindowAdaptableExpression.
func (f *nthValue) WithWindow(ctx *sql.Context, w *sql.WindowDefinition) sql.WindowAdaptableExpression {
	return &nthValue{f.FirstValue.WithWindow(ctx, w).(*window.FirstValue), f.n}
}

// NewWindowFunction implements sql.WindowAdaptableExpression.
func (f *nthValue) NewWindowFunction(ctx *sql.Context) (sql.WindowFunction, error) {
	e, err := transform.Clone(ctx, f.Child)
	if err != nil {
		return nil, err
	}
	w := f.Window()
	r := &peerRows{orderBy: w.OrderBy.ToExpressions(), expr: e}
	if w.Frame != nil {
		if r.framer, err = w.Frame.NewFramer(w); err != nil {
			return nil, err
		}
	}
	n := int(f.n)
	r.value = func(ctx *sql.Context, r *peerRows, iv sql.WindowInterval, buf sql.WindowBuffer) (any, error) {
		if n < 1 { // (an error before the first row leaves go-mysql-server's iterator nil)
			return nil, mysql.NewSQLError(mysql.ERWrongArguments, "HY000", "Incorrect arguments to nth_value")
		}
		start := iv.Start
		if r.framer == nil {
			start = r.start // the default frame: from the partition's first row
		}
		if start+n-1 >= iv.End {
			return nil, nil
		}
		return r.expr.Eval(ctx, buf[start+n-1])
	}
	return r, nil
}

// Type implements sql.Expression: NTH_VALUE is NULL for the frame's
// first n-1 rows.
func (f *nthValue) Type(ctx *sql.Context) sql.Type { return f.Child.Type(ctx) }

// IsNullable implements sql.Expression.
func (f *nthValue) IsNullable(*sql.Context) bool { return true }

// peerRows is the window function of cumeDist and nthValue: each row's
// value from its interval (its peer group, or its frame when framer is
// set) and the partition's bounds.
type peerRows struct {
	orderBy    []sql.Expression
	framer     sql.WindowFramer
	expr       sql.Expression
	start, end int // the partition's rows
	value      func(ctx *sql.Context, r *peerRows, iv sql.WindowInterval, buf sql.WindowBuffer) (any, error)
}

// Dispose implements sql.Disposable.
func (r *peerRows) Dispose(ctx *sql.Context) {
	if r.expr != nil {
		expression.Dispose(ctx, r.expr)
	}
}

// DefaultFramer implements sql.WindowFunction.
func (r *peerRows) DefaultFramer() sql.WindowFramer {
	if r.framer != nil {
		return r.framer
	}
	return aggregation.NewPeerGroupFramer(r.orderBy)
}

// StartPartition implements sql.WindowFunction.
func (r *peerRows) StartPartition(ctx *sql.Context, iv sql.WindowInterval, _ sql.WindowBuffer) error {
	r.start, r.end = iv.Start, iv.End
	return nil
}

// NewSlidingFrameInterval implements sql.WindowFunction (go-mysql-server
// does not call it).
func (r *peerRows) NewSlidingFrameInterval(added, dropped sql.WindowInterval) {}

// Compute implements sql.WindowFunction.
func (r *peerRows) Compute(ctx *sql.Context, iv sql.WindowInterval, buf sql.WindowBuffer) (any, error) {
	if iv.End <= iv.Start || r.end <= r.start {
		return nil, nil
	}
	return r.value(ctx, r, iv, buf)
}
