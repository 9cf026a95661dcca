package sqlengine

import (
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/expression/function"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/certusdb/certus/internal/sqllex"
)

// MySQL assigns user variables inside expressions with :=, as in the
// ranking idiom of countless applications:
//
//	SELECT @rank := @rank + 1 AS rank, name FROM t, (SELECT @rank := 0) r
//
// or the renumbering `UPDATE t SET pos = @n := @n + 1 ORDER BY ...`.
// go-mysql-server's parser knows := only in SET, so such statements were
// 1064. A text statement's assignments `@name := expr` outside SET are
// rewritten into calls of setUserVarFunc, which sets the variable and
// gives its value, and its reads of those variables into calls of
// getUserVarFunc; a select item without an alias is named as MySQL names
// it (`@a := 1`). Prepared statements are parsed before Certus sees them,
// so there they stay 1064.

// setUserVarFunc and getUserVarFunc are the functions the rewrite calls.
const (
	setUserVarFunc = "certus_set_user_var"
	getUserVarFunc = "certus_get_user_var"
)

// assignEnds are the words that end the expression assigned (at its own
// depth): the clauses after a select item, and CASE's parts.
var assignEnds = map[string]bool{
	"AS": true, "FROM": true, "WHERE": true, "GROUP": true, "ORDER": true, "HAVING": true, "LIMIT": true,
	"INTO": true, "UNION": true, "EXCEPT": true, "INTERSECT": true, "WINDOW": true, "FOR": true, "LOCK": true,
	"WHEN": true, "THEN": true, "ELSE": true, "END": true, "ON": true, "USING": true,
}

// operatorWords are the words that may follow an operand inside an
// expression and expect another; valueWords may follow an operand and end
// one (IS NULL, INTERVAL 1 DAY). Any other word after an operand is the
// item's alias.
var (
	operatorWords = map[string]bool{
		"AND": true, "OR": true, "XOR": true, "NOT": true, "IS": true, "LIKE": true, "REGEXP": true,
		"RLIKE": true, "IN": true, "BETWEEN": true, "DIV": true, "MOD": true, "COLLATE": true, "ESCAPE": true,
		"SOUNDS": true, "INTERVAL": true, "ANY": true, "ALL": true, "SOME": true,
	}
	valueWords = map[string]bool{
		"NULL": true, "TRUE": true, "FALSE": true, "UNKNOWN": true, "MICROSECOND": true, "SECOND": true,
		"MINUTE": true, "HOUR": true, "DAY": true, "WEEK": true, "MONTH": true, "QUARTER": true, "YEAR": true,
		"SECOND_MICROSECOND": true, "MINUTE_MICROSECOND": true, "MINUTE_SECOND": true, "HOUR_MICROSECOND": true,
		"HOUR_SECOND": true, "HOUR_MINUTE": true, "DAY_MICROSECOND": true, "DAY_SECOND": true,
		"DAY_MINUTE": true, "DAY_HOUR": true, "YEAR_MONTH": true,
	}
)

// assignExprEnd returns the index of the token that ends the expression
// starting at toks[i] (len(toks) if none does).
func assignExprEnd(toks []sqllex.Token, i int) int {
	depth, cases := 0, 0
	operand := false // the token before was an operand
	for ; i < len(toks); i++ {
		t := toks[i]
		u := t.Upper()
		switch {
		case t.IsPunct("("):
			depth++
			operand = false
			continue
		case t.IsPunct(")"):
			if depth == 0 {
				return i
			}
			depth--
			operand = true
			continue
		}
		if depth > 0 {
			continue
		}
		switch {
		case t.Kind == sqllex.Punct && (t.Text == "," || t.Text == ";"):
			return i
		case t.Kind == sqllex.Word && u == "CASE":
			cases++
			operand = false
			continue
		case t.Kind == sqllex.Word && u == "END" && cases > 0:
			cases--
			operand = true
			continue
		case t.Kind == sqllex.Word && cases > 0 && (u == "WHEN" || u == "THEN" || u == "ELSE"):
			operand = false
			continue
		case t.Kind == sqllex.Word && assignEnds[u]:
			return i
		case t.Kind == sqllex.Word && operand && !operatorWords[u] && !valueWords[u]:
			return i // an alias without AS
		}
		operand = t.Kind != sqllex.Punct && !(t.Kind == sqllex.Word && operatorWords[u])
	}
	return i
}

