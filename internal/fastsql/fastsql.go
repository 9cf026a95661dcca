// Package fastsql recognises the statement shapes that dominate OLTP
// traffic — point and IN-list lookups, key ranges (with DISTINCT, ORDER BY,
// LIMIT or one aggregate), single-row UPDATE and DELETE by key,
// INSERT/REPLACE of literal rows, BEGIN/COMMIT/ROLLBACK — from the statement text
// alone, in one pass and without go-mysql-server's parser or analyzer.
//
// Recognition is strict: any token it does not expect makes Parse report
// false, and the caller runs the statement through the general path.
// Literals are lifted out as arguments, so one Statement serves every
// execution of the same shape (text protocol) or prepared statement (binary
// protocol, whose placeholders are the arguments).
package fastsql

import (
	"strconv"
	"strings"

	"github.com/certusdb/certus/internal/sqllex"
)

// Kind is the statement kind.
type Kind uint8

// Statement kinds.
const (
	Select Kind = iota + 1
	Update
	Delete
	Insert
	Replace
	Begin    // BEGIN [WORK], START TRANSACTION
	Commit   // COMMIT [WORK]
	Rollback // ROLLBACK [WORK]
)

// Op is the predicate on the key column.
type Op uint8

// Predicates.
const (
	Eq      Op = iota + 1 // col = a
	In                    // col IN (a, b, ...)
	Between               // col BETWEEN a AND b
)

// Arg is one argument: the index of a placeholder or lifted literal.
type Arg int

// SetExpr is one assignment of an UPDATE: Col = Arg, or Col = Col ± Arg.
type SetExpr struct {
	Col string
	// Self is true for Col = Col + Arg (Sign 1) or Col - Arg (Sign -1).
	Self bool
	Sign int
	Arg  Arg
}

// Statement is a recognised statement; arguments are referenced by index.
type Statement struct {
	Kind  Kind
	DB    string // "" when the table is not qualified
	Table string

	// SELECT
	Columns  []string // nil for *; the aggregate's column for Agg
	Distinct bool
	// Agg is the aggregate function of SELECT AGG(col) (SUM, COUNT, MIN,
	// MAX, AVG), "" for none; Columns holds col, or "*" for COUNT(*).
	Agg string
	// WHERE (SELECT, UPDATE, DELETE)
	WhereCol string
	Op       Op
	Args     []Arg // Eq: 1, Between: 2, In: n
	// ORDER BY one column, LIMIT
	OrderBy  string
	Desc     bool
	HasLimit bool
	Limit    Arg
	// UPDATE
	Sets []SetExpr
	// INSERT / REPLACE
	InsertCols []string
	Rows       [][]Arg

	// NumArgs is the number of arguments the statement takes.
	NumArgs int

	// negated are the literals written with a unary minus, which Shape
	// returns as written and Literals negates.
	negated []int
}

// Literals turns the literals Shape returned for a text of this
// statement's shape into its arguments, applying the unary minus signs
// Parse applied. ok is false if a negation overflows.
func (st *Statement) Literals(shapeLits []Value) ([]Value, bool) {
	if len(st.negated) == 0 {
		return shapeLits, true
	}
	out := append([]Value(nil), shapeLits...)
	for _, i := range st.negated {
		if i >= len(out) || !negate(&out[i]) {
			return nil, false
		}
	}
	return out, true
}

// negate applies a unary minus to a numeric literal.
func negate(v *Value) bool {
	switch v.Kind {
	case Int:
		if v.Int == -1<<63 {
			return false
		}
		v.Int = -v.Int
	case Uint:
		if v.Uint > 1<<63 {
			return false
		}
		v.Kind, v.Int = Int, -int64(v.Uint)
	default:
		v.Str = "-" + v.Str
	}
	return true
}

// Value is a lifted literal; the zero Value stands for a placeholder.
type Value struct {
	// Kind of the literal.
	Kind ValueKind
	Int  int64
	Uint uint64
	Str  string // string literal, or the text of a decimal/float
}

// ValueKind is the type of a literal.
type ValueKind uint8

