package mysqlexpr

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/analyzer"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/expression/function/aggregation"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
	"github.com/shopspring/decimal"

	"github.com/certusdb/certus/sqlengine/internal/sqlvalue"
	"github.com/certusdb/certus/sqlengine/internal/treewalk"
)

// aggFunc is what go-mysql-server's SUM and AVG are.
type aggFunc interface {
	sql.Aggregation
	sql.FunctionExpression
}

// exactAgg is SUM or AVG of an exact numeric (integer or DECIMAL)
// argument, as MySQL computes them: exactly, in DECIMAL, typed
// DECIMAL(p+22, s) for SUM and DECIMAL(p+4, s+4) for AVG (the 4 of
// div_precision_increment) for an argument of precision p and scale s.
// go-mysql-server types both DOUBLE and sums integers in float64, so a
// sum of DECIMAL money came back as a float, and a prepared SUM of
// integers as a binary DOUBLE that database/sql cannot scan into an int64
// once it prints as 1e+06. SUM and AVG of approximate (FLOAT, DOUBLE) or
// other arguments stay DOUBLE, as in MySQL. Window forms are left as
// go-mysql-server has them.
type exactAgg struct {
	aggFunc
	avg bool
	typ sql.Type
}

var _ sql.Aggregation = (*exactAgg)(nil)

// ExactSum is a, a SUM or AVG, typed and summed as MySQL does for its
// exact argument (DECIMAL); nil for another aggregation or argument.
func ExactSum(a sql.Aggregation) sql.Aggregation {
	f, ok := a.(aggFunc)
	if !ok {
		return nil
	}
	if e := newExactAgg(nil, f); e != nil {
		return e
	}
	return nil
}

// newExactAgg wraps a SUM or AVG of an exact argument; nil for another.
func newExactAgg(ctx *sql.Context, a aggFunc) *exactAgg {
	_, avg := a.(*aggregation.Avg)
	if _, sum := a.(*aggregation.Sum); !sum && !avg || a.Window() != nil {
		return nil
	}
	typ := exactAggType(a.Children()[0].Type(ctx), avg)
	if typ == nil {
		return nil
	}
	return &exactAgg{aggFunc: a, avg: avg, typ: typ}
}

// exactAggType is the DECIMAL type MySQL gives SUM (or AVG) of argument
// type t; nil when t is not exact.
func exactAggType(t sql.Type, avg bool) sql.Type {
	var prec, scale int
	switch {
	case types.IsDecimal(t):
		d := t.(sql.DecimalType)
		prec, scale = int(d.Precision()), int(d.Scale())
	case sqlvalue.IsIntegerType(t):
		prec = map[querypb.Type]int{
			sqltypes.Int8: 4, sqltypes.Uint8: 3, sqltypes.Int16: 6, sqltypes.Uint16: 5,
			sqltypes.Int24: 9, sqltypes.Uint24: 8, sqltypes.Int32: 11, sqltypes.Uint32: 10,
			sqltypes.Int64: 20, sqltypes.Uint64: 20,
		}[t.Type()]
	default:
		return nil
	}
	if avg {
		prec, scale = prec+4, scale+4
	} else {
		prec += 22
	}
	return types.MustCreateDecimalType(uint8(min(prec, types.DecimalTypeMaxPrecision)), uint8(min(scale, types.DecimalTypeMaxScale)))
}

// Type implements sql.Expression.
func (a *exactAgg) Type(*sql.Context) sql.Type { return a.typ }

// DebugString implements sql.DebugStringer.
func (a *exactAgg) DebugString(ctx *sql.Context) string { return sql.DebugString(ctx, a.aggFunc) }

// WithChildren implements sql.Expression.
func (a *exactAgg) WithChildren(ctx *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	e, err := a.aggFunc.WithChildren(ctx, children...)
	if err != nil {
		return nil, err
	}
	inner := e.(aggFunc).WithId(a.Id()).(aggFunc)
	if n := newExactAgg(ctx, inner); n != nil {
		return n, nil
	}
	return inner, nil
}

// WithId implements sql.IdExpression.
func (a *exactAgg) WithId(id sql.ColumnId) sql.IdExpression {
	n := *a
	n.aggFunc = a.aggFunc.WithId(id).(aggFunc)
	return &n
}