// assignUserVars rewrites the := assignments of q outside SET (see above).
func assignUserVars(q string) string {
	if !strings.Contains(q, ":=") {
		return q
	}
	toks := sqllex.Lex(q)
	if len(toks) > 0 && toks[len(toks)-1].Unterminated() {
		return q // not a statement; rewriting it would move its quote
	}
	assigned := map[string]bool{}
	for i := 0; i+1 < len(toks); i++ {
		if toks[i].Kind == sqllex.Var && !strings.HasPrefix(toks[i].Text, "@@") && toks[i+1].Text == ":=" {
			assigned[strings.ToLower(toks[i].Text[1:])] = true
		}
	}
	return rewriteUserVars(q, toks, assigned)
}

// rewriteUserVars rewrites, in q (split as toks), the assignments to user
// variables and the reads of the variables in assigned. A read becomes
// a call of getUserVarFunc: go-mysql-server types a variable that is not
// set yet when the statement is planned as NULL, so `SELECT @a := 1, @a`
// answered NULL for @a.
func rewriteUserVars(q string, toks []sqllex.Token, assigned map[string]bool) string {
	var b strings.Builder
	last := 0
	// kinds of the open levels: a select list ('s'), another clause ('o'),
	// parentheses ('p')
	levels := []byte{'o'}
	setClause := false // after a SET, where `SET @a := 1, @b := 2` assign
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		u := t.Upper()
		switch {
		case t.IsPunct(";"):
			levels, setClause = []byte{'o'}, false
			continue
		case t.Kind == sqllex.Word && u == "SET":
			setClause = true
			continue
		case t.IsPunct("("):
			levels = append(levels, 'p')
			continue
		case t.IsPunct(")"):
			if len(levels) > 1 {
				levels = levels[:len(levels)-1]
			}
			continue
		case t.Kind == sqllex.Word && u == "SELECT":
			levels[len(levels)-1] = 's'
			continue
		case t.Kind == sqllex.Word && (u == "FROM" || u == "WHERE" || u == "GROUP" || u == "ORDER" || u == "HAVING" || u == "LIMIT"):
			levels[len(levels)-1] = 'o'
			setClause = false
			continue
		}
		if t.Kind != sqllex.Var || strings.HasPrefix(t.Text, "@@") {
			continue
		}
		if setClause && i > 0 && (toks[i-1].Text == "," || strings.EqualFold(toks[i-1].Text, "SET")) {
			continue // SET's own assignment (or what it assigns to)
		}
		name := t.Text[1:]
		quoted := "'" + strings.ReplaceAll(name, "'", "''") + "'"
		end, call := i+1, ""
		switch {
		case i+1 < len(toks) && toks[i+1].Text == ":=":
			end = assignExprEnd(toks, i+2)
			if end == i+2 {
				continue // nothing assigned: the parser reports it
			}
			expr := q[toks[i+2].Start:toks[end-1].End]
			call = fmt.Sprintf("%s(%s, %s)", setUserVarFunc, quoted, rewriteUserVars(expr, sqllex.Lex(expr), assigned))
		case assigned[strings.ToLower(name)] && !setClause:
			call = fmt.Sprintf("%s(%s)", getUserVarFunc, quoted)
		default:
			continue
		}
		exprEnd := toks[end-1].End
		b.WriteString(q[last:t.Start])
		b.WriteString(call)
		if selectItem(toks, i, end, levels[len(levels)-1] == 's') {
			// named as MySQL names it: its text
			b.WriteString(" AS `" + strings.ReplaceAll(q[t.Start:exprEnd], "`", "``") + "`")
		}
		last = exprEnd
		i = end - 1
	}
	if last == 0 {
		return q
	}
	b.WriteString(q[last:])
	return b.String()
}

// selectItem reports whether toks[i:end] is a whole item of a select list
// (inList) without an alias.
func selectItem(toks []sqllex.Token, i, end int, inList bool) bool {
	if !inList || i == 0 {
		return false
	}
	p := strings.ToUpper(toks[i-1].Text)
	if p != "," && p != "SELECT" && p != "DISTINCT" && p != "ALL" {
		return false
	}
	if end == len(toks) {
		return true
	}
	n := strings.ToUpper(toks[end].Text)
	return n == "," || n == ")" || n == ";" || n != "AS" && assignEnds[n]
}