// Literal kinds. Only Int and Uint arguments are used as keys; the rest
// are passed to the column's type conversion.
const (
	Null ValueKind = iota + 1
	Int
	Uint
	Decimal
	Float
	String
)

// Parse recognises q. It returns the statement, its arguments in order of
// appearance (a literal's value, or the zero Value for a placeholder `?`,
// which takes the next bound parameter), and a shape key that is equal for
// statements that differ only in literals.
func Parse(q string) (st *Statement, lits []Value, shape string, ok bool) {
	p := parser{lx: newLexer(q)}
	p.next()
	st, ok = p.statement()
	if !ok || p.failed {
		return nil, nil, "", false
	}
	st.NumArgs = p.nargs
	st.negated = p.negated
	return st, p.lits, p.shape.String(), true
}

// Shape returns the shape key of q without building a statement (for
// looking up a cached one), and the literals as written: pass them
// through the cached Statement's Literals. ok is false if q holds
// something Parse never accepts (comments, several statements).
func Shape(q string) (shape string, lits []Value, ok bool) {
	p := parser{lx: newLexer(q)}
	for {
		p.next()
		if p.failed {
			return "", nil, false
		}
		if p.tok.kind == tEOF {
			return p.shape.String(), p.lits, true
		}
	}
}

type tokKind uint8

const (
	tEOF tokKind = iota
	tWord
	tQuotedIdent
	tNumber
	tString
	tParam
	tNull
	tPunct
)

type token struct {
	kind tokKind
	text string // word (upper-cased), identifier, punctuation, number text
	val  Value
}

// lexer reads the tokens the grammar takes through sqllex; anything else
// (a comment, an operator, a variable, a hex literal) fails recognition.
type lexer struct {
	s   string
	sc  sqllex.Scanner
	end int // the end of the last token
}

func newLexer(q string) lexer { return lexer{s: q, sc: sqllex.NewScanner(q)} }

type parser struct {
	lx      lexer
	tok     token
	lits    []Value
	nargs   int
	shape   strings.Builder
	negated []int
	failed  bool
}

// next advances to the next token and appends it to the shape.
func (p *parser) next() {
	t, ok := p.lx.token()
	if !ok {
		p.failed = true
		t = token{kind: tEOF}
	}
	p.tok = t
	switch t.kind {
	case tNumber, tString, tNull:
		p.shape.WriteString("? ")
		p.lits = append(p.lits, t.val)
	case tParam:
		p.shape.WriteString("? ")
		p.lits = append(p.lits, Value{})
	case tEOF:
	case tWord:
		// case preserved: a result column is named as the query spells it
		p.shape.WriteString(t.val.Str)
		p.shape.WriteByte(' ')
	default:
		p.shape.WriteString(t.text)
		p.shape.WriteByte(' ')
	}
}

func (l *lexer) token() (token, bool) {
	t := l.sc.Next()
	if strings.TrimLeft(l.s[l.end:t.Start], " \t\n\r") != "" {
		return token{}, false // a comment
	}
	l.end = t.End
	switch t.Kind {
	case sqllex.EOF:
		return token{kind: tEOF}, true
	case sqllex.Word:
		if sqllex.IsDigit(t.Text[0]) {
			return token{}, false // 1abc
		}
		up := t.Upper()
		if up == "NULL" {
			return token{kind: tNull, val: Value{Kind: Null}}, true
		}
		return token{kind: tWord, text: up, val: Value{Str: t.Text}}, true
	case sqllex.Ident:
		id := t.Text[1:max(1, len(t.Text)-1)]
		if t.Unterminated() || id == "" || strings.Contains(id, "`") {
			return token{}, false
		}
		return token{kind: tQuotedIdent, text: t.Text, val: Value{Str: id}}, true
	case sqllex.Number:
		return number(t.Text)
	case sqllex.String:
		if t.Text[0] != '\'' && t.Text[0] != '"' || t.Unterminated() {
			return token{}, false // N'...'
		}
		return token{kind: tString, val: Value{Kind: String, Str: sqllex.Unquote(t.Text)}}, true
	case sqllex.Param:
		return token{kind: tParam}, true
	case sqllex.Punct:
		switch t.Text {
		case ";": // a trailing semicolon only
			if strings.TrimLeft(l.s[t.End:], " \t\n\r") != "" {
				return token{}, false
			}
			l.end = len(l.s)
			return token{kind: tEOF}, true
		case "-":
			if t.End < len(l.s) && l.s[t.End] == '-' {
				return token{}, false
			}
			return token{kind: tPunct, text: t.Text}, true
		case "(", ")", ",", "=", "+", "*", ".":
			return token{kind: tPunct, text: t.Text}, true
		}
	}
	return token{}, false // operators, variables, anything else
}

