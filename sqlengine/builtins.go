package sqlengine

import "github.com/dolthub/go-mysql-server/sql"

// builtInWrap builds a call of a wrapped built-in function from the
// original function (inner) and the call's arguments.
type builtInWrap func(ctx *sql.Context, inner sql.Function, args []sql.Expression) (sql.Expression, error)

// wrapBuiltIns replaces each function of builtIns (go-mysql-server's list,
// read when an engine's catalog is built) that wraps names with one whose
// calls that wrap builds.
func wrapBuiltIns(builtIns []sql.Function, wraps map[string]builtInWrap) {
	for i, f := range builtIns {
		wrap, ok := wraps[f.FunctionName()]
		if !ok {
			continue
		}
		inner := f
		builtIns[i] = sql.FunctionN{Name: f.FunctionName(), Fn: func(ctx *sql.Context, args ...sql.Expression) (sql.Expression, error) {
			return wrap(ctx, inner, args)
		}}
	}
}
