package sqlengine

import (
	"reflect"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/certusdb/certus/internal/sqllex"
	"github.com/certusdb/certus/sqlengine/internal/sqlvalue"
)

// MySQL's bounds on what a statement may recurse through, which
// go-mysql-server does not keep: a procedure calling itself more deeply
// than max_sp_recursion_depth (1456), a prepared statement executed again
// from a routine it runs (1444), a recursive CTE past
// cte_max_recursion_depth (3636). The first two recursed until Go's
// stack limit ended the process; stmtGuard's stack check is the bound for
// what has no variable (views, triggers).

// recursion is a session's state for those bounds.
type recursion struct {
	// calls are the routines being run, outermost first (db.name)
	calls []string
	// entering is the CALL being built by go-mysql-server once counted
	// here (the exec builder asks this builder first about it again)
	entering *plan.Call
	// executing are the prepared statements running, by name
	executing map[string]bool
	// cycles counts the recursions of each running recursive CTE, by its
	// recursive part
	cycles map[sql.Node]*cteCycles
}

type cteCycles struct{ n, limit int64 }

// buildCall builds (which runs) CALL c unless it would recurse past
// max_sp_recursion_depth. handled is false when go-mysql-server is to
// build c itself.
func (b *priorityBuilder) buildCall(ctx *sql.Context, c *plan.Call, row sql.Row) (it sql.RowIter, handled bool, err error) {
	s, ok := ctx.Session.(*Session)
	if !ok {
		return nil, false, nil
	}
	r := &s.recursion
	if r.entering == c {
		r.entering = nil
		return nil, false, nil
	}
	name := c.Name
	if db := c.Database(); db != nil {
		name = db.Name() + "." + name
	}
	name = strings.ToLower(name)
	depth := int64(0)
	for _, running := range r.calls {
		if running == name {
			depth++
		}
	}
	if limit := sessionInt(s, "max_sp_recursion_depth"); depth > limit {
		return nil, true, mysql.NewSQLError(erSPRecursionLimit, mysql.SSUnknownSQLState,
			"Recursive limit %d (as set by the max_sp_recursion_depth variable) was exceeded for routine %s", limit, c.Name)
	}
	r.calls = append(r.calls, name)
	defer func() { r.calls = r.calls[:len(r.calls)-1] }()
	r.entering = c
	it, err = b.base.Build(ctx, c, row)
	return it, true, err
}

// sessionInt is an integer session variable (0 if unset).
func sessionInt(s *Session, name string) int64 {
	v, err := s.GetSessionVariable(nil, name)
	if err != nil {
		return 0
	}
	n, _ := sqlvalue.AsInt(v)
	return n
}

// errPSRecursion is MySQL's ER_PS_NO_RECURSION.
var errPSRecursion = mysql.NewSQLError(erPSNoRecursion, mysql.SSUnknownSQLState,
	"The prepared statement contains a stored routine call that refers to that same statement. It's not allowed to execute a prepared statement in such a recursive manner")

// beginExecute notes that the prepared statement name runs, or refuses it
// when it runs already (from a routine it called); call done when it has
// run.
func (r *recursion) beginExecute(name string) (done func(), err error) {
	name = strings.ToLower(name)
	if r.executing[name] {
		return nil, errPSRecursion
	}
	if r.executing == nil {
		r.executing = map[string]bool{}
	}
	r.executing[name] = true
	return func() { delete(r.executing, name) }, nil
}

// executeName is the prepared statement a text EXECUTE names, or "".
func executeName(query string) string {
	lx := sqllex.NewScanner(query)
	if lx.Word() != "EXECUTE" {
		return ""
	}
	st, err := ast.Parse(query)
	if ex, ok := st.(*ast.Execute); ok && err == nil {
		return ex.Name
	}
	return ""
}

// guardedRunner is the statement runner of routines (go-mysql-server's
// engine) with the prepared statements they execute noted, so that one
// executing itself again is refused.
type guardedRunner struct{ sql.StatementRunner }

// QueryWithBindings implements sql.StatementRunner.
func (g guardedRunner) QueryWithBindings(ctx *sql.Context, query string, parsed ast.Statement, bindings map[string]ast.Expr, qFlags *sql.QueryFlags) (sql.Schema, sql.RowIter, *sql.QueryFlags, error) {
	if ex, ok := parsed.(*ast.Execute); ok {
		if s, ok := ctx.Session.(*Session); ok {
			done, err := s.recursion.beginExecute(ex.Name)
			if err != nil {
				return nil, nil, nil, err
			}
			// a routine's statement is built, and a CALL run, before
			// this returns
			defer done()
		}
	}
	return g.StatementRunner.QueryWithBindings(ctx, query, parsed, bindings, qFlags)
}

// countCycles has the recursive part of CTE n counted each time it is
// built (once per recursion), up to the session's
// cte_max_recursion_depth.
func countCycles(ctx *sql.Context, n *plan.RecursiveCte) {
	s, ok := ctx.Session.(*Session)
	if !ok {
		return
	}
	rec := n.Right()
	if reflect.TypeOf(rec).Kind() != reflect.Pointer {
		return // not a node that can be told apart (nor a map key)
	}
	r := &s.recursion
	if r.cycles == nil {
		r.cycles = map[sql.Node]*cteCycles{}
	}
	r.cycles[rec] = &cteCycles{limit: sessionInt(s, "cte_max_recursion_depth")}
}

// cycle counts one recursion if n is the recursive part of a running CTE
// and returns MySQL's 3636 past its limit.
func cycle(ctx *sql.Context, n sql.Node) error {
	s, ok := ctx.Session.(*Session)
	if !ok || len(s.recursion.cycles) == 0 || reflect.TypeOf(n).Kind() != reflect.Pointer {
		return nil
	}
	c := s.recursion.cycles[n]
	if c == nil {
		return nil
	}
	c.n++
	if c.n > c.limit {
		return mysql.NewSQLError(erCTEMaxRecursion, mysql.SSUnknownSQLState,
			"Recursive query aborted after %d iterations. Try increasing @@cte_max_recursion_depth to a larger value.", c.n)
	}
	return nil
}

// endStatement forgets what the statement that ended left (the counts of
// its recursive CTEs).
func (r *recursion) endStatement() {
	if len(r.cycles) > 0 {
		r.cycles = nil
	}
	r.entering = nil
}