// number reads a decimal literal: an integer, a fixed-point number or one
// with an exponent (not 0x1f, X'1f', b'01' or 1.2.3).
func number(text string) (token, bool) {
	t := token{kind: tNumber, text: text}
	switch {
	case !sqllex.IsDigit(text[len(text)-1]) && text[len(text)-1] != '.' || strings.Count(text, ".") > 1 ||
		len(text) > 1 && (text[1] == 'x' || text[1] == 'X' || text[1] == 'b' || text[1] == 'B' || text[1] == '\''):
		return token{}, false
	case strings.ContainsAny(text, "eE"):
		if _, err := strconv.ParseFloat(text, 64); err != nil {
			return token{}, false
		}
		t.val = Value{Kind: Float, Str: text}
	case strings.Contains(text, "."):
		t.val = Value{Kind: Decimal, Str: text}
	default:
		if v, err := strconv.ParseInt(text, 10, 64); err == nil {
			t.val = Value{Kind: Int, Int: v}
		} else if u, err := strconv.ParseUint(text, 10, 64); err == nil {
			t.val = Value{Kind: Uint, Uint: u}
		} else {
			t.val = Value{Kind: Decimal, Str: text}
		}
	}
	return t, true
}

// --- grammar ---

func (p *parser) isWord(w string) bool  { return p.tok.kind == tWord && p.tok.text == w }
func (p *parser) isPunct(c string) bool { return p.tok.kind == tPunct && p.tok.text == c }

func (p *parser) expectWord(w string) bool {
	if !p.isWord(w) {
		return false
	}
	p.next()
	return true
}

func (p *parser) expectPunct(c string) bool {
	if !p.isPunct(c) {
		return false
	}
	p.next()
	return true
}

// reserved words that end a name position
var reserved = map[string]bool{
	"SELECT": true, "FROM": true, "WHERE": true, "AND": true, "OR": true, "IN": true, "BETWEEN": true,
	"ORDER": true, "BY": true, "LIMIT": true, "UPDATE": true, "SET": true, "DELETE": true, "INSERT": true,
	"INTO": true, "VALUES": true, "VALUE": true, "REPLACE": true, "NOT": true, "IS": true,
	"ASC": true, "DESC": true, "FOR": true, "LOCK": true, "DISTINCT": true, "AS": true, "ON": true,
	"DUPLICATE": true, "KEY": true, "IGNORE": true, "JOIN": true, "GROUP": true, "HAVING": true,
	"UNION": true, "OFFSET": true, "TRUE": true, "FALSE": true, "DEFAULT": true, "LOW_PRIORITY": true,
	"HIGH_PRIORITY": true, "DELAYED": true, "QUICK": true, "STRAIGHT_JOIN": true, "SQL_CALC_FOUND_ROWS": true,
	"SQL_NO_CACHE": true, "SQL_CACHE": true, "ALL": true, "PARTITION": true, "WITH": true, "USING": true,
}

// name reads an identifier (plain or back-quoted).
func (p *parser) name() (string, bool) {
	switch {
	case p.tok.kind == tWord && !reserved[p.tok.text]:
		n := p.tok.val.Str
		p.next()
		return n, true
	case p.tok.kind == tQuotedIdent:
		n := p.tok.val.Str
		p.next()
		return n, true
	}
	return "", false
}