// NewBuffer implements sql.Aggregation.
func (a *exactAgg) NewBuffer(ctx *sql.Context) (sql.AggregationBuffer, error) {
	// a buffer of its own of the argument's state (SUM(DISTINCT x)'s
	// values seen), as go-mysql-server's buffers have
	arg, err := transform.Clone(ctx, a.Children()[0])
	if err != nil {
		return nil, err
	}
	b := &exactBuffer{arg: arg, avg: a.avg}
	if a.avg {
		b.scale = int32(a.typ.(sql.DecimalType).Scale())
	}
	return b, nil
}

// exactBuffer sums one group's values exactly: integers in an int64
// while they fit (a DECIMAL addition costs ten times as much), everything
// else, and integers past int64, in DECIMAL.
type exactBuffer struct {
	arg   sql.Expression
	isum  int64           // the integers added
	dsum  decimal.Decimal // the other values, and integer sums moved out of isum
	n     int64
	avg   bool
	scale int32 // AVG's result scale
}

// Update implements sql.AggregationBuffer.
func (b *exactBuffer) Update(ctx *sql.Context, row sql.Row) error {
	v, err := b.arg.Eval(ctx, row)
	if err != nil || v == nil {
		return err
	}
	b.n++
	if i, ok := sqlvalue.AsInt(v); ok {
		if s := b.isum + i; (s > b.isum) == (i > 0) || i == 0 {
			b.isum = s
			return nil
		}
		b.dsum = b.dsum.Add(decimal.NewFromInt(b.isum)) // would overflow
		b.isum = i
		return nil
	}
	d, _, err := types.InternalDecimalType.Convert(ctx, v)
	if err != nil {
		return err
	}
	b.dsum = b.dsum.Add(d.(decimal.Decimal))
	return nil
}

// Eval implements sql.AggregationBuffer.
func (b *exactBuffer) Eval(*sql.Context) (any, error) {
	if b.n == 0 {
		return nil, nil
	}
	sum := b.dsum.Add(decimal.NewFromInt(b.isum))
	if b.avg {
		return sum.DivRound(decimal.NewFromInt(b.n), b.scale), nil
	}
	return sum, nil
}

// Dispose implements sql.AggregationBuffer.
func (b *exactBuffer) Dispose(ctx *sql.Context) { expression.Dispose(ctx, b.arg) }

// doubleAgg is STDDEV, STD, STDDEV_POP, STDDEV_SAMP, VARIANCE, VAR_POP or
// VAR_SAMP typed DOUBLE, as MySQL types them. go-mysql-server computes
// them in float64 but types them as their argument, so STDDEV of a
// DECIMAL(10,2) printed 15.60 for 15.5988..., and of an INT 1 for 1.414...
type doubleAgg struct {
	aggFunc
}

// newDoubleAgg wraps a standard deviation or variance; nil for another
// aggregate, a window form, or one already typed DOUBLE.
func newDoubleAgg(ctx *sql.Context, a aggFunc) *doubleAgg {
	switch a.(type) {
	case *aggregation.StdDevPop, *aggregation.StdDevSamp, *aggregation.VarPop, *aggregation.VarSamp:
	default:
		return nil
	}
	if a.Window() != nil || a.Type(ctx) == types.Float64 {
		return nil
	}
	return &doubleAgg{aggFunc: a}
}

// Type implements sql.Expression.
func (a *doubleAgg) Type(*sql.Context) sql.Type { return types.Float64 }

// DebugString implements sql.DebugStringer.
func (a *doubleAgg) DebugString(ctx *sql.Context) string { return sql.DebugString(ctx, a.aggFunc) }

// WithChildren implements sql.Expression.
func (a *doubleAgg) WithChildren(ctx *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	e, err := a.aggFunc.WithChildren(ctx, children...)
	if err != nil {
		return nil, err
	}
	inner := e.(aggFunc).WithId(a.Id()).(aggFunc)
	if n := newDoubleAgg(ctx, inner); n != nil {
		return n, nil
	}
	return inner, nil
}

// WithId implements sql.IdExpression.
func (a *doubleAgg) WithId(id sql.ColumnId) sql.IdExpression {
	return &doubleAgg{aggFunc: a.aggFunc.WithId(id).(aggFunc)}
}

// windowSum is SUM(x) OVER (...) giving NULL for a frame without a
// non-NULL x, as MySQL's does; go-mysql-server's window sum counted NULL
// as 0, so a partition whose first rows were NULL summed to 0.
type windowSum struct {
	aggFunc
}

// newWindowSum wraps a window SUM; nil for another aggregate.
func newWindowSum(a aggFunc) *windowSum {
	if _, sum := a.(*aggregation.Sum); !sum || a.Window() == nil {
		return nil
	}
	return &windowSum{aggFunc: a}
}

