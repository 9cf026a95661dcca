// Package treewalk walks go-mysql-server's two trees: the parsed statement
// (vitess's AST), which the text-level corrections rewrite before
// planning, and a plan's expressions, subqueries included, which the
// analyzer rules and the exec builder rewrite.
package treewalk

import (
	"reflect"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
)

// AST calls visit on every non-nil pointer and interface and every
// struct under v (fields, slices, pointers, interfaces), then walks what
// it holds then, so that visit may replace an interface's value first: in
// `d + INTERVAL 1 DAY + INTERVAL 1 HOUR` both additions become calls.
func AST(v reflect.Value, visit func(reflect.Value)) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return
		}
		visit(v)
		AST(v.Elem(), visit)
	case reflect.Struct:
		visit(v)
		t := v.Type()
		for i := 0; i < v.NumField(); i++ {
			if t.Field(i).IsExported() {
				AST(v.Field(i), visit)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			AST(v.Index(i), visit)
		}
	}
}

// Exprs applies f to every expression of n and, through the
// plan.Subquery expressions, of the queries they hold: what Certus's
// analyzer rules rewrite must be rewritten inside subqueries too, which
// transform.NodeExprsWithOpaque does not enter.
func Exprs(ctx *sql.Context, n sql.Node, f transform.ExprFunc) (sql.Node, transform.TreeIdentity, error) {
	return transform.NodeExprsWithOpaque(ctx, n, func(ctx *sql.Context, e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
		if sq, ok := e.(*plan.Subquery); ok {
			q, same, err := Exprs(ctx, sq.Query, f)
			if err != nil || same {
				return e, transform.SameTree, err
			}
			return sq.WithQuery(q), transform.NewTree, nil
		}
		return f(ctx, e)
	})
}