// table reads [db.]table.
func (p *parser) table(st *Statement) bool {
	n, ok := p.name()
	if !ok {
		return false
	}
	if p.isPunct(".") {
		p.next()
		t, ok := p.name()
		if !ok {
			return false
		}
		st.DB, st.Table = n, t
		return true
	}
	st.Table = n
	return true
}

// column reads a column name, optionally qualified by the table name.
func (p *parser) column(st *Statement) (string, bool) {
	n, ok := p.name()
	if !ok {
		return "", false
	}
	if p.isPunct(".") {
		if !strings.EqualFold(n, st.Table) {
			return "", false
		}
		p.next()
		return p.name()
	}
	return n, true
}

// arg reads a literal, a placeholder or a negated numeric literal.
func (p *parser) arg() (Arg, bool) {
	neg := false
	if p.isPunct("-") {
		neg = true
		p.next()
		if p.tok.kind != tNumber {
			return 0, false
		}
	}
	if neg && p.tok.kind != tNumber {
		return 0, false
	}
	switch p.tok.kind {
	case tNumber, tString, tParam, tNull:
		i := len(p.lits) - 1
		if neg {
			if !negate(&p.lits[i]) {
				return 0, false
			}
			p.negated = append(p.negated, i)
		}
		p.nargs++
		p.next()
		return Arg(i), true
	}
	return 0, false
}

func (p *parser) statement() (*Statement, bool) {
	st := &Statement{}
	switch {
	case p.isWord("SELECT"):
		st.Kind = Select
		p.next()
		return st, p.selectStmt(st)
	case p.isWord("UPDATE"):
		st.Kind = Update
		p.next()
		return st, p.updateStmt(st)
	case p.isWord("DELETE"):
		st.Kind = Delete
		p.next()
		return st, p.deleteStmt(st)
	case p.isWord("INSERT"):
		st.Kind = Insert
		p.next()
		return st, p.insertStmt(st)
	case p.isWord("REPLACE"):
		st.Kind = Replace
		p.next()
		return st, p.insertStmt(st)
	case p.isWord("BEGIN"), p.isWord("COMMIT"), p.isWord("ROLLBACK"):
		st.Kind = map[string]Kind{"BEGIN": Begin, "COMMIT": Commit, "ROLLBACK": Rollback}[p.tok.text]
		p.next()
		if p.isWord("WORK") {
			p.next()
		}
		return st, p.tok.kind == tEOF
	case p.isWord("START"):
		st.Kind = Begin
		p.next()
		return st, p.expectWord("TRANSACTION") && p.tok.kind == tEOF
	}
	return nil, false
}

func (p *parser) selectStmt(st *Statement) bool {
	if p.isWord("DISTINCT") {
		st.Distinct = true
		p.next()
	}
	if p.isPunct("*") {
		p.next()
	} else {
		for {
			// the table is not known yet: accept plain names only
			n, ok := p.name()
			if !ok {
				return false
			}
			if p.isPunct("(") {
				if len(st.Columns) > 0 || st.Distinct || !p.aggregate(st, n) {
					return false
				}
				break
			}
			st.Columns = append(st.Columns, n)
			if !p.isPunct(",") {
				break
			}
			p.next()
		}
	}
	if !p.expectWord("FROM") || !p.table(st) {
		return false
	}
	if !p.where(st) {
		return false
	}
	if p.isWord("ORDER") {
		p.next()
		if !p.expectWord("BY") {
			return false
		}
		c, ok := p.column(st)
		if !ok || st.Agg != "" {
			return false
		}
		if st.Distinct && !containsFold(st.Columns, c) {
			return false // MySQL error 3065; the general path reports it
		}
		st.OrderBy = c
		if p.isWord("ASC") {
			p.next()
		} else if p.isWord("DESC") {
			st.Desc = true
			p.next()
		}
	}
	if p.isWord("LIMIT") {
		if st.Agg != "" {
			return false
		}
		p.next()
		a, ok := p.arg()
		if !ok {
			return false
		}
		st.HasLimit, st.Limit = true, a
	}
	return p.tok.kind == tEOF
}

// aggregates are the aggregate functions the fast path computes.
var aggregates = map[string]bool{"SUM": true, "COUNT": true, "MIN": true, "MAX": true, "AVG": true}