// userVarName checks that a call of fn has n arguments, the first the
// variable's name as a string literal, and returns the name.
func userVarName(fn string, args []sql.Expression, n int) (string, error) {
	if len(args) != n {
		return "", sql.ErrInvalidArgumentNumber.New(fn, n, len(args))
	}
	if lit, ok := args[0].(*expression.Literal); ok {
		if name, ok := lit.Value().(string); ok {
			return name, nil
		}
	}
	return "", sql.ErrInvalidArgument.New(fn)
}

// setUserVar is a call of setUserVarFunc: it sets the user variable to its
// value's result and gives that result. It is not marked non-deterministic:
// the planner would then re-run a derived table that only initializes a
// variable, (SELECT @r := 0) r, for every row joined with it; a derived
// table is materialized once in MySQL. What it assigns from a variable is
// (getUserVar), so such an assignment runs for every row.
type setUserVar struct {
	name string
	expression.UnaryExpressionStub
}

var _ sql.Expression = (*setUserVar)(nil)

// newSetUserVar builds a call from its arguments: the name as a string
// literal and the value.
func newSetUserVar(_ *sql.Context, args ...sql.Expression) (sql.Expression, error) {
	name, err := userVarName(setUserVarFunc, args, 2)
	if err != nil {
		return nil, err
	}
	return &setUserVar{name: name, UnaryExpressionStub: expression.UnaryExpressionStub{Child: args[1]}}, nil
}

// Type implements sql.Expression.
func (s *setUserVar) Type(ctx *sql.Context) sql.Type { return s.Child.Type(ctx) }

// Eval implements sql.Expression.
func (s *setUserVar) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	v, err := s.Child.Eval(ctx, row)
	if err != nil {
		return nil, err
	}
	if err := ctx.SetUserVariable(ctx, s.name, v, s.Child.Type(ctx)); err != nil {
		return nil, err
	}
	return v, nil
}

// String implements sql.Expression.
func (s *setUserVar) String() string { return fmt.Sprintf("@%s := %s", s.name, s.Child) }

// WithChildren implements sql.Expression.
func (s *setUserVar) WithChildren(_ *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	if len(children) != 1 {
		return nil, sql.ErrInvalidChildrenNumber.New(s, len(children), 1)
	}
	return &setUserVar{name: s.name, UnaryExpressionStub: expression.UnaryExpressionStub{Child: children[0]}}, nil
}

// getUserVar is a call of getUserVarFunc: the user variable's value,
// typed as the variable was when the statement was planned, or as a
// string if it was not set (as MySQL types an unset variable).
type getUserVar struct {
	name string
	typ  sql.Type
}

var _ sql.NonDeterministicExpression = (*getUserVar)(nil)

// newGetUserVar builds a call from its argument, the name as a string
// literal.
func newGetUserVar(_ *sql.Context, args ...sql.Expression) (sql.Expression, error) {
	name, err := userVarName(getUserVarFunc, args, 1)
	if err != nil {
		return nil, err
	}
	return &getUserVar{name: name}, nil
}

// Resolved implements sql.Expression.
func (g *getUserVar) Resolved() bool { return true }

// IsNullable implements sql.Expression.
func (g *getUserVar) IsNullable(*sql.Context) bool { return true }

// Children implements sql.Expression.
func (g *getUserVar) Children() []sql.Expression { return nil }

// Type implements sql.Expression. The type is fixed at the first call,
// when the statement is planned (the planner builds calls without a
// context).
func (g *getUserVar) Type(ctx *sql.Context) sql.Type {
	if g.typ == nil {
		g.typ = types.LongText
		if ctx != nil {
			if t, _, err := ctx.GetUserVariable(ctx, g.name); err == nil && t != nil && t != types.Null {
				g.typ = t
			}
		}
	}
	return g.typ
}

// IsNonDeterministic implements sql.NonDeterministicExpression: the
// statement may set the variable between two reads.
func (g *getUserVar) IsNonDeterministic() bool { return true }

// Eval implements sql.Expression.
func (g *getUserVar) Eval(ctx *sql.Context, _ sql.Row) (any, error) {
	_, v, err := ctx.GetUserVariable(ctx, g.name)
	return v, err
}

// String implements sql.Expression.
func (g *getUserVar) String() string { return "@" + g.name }

// WithChildren implements sql.Expression.
func (g *getUserVar) WithChildren(_ *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	if len(children) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(g, len(children), 0)
	}
	return g, nil
}

func init() {
	function.BuiltIns = append(function.BuiltIns,
		sql.FunctionN{Name: setUserVarFunc, Fn: newSetUserVar},
		sql.FunctionN{Name: getUserVarFunc, Fn: newGetUserVar})
}
