package sqlengine

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/analyzer"
	"github.com/dolthub/go-mysql-server/sql/analyzer/analyzererrors"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// groupByChecksColumnsOnly replaces, in a's batches, go-mysql-server's
// ONLY_FULL_GROUP_BY check (rule validateGroupBy) with one that, like
// MySQL's, looks only at column references. go-mysql-server refuses
// `SELECT COUNT(*), NOW() FROM t` (or CURRENT_USER(), DATABASE(),
// @@version, @v) with 1140 because the function is a leaf that is neither
// a literal nor grouped; MySQL accepts it, as such a value is the same
// for every row of a group.
func groupByChecksColumnsOnly(a *analyzer.Analyzer) {
	id := ruleID(analyzer.OnceBeforeDefault, "validateGroupBy")
	for _, b := range a.Batches {
		for i, r := range b.Rules {
			if r.Id == id {
				rules := append([]analyzer.Rule(nil), b.Rules...) // the batch may share the package's slice
				rules[i].Apply = columnsOnlyGroupBy(r.Apply)
				b.Rules = rules
				return
			}
		}
	}
	panic("sqlengine: the analyzer has no validateGroupBy rule")
}

// columnsOnlyGroupBy wraps go-mysql-server's group-by check: a statement it
// refuses is checked again with its column-free leaves (functions without
// arguments, system and user variables) made literals, and passes if
// that passes. Statements it accepts cost nothing more.
func columnsOnlyGroupBy(check analyzer.RuleFunc) analyzer.RuleFunc {
	return func(ctx *sql.Context, a *analyzer.Analyzer, n sql.Node, scope *plan.Scope, sel analyzer.RuleSelector,
		qFlags *sql.QueryFlags) (sql.Node, transform.TreeIdentity, error) {
		out, same, err := check(ctx, a, n, scope, sel, qFlags)
		if err == nil || !(sql.ErrNonAggregatedColumnWithoutGroupBy.Is(err) || analyzererrors.ErrValidationGroupBy.Is(err)) {
			return out, same, err
		}
		plain, changed, terr := transform.NodeExprsWithOpaque(ctx, n, func(ctx *sql.Context, e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
			if columnFree(e) {
				return expression.NewLiteral(nil, types.Null), transform.NewTree, nil
			}
			return e, transform.SameTree, nil
		})
		if terr != nil || changed == transform.SameTree {
			return out, same, err
		}
		if _, _, err2 := check(ctx, a, plain, scope, sel, qFlags); err2 != nil {
			return out, same, err2 // names the column that is really ungrouped
		}
		return n, transform.SameTree, nil
	}
}

// columnFree reports whether e is a leaf whose value cannot depend on the
// row: a function called without arguments, or a variable.
func columnFree(e sql.Expression) bool {
	if len(e.Children()) != 0 {
		return false
	}
	switch e.(type) {
	case *expression.SystemVar, *expression.UserVar:
		return true
	case sql.FunctionExpression:
		return true
	}
	return false
}