// aggregate reads (col) or, for COUNT, (*) after the function name fn,
// which must be the only select expression.
func (p *parser) aggregate(st *Statement, fn string) bool {
	fn = strings.ToUpper(fn)
	if !aggregates[fn] {
		return false
	}
	p.next() // (
	col := "*"
	if p.isPunct("*") {
		if fn != "COUNT" {
			return false
		}
		p.next()
	} else {
		n, ok := p.name()
		if !ok {
			return false
		}
		col = n
	}
	if !p.expectPunct(")") || p.isPunct(",") {
		return false
	}
	st.Agg, st.Columns = fn, []string{col}
	return true
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// where reads WHERE col = a | col IN (a, ...) | col BETWEEN a AND b.
func (p *parser) where(st *Statement) bool {
	if !p.expectWord("WHERE") {
		return false
	}
	c, ok := p.column(st)
	if !ok {
		return false
	}
	st.WhereCol = c
	switch {
	case p.isPunct("="):
		p.next()
		a, ok := p.arg()
		if !ok {
			return false
		}
		st.Op, st.Args = Eq, []Arg{a}
	case p.isWord("IN"):
		p.next()
		if !p.expectPunct("(") {
			return false
		}
		for {
			a, ok := p.arg()
			if !ok {
				return false
			}
			st.Args = append(st.Args, a)
			if p.isPunct(",") {
				p.next()
				continue
			}
			break
		}
		if !p.expectPunct(")") {
			return false
		}
		st.Op = In
	case p.isWord("BETWEEN"):
		p.next()
		a, ok := p.arg()
		if !ok || !p.expectWord("AND") {
			return false
		}
		b, ok := p.arg()
		if !ok {
			return false
		}
		st.Op, st.Args = Between, []Arg{a, b}
	default:
		return false
	}
	return true
}

func (p *parser) updateStmt(st *Statement) bool {
	if !p.table(st) || !p.expectWord("SET") {
		return false
	}
	for {
		col, ok := p.column(st)
		if !ok || !p.expectPunct("=") {
			return false
		}
		set := SetExpr{Col: col}
		if p.tok.kind == tWord || p.tok.kind == tQuotedIdent {
			ref, ok := p.column(st)
			if !ok || !strings.EqualFold(ref, col) {
				return false
			}
			switch {
			case p.isPunct("+"):
				set.Sign = 1
			case p.isPunct("-"):
				set.Sign = -1
			default:
				return false
			}
			p.next()
			set.Self = true
		}
		a, ok := p.arg()
		if !ok {
			return false
		}
		set.Arg = a
		st.Sets = append(st.Sets, set)
		if !p.isPunct(",") {
			break
		}
		p.next()
	}
	if !p.where(st) || st.Op != Eq {
		return false
	}
	return p.tok.kind == tEOF
}

func (p *parser) deleteStmt(st *Statement) bool {
	if !p.expectWord("FROM") || !p.table(st) || !p.where(st) || st.Op != Eq {
		return false
	}
	return p.tok.kind == tEOF
}

func (p *parser) insertStmt(st *Statement) bool {
	if !p.expectWord("INTO") || !p.table(st) || !p.expectPunct("(") {
		return false
	}
	for {
		c, ok := p.name()
		if !ok {
			return false
		}
		st.InsertCols = append(st.InsertCols, c)
		if !p.isPunct(",") {
			break
		}
		p.next()
	}
	if !p.expectPunct(")") {
		return false
	}
	if !p.expectWord("VALUES") && !p.expectWord("VALUE") {
		return false
	}
	for {
		if !p.expectPunct("(") {
			return false
		}
		var row []Arg
		for {
			a, ok := p.arg()
			if !ok {
				return false
			}
			row = append(row, a)
			if !p.isPunct(",") {
				break
			}
			p.next()
		}
		if !p.expectPunct(")") || len(row) != len(st.InsertCols) {
			return false
		}
		st.Rows = append(st.Rows, row)
		if !p.isPunct(",") {
			break
		}
		p.next()
	}
	return p.tok.kind == tEOF
}