// WithChildren implements sql.Expression.
func (a *windowSum) WithChildren(ctx *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	e, err := a.aggFunc.WithChildren(ctx, children...)
	if err != nil {
		return nil, err
	}
	if n := newWindowSum(e.(aggFunc)); n != nil {
		return n, nil
	}
	return e, nil
}

// WithId implements sql.IdExpression.
func (a *windowSum) WithId(id sql.ColumnId) sql.IdExpression {
	return &windowSum{aggFunc: a.aggFunc.WithId(id).(aggFunc)}
}

// WithWindow implements sql.WindowAdaptableExpression.
func (a *windowSum) WithWindow(ctx *sql.Context, w *sql.WindowDefinition) sql.WindowAdaptableExpression {
	return &windowSum{aggFunc: a.aggFunc.WithWindow(ctx, w).(aggFunc)}
}

// NewWindowFunction implements sql.WindowAdaptableExpression.
func (a *windowSum) NewWindowFunction(ctx *sql.Context) (sql.WindowFunction, error) {
	fn, err := a.aggFunc.NewWindowFunction(ctx)
	if err != nil {
		return nil, err
	}
	arg, err := transform.Clone(ctx, a.Children()[0])
	if err != nil {
		return nil, err
	}
	return &nullAwareSum{WindowFunction: fn, arg: arg}, nil
}

// nullAwareSum is a window sum that knows, for each frame, whether it
// holds a non-NULL value.
type nullAwareSum struct {
	sql.WindowFunction
	arg   sql.Expression
	start int
	// counts[i] is the number of non-NULL values in the partition's rows
	// before its i-th
	counts []int
}

// StartPartition implements sql.WindowFunction.
func (s *nullAwareSum) StartPartition(ctx *sql.Context, interval sql.WindowInterval, buf sql.WindowBuffer) error {
	s.start = interval.Start
	s.counts = append(s.counts[:0], 0)
	n := 0
	for i := interval.Start; i < interval.End; i++ {
		v, err := s.arg.Eval(ctx, buf[i])
		if err != nil {
			return err
		}
		if v != nil {
			n++
		}
		s.counts = append(s.counts, n)
	}
	return s.WindowFunction.StartPartition(ctx, interval, buf)
}

// Compute implements sql.WindowFunction.
func (s *nullAwareSum) Compute(ctx *sql.Context, interval sql.WindowInterval, buf sql.WindowBuffer) (any, error) {
	from := min(max(interval.Start-s.start, 0), len(s.counts)-1)
	to := min(max(interval.End-s.start, 0), len(s.counts)-1)
	if to <= from || s.counts[to] == s.counts[from] {
		return nil, nil
	}
	return s.WindowFunction.Compute(ctx, interval, buf)
}

// ExactSums is an analyzer rule: SUM and AVG of exact arguments become
// exactAgg, in n and its subqueries, and the references to their results
// (typed DOUBLE by the planner) take the DECIMAL type.
func ExactSums(ctx *sql.Context, _ *analyzer.Analyzer, n sql.Node, _ *plan.Scope, _ analyzer.RuleSelector, _ *sql.QueryFlags) (sql.Node, transform.TreeIdentity, error) {
	retyped := map[sql.ColumnId]sql.Type{}
	n, same, err := replaceExactAggs(ctx, n, retyped)
	if err != nil {
		return n, same, err
	}
	seedRetyped(ctx, n, retyped)
	if len(retyped) == 0 {
		return n, same, err
	}
	n, _, err = retypeAggRefs(ctx, n, retyped)
	for i := 0; err == nil && i < 16 && passRetypedOn(ctx, n, retyped); i++ {
		n, _, err = retypeAggRefs(ctx, n, retyped)
	}
	return n, transform.NewTree, err
}

