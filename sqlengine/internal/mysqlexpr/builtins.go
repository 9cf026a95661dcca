// Package mysqlexpr makes go-mysql-server's functions and expressions
// answer as MySQL's do, without patching go-mysql-server: time values read
// as text and their fractional seconds, TIME parts, ROUND and TRUNCATE
// places, JSON paths, integer overflow, exact SUM and AVG, GROUP_CONCAT's
// rows, dates compared with integers or past their month's end, INTERVAL
// arithmetic, string results bounded by max_allowed_packet, and the window
// functions it lacks (CUME_DIST, NTH_VALUE). What is still different is
// listed in docs/COMPAT.md.
//
// Importing it wraps go-mysql-server's list of built-in functions (once,
// in init, before an engine reads the list). The rest are hooks package
// sqlengine installs where go-mysql-server lets it: the parsed statement
// (IntervalCalls, FractionalSeconds, WindowCalls), analyzer rules (FixGroupConcat,
// ExactSums, TimeAsTextRule), the exec builder's expressions
// (NumericDates, ExprRewrites), index range filters (ComparesIntLiteral,
// ComparesPastMonthEnd) and the result rows sent to the client
// (TimeSpool, TrimTimeFractions).
package mysqlexpr

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression/function"
	"github.com/dolthub/go-mysql-server/sql/transform"
)

// The built-in functions are wrapped in this order: a wrap of a name a
// wrap before it took wraps that one, and the functions timeFuncs adds are
// wrapped by the wraps after it.
func init() {
	WrapBuiltIns(function.BuiltIns, fspWraps())
	wrapJSONExtract()
	WrapBuiltIns(function.BuiltIns, placesWraps)
	wrapBoundedStrings()
	wrapNumbersAsText()
	function.BuiltIns = append(function.BuiltIns, timeFuncs...)
	WrapBuiltIns(function.BuiltIns, windowWraps)
	wrapTimeParts()
	wrapTextFuncs()
}

// ExprRewrites are applied to the expressions of every node the exec
// builder builds, after NumericDates: MySQL's JSON paths (jsonpath.go),
// TIME values read as strings (timetext.go), integer overflow
// (intoverflow.go) and casts of impossible dates (datecast.go).
var ExprRewrites = []func(*sql.Context, sql.Expression) (sql.Expression, transform.TreeIdentity, error){
	mysqlJSONPaths, timeAsText, checkIntArith, checkDateCasts,
}

// BuiltInWrap builds a call of a wrapped built-in function from the
// original function (inner) and the call's arguments.
type BuiltInWrap func(ctx *sql.Context, inner sql.Function, args []sql.Expression) (sql.Expression, error)

// WrapBuiltIns replaces each function of builtIns (go-mysql-server's list,
// read when an engine's catalog is built) that wraps names with one whose
// calls that wrap builds.
func WrapBuiltIns(builtIns []sql.Function, wraps map[string]BuiltInWrap) {
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
