package mysqlexpr

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/analyzer"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/expression/function/aggregation"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/certusdb/certus/sqlengine/internal/treewalk"
)

// groupConcat is GROUP_CONCAT with MySQL's row handling. go-mysql-server's
// aggregation concatenates only the first of several arguments
// (GROUP_CONCAT(a, b) returned a's values) and drops rows whose value is
// the empty string; MySQL concatenates every argument of a row, skips a
// row only when one of them is NULL, keeps empty strings, and warns (1260)
// when group_concat_max_len cuts the result. The planner's aggregation
// stays embedded for everything but the buffer: its type, name, children
// and window form.
type groupConcat struct {
	*aggregation.GroupConcat
	args      []sql.Expression
	sf        sql.SortFields
	distinct  bool
	separator string
	maxLen    int
}

var _ sql.Aggregation = (*groupConcat)(nil)

// gcFields reads the settings go-mysql-server keeps unexported in a
// GROUP_CONCAT; ok is false if its layout is not the one this was
// written against (the original aggregation is then left in place).
func gcFields(g *aggregation.GroupConcat) (distinct bool, separator string, maxLen int, orders []sql.SortOrder, ok bool) {
	v := reflect.ValueOf(g).Elem()
	d, s, m, sf := v.FieldByName("distinct"), v.FieldByName("separator"), v.FieldByName("maxLen"), v.FieldByName("sf")
	if d.Kind() != reflect.String || s.Kind() != reflect.String || m.Kind() != reflect.Int || sf.Kind() != reflect.Slice {
		return false, "", 0, nil, false
	}
	for i := 0; i < sf.Len(); i++ {
		o := sf.Index(i).FieldByName("Order")
		if o.Kind() != reflect.Uint8 {
			return false, "", 0, nil, false
		}
		orders = append(orders, sql.SortOrder(o.Uint()))
	}
	return d.String() != "", s.String(), int(m.Int()), orders, true
}

// newGroupConcat wraps g; nil if its settings cannot be read.
func newGroupConcat(g *aggregation.GroupConcat) *groupConcat {
	distinct, sep, maxLen, orders, ok := gcFields(g)
	if !ok {
		return nil
	}
	children := g.Children() // the ORDER BY expressions, then the arguments
	sf := make(sql.SortFields, len(orders))
	for i, o := range orders {
		sf[i] = sql.SortField{Column: children[i], Order: o}
	}
	return &groupConcat{GroupConcat: g, args: children[len(orders):], sf: sf,
		distinct: distinct, separator: sep, maxLen: maxLen}
}

// WithChildren implements sql.Expression.
func (g *groupConcat) WithChildren(ctx *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	e, err := g.GroupConcat.WithChildren(ctx, children...)
	if err != nil {
		return nil, err
	}
	inner := e.(*aggregation.GroupConcat).WithId(g.Id()).(*aggregation.GroupConcat)
	if n := newGroupConcat(inner); n != nil {
		return n, nil
	}
	return inner, nil
}

// WithId implements sql.IdExpression.
func (g *groupConcat) WithId(id sql.ColumnId) sql.IdExpression {
	n := *g
	n.GroupConcat = g.GroupConcat.WithId(id).(*aggregation.GroupConcat)
	return &n
}

// NewBuffer implements sql.Aggregation.
func (g *groupConcat) NewBuffer(*sql.Context) (sql.AggregationBuffer, error) {
	b := &gcBuffer{g: g}
	if g.distinct {
		b.seen = map[string]bool{}
	}
	return b, nil
}

// gcBuffer collects one group's rows: each the row the ORDER BY reads,
// followed by its concatenated arguments.
type gcBuffer struct {
	g    *groupConcat
	rows []sql.Row
	seen map[string]bool // DISTINCT: the argument tuples met
}

// Update implements sql.AggregationBuffer.
func (b *gcBuffer) Update(ctx *sql.Context, row sql.Row) error {
	var sb, key strings.Builder
	for _, a := range b.g.args {
		v, err := a.Eval(ctx, row)
		if err != nil {
			return err
		}
		if v == nil {
			return nil // a NULL argument leaves the row out
		}
		s, _, err := types.ConvertToCollatedString(ctx, v, a.Type(ctx))
		if err != nil {
			return err
		}
		sb.WriteString(s)
		if b.seen != nil {
			fmt.Fprintf(&key, "%d:%s", len(s), s)
		}
	}
	if b.seen != nil {
		if b.seen[key.String()] {
			return nil
		}
		b.seen[key.String()] = true
	}
	b.rows = append(b.rows, append(row.Copy(), sb.String()))
	return nil
}

// Eval implements sql.AggregationBuffer.
func (b *gcBuffer) Eval(ctx *sql.Context) (any, error) {
	if len(b.rows) == 0 {
		return nil, nil
	}
	if len(b.g.sf) > 0 {
		s := &expression.Sorter{SortFields: b.g.sf, Rows: b.rows, Ctx: ctx}
		sort.Stable(s)
		if s.LastError != nil {
			return nil, s.LastError
		}
	}
	var sb strings.Builder
	for i, r := range b.rows {
		if i > 0 {
			sb.WriteString(b.g.separator)
		}
		sb.WriteString(r[len(r)-1].(string))
		if sb.Len() > b.g.maxLen {
			ctx.Warn(1260, "Row %d was cut by GROUP_CONCAT()", i+1)
			return truncateUTF8(sb.String(), b.g.maxLen), nil
		}
	}
	return sb.String(), nil
}

// Dispose implements sql.AggregationBuffer.
func (b *gcBuffer) Dispose(*sql.Context) {}

// truncateUTF8 cuts s to at most n bytes without splitting a character.
func truncateUTF8(s string, n int) string {
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// FixGroupConcat is an analyzer rule that replaces go-mysql-server's
// GROUP_CONCAT aggregations with groupConcat, in n and its subqueries.
func FixGroupConcat(ctx *sql.Context, _ *analyzer.Analyzer, n sql.Node, _ *plan.Scope, _ analyzer.RuleSelector, _ *sql.QueryFlags) (sql.Node, transform.TreeIdentity, error) {
	return replaceGroupConcat(ctx, n)
}

func replaceGroupConcat(ctx *sql.Context, n sql.Node) (sql.Node, transform.TreeIdentity, error) {
	return treewalk.Exprs(ctx, n, func(ctx *sql.Context, e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
		if gc, ok := e.(*aggregation.GroupConcat); ok {
			if g := newGroupConcat(gc); g != nil {
				return g, transform.NewTree, nil
			}
		}
		return e, transform.SameTree, nil
	})
}