// passRetypedOn adds to retyped the columns that pass a retyped result on:
// an alias of a reference to one, and a derived table's column whose query
// gives one (the outer query refers to it by its own id, and kept the
// planner's DOUBLE: SELECT a + 0 FROM (SELECT SUM(price) a ...) x answered
// 4.9 for 4.90). It reports whether it added any.
func passRetypedOn(ctx *sql.Context, n sql.Node, retyped map[sql.ColumnId]sql.Type) bool {
	added := false
	add := func(id sql.ColumnId, t sql.Type) {
		if _, ok := retyped[id]; !ok && id != 0 {
			retyped[id] = t
			added = true
		}
	}
	transform.InspectExpressions(ctx, n, func(ctx *sql.Context, e sql.Expression) bool {
		if a, ok := e.(*expression.Alias); ok {
			if t := retypedOf(a.Child, retyped); t != nil {
				add(a.Id(), t)
			}
		}
		return true
	})
	transform.InspectWithOpaque(ctx, n, func(ctx *sql.Context, n sql.Node) bool {
		sa, ok := n.(*plan.SubqueryAlias)
		if !ok {
			return true
		}
		types := outputTypes(sa.Child, retyped)
		var outer []sql.ColumnId
		sa.Columns().ForEach(func(id sql.ColumnId) { outer = append(outer, id) })
		if len(types) == len(outer) {
			for i, t := range types {
				if t != nil {
					add(outer[i], t)
				}
			}
		}
		return true
	})
	return added
}

// seedRetyped adds to retyped the exact aggregates already in n: a derived
// table's query is analyzed before the query around it.
func seedRetyped(ctx *sql.Context, n sql.Node, retyped map[sql.ColumnId]sql.Type) {
	transform.InspectExpressions(ctx, n, func(ctx *sql.Context, e sql.Expression) bool {
		switch a := e.(type) {
		case *exactAgg:
			if a.Id() != 0 {
				retyped[a.Id()] = a.typ
			}
		case *doubleAgg:
			if a.Id() != 0 {
				retyped[a.Id()] = types.Float64
			}
		}
		return true
	})
}

// retypedOf is the type retyped gives e, a reference to a retyped column
// or an exact aggregate (under an alias), or nil.
func retypedOf(e sql.Expression, retyped map[sql.ColumnId]sql.Type) sql.Type {
	for {
		a, ok := e.(*expression.Alias)
		if !ok {
			break
		}
		e = a.Child
	}
	switch e := e.(type) {
	case *expression.GetField:
		return retyped[e.Id()]
	case *exactAgg:
		return e.typ
	case *doubleAgg:
		return types.Float64
	}
	return nil
}

// outputTypes are the retyped types of n's output columns, in order (nil
// for the others), or nil when n does not say.
func outputTypes(n sql.Node, retyped map[sql.ColumnId]sql.Type) []sql.Type {
	switch n := n.(type) {
	case *plan.Project:
		types := make([]sql.Type, len(n.Projections))
		for i, p := range n.Projections {
			types[i] = retypedOf(p, retyped)
		}
		return types
	case *plan.SetOp:
		return outputTypes(n.Left(), retyped)
	case *plan.SubqueryAlias:
		var types []sql.Type
		n.Columns().ForEach(func(id sql.ColumnId) { types = append(types, retyped[id]) })
		return types
	}
	if c := n.Children(); len(c) == 1 { // Sort, Limit, Filter, Distinct, ...
		return outputTypes(c[0], retyped)
	}
	return nil
}

func replaceExactAggs(ctx *sql.Context, n sql.Node, retyped map[sql.ColumnId]sql.Type) (sql.Node, transform.TreeIdentity, error) {
	return treewalk.Exprs(ctx, n, func(ctx *sql.Context, e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
		switch e := e.(type) {
		case aggFunc:
			if a := newExactAgg(ctx, e); a != nil {
				if a.Id() != 0 {
					retyped[a.Id()] = a.typ
				}
				return a, transform.NewTree, nil
			}
			if a := newDoubleAgg(ctx, e); a != nil {
				if a.Id() != 0 {
					retyped[a.Id()] = types.Float64
				}
				return a, transform.NewTree, nil
			}
			if a := newWindowSum(e); a != nil {
				return a, transform.NewTree, nil
			}
		}
		return e, transform.SameTree, nil
	})
}

// retypeAggRefs gives the column references to the aggregates in retyped
// their new types.
func retypeAggRefs(ctx *sql.Context, n sql.Node, retyped map[sql.ColumnId]sql.Type) (sql.Node, transform.TreeIdentity, error) {
	return treewalk.Exprs(ctx, n, func(ctx *sql.Context, e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
		if gf, ok := e.(*expression.GetField); ok {
			if t, ok := retyped[gf.Id()]; ok && gf.Type(ctx) != t {
				typed := expression.NewGetFieldWithTable(gf.Index(), int(gf.TableId()), t, gf.Database(), gf.Table(), gf.Name(), gf.IsNullable(ctx))
				return typed.WithId(gf.Id()).(*expression.GetField), transform.NewTree, nil
			}
		}
		return e, transform.SameTree, nil
	})
}
