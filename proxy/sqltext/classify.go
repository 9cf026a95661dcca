// Package sqltext looks at statement text the way the proxy needs to:
// it normalises a statement into a digest (literals replaced by ?,
// whitespace collapsed, keywords upper-cased) and classifies it for
// routing (read, write, transaction control, session state). It reads
// the text through internal/sqllex, the tokenizer the nodes use.
package sqltext

import (
	"strings"

	"github.com/certusdb/certus/internal/sqllex"
)

// Kind says where a statement may run.
type Kind int

// Statement kinds.
const (
	// Read may run on any reader (subject to causal consistency).
	Read Kind = iota
	// Write must run on a writer.
	Write
	// Begin starts a transaction (BEGIN, START TRANSACTION).
	Begin
	// Commit ends a transaction (COMMIT).
	Commit
	// Rollback ends a transaction (ROLLBACK, not ROLLBACK TO SAVEPOINT).
	Rollback
	// Set assigns variables (SET ...).
	Set
	// Use changes the default database (USE db).
	Use
)

// String names the kind.
func (k Kind) String() string {
	switch k {
	case Read:
		return "read"
	case Write:
		return "write"
	case Begin:
		return "begin"
	case Commit:
		return "commit"
	case Rollback:
		return "rollback"
	case Set:
		return "set"
	case Use:
		return "use"
	}
	return "unknown"
}

// Assignment is one session-scoped assignment of a SET statement, kept so
// that the proxy can replay it on another backend connection.
type Assignment struct {
	// Key identifies what is assigned: the lower-case variable name,
	// "names" for SET NAMES / CHARACTER SET, "transaction" for SET
	// SESSION TRANSACTION.
	Key string
	// Stmt is a statement that replays the assignment.
	Stmt string
	// Value is the assigned expression's text.
	Value string
}

// Statement is what routing needs to know about a statement.
type Statement struct {
	Kind Kind
	// Sticky means the statement creates session state the proxy cannot
	// replay on another connection (user variables, named locks,
	// temporary tables, LOCK TABLES, SQL-level PREPARE, SET TRANSACTION
	// for the next transaction, multi-statements, XA): the session stays
	// on one writer connection from then on.
	Sticky bool
	// Global is set for SET statements that assign a global variable.
	Global bool
	// DB is the database of USE.
	DB string
	// Vars are the session assignments of a SET statement.
	Vars []Assignment
	// Query: the statement reads only (SELECT, SHOW, ... including
	// locking reads and SELECT ... INTO), so it commits no write-set of
	// its own even when it goes to the writer.
	Query bool
	// LastInsertID: the statement calls LAST_INSERT_ID() and so reads the
	// session's last generated AUTO_INCREMENT value, which the connection
	// it runs on must hold.
	LastInsertID bool
	// Diagnostics reads the conditions the session's previous statement
	// left (SHOW WARNINGS, SHOW ERRORS, SHOW COUNT(*) ..., @@warning_count,
	// @@error_count): it must run on the connection that ran that
	// statement.
	Diagnostics bool
}

var lockFuncs = map[string]bool{"GET_LOCK": true, "RELEASE_LOCK": true, "RELEASE_ALL_LOCKS": true, "IS_FREE_LOCK": true, "IS_USED_LOCK": true}
var sessionFuncs = map[string]bool{"LAST_INSERT_ID": true, "FOUND_ROWS": true, "ROW_COUNT": true}

// Classify classifies a statement (a COM_QUERY text or a prepared
// statement's SQL).
func Classify(q string) Statement {
	toks := sqllex.Lex(q)
	// trailing semicolons end the statement; anything after one makes it a
	// multi-statement
	for len(toks) > 0 && toks[len(toks)-1].Text == ";" {
		toks = toks[:len(toks)-1]
	}
	for _, t := range toks {
		if t.Kind == sqllex.Punct && t.Text == ";" {
			return Statement{Kind: Write, Sticky: true}
		}
	}
	first := 0
	for first < len(toks) && toks[first].Text == "(" {
		first++
	}
	if first >= len(toks) {
		return Statement{Kind: Read}
	}
	w := toks[first].Upper()
	if toks[first].Kind != sqllex.Word {
		w = ""
	}
	second := ""
	if first+1 < len(toks) {
		second = toks[first+1].Upper()
	}
	switch w {
	case "SELECT", "WITH", "TABLE", "VALUES", "SHOW", "DESC", "DESCRIBE", "EXPLAIN", "HELP":
		return classifyRead(toks)
	case "BEGIN":
		if second == "" || second == "WORK" {
			return Statement{Kind: Begin}
		}
		return Statement{Kind: Write}
	case "START":
		if second == "TRANSACTION" {
			return Statement{Kind: Begin}
		}
		return Statement{Kind: Write}
	case "COMMIT":
		return Statement{Kind: Commit}
	case "ROLLBACK":
		for _, t := range toks[first+1:] {
			if t.Upper() == "TO" {
				return Statement{Kind: Write}
			}
		}
		return Statement{Kind: Rollback}
	case "SET":
		return classifySet(q, toks[first+1:])
	case "USE":
		if first+1 < len(toks) {
			return Statement{Kind: Use, DB: sqllex.Unquote(toks[first+1].Text)}
		}
		return Statement{Kind: Write}
	case "LOCK", "UNLOCK", "PREPARE", "EXECUTE", "DEALLOCATE", "XA", "HANDLER":
		return Statement{Kind: Write, Sticky: true}
	case "CREATE", "DROP":
		if second == "TEMPORARY" {
			return Statement{Kind: Write, Sticky: true}
		}
	}
	st := Statement{Kind: Write, LastInsertID: readsLastInsertID(toks)}
	for _, t := range toks {
		if t.Kind == sqllex.Var && !strings.HasPrefix(t.Text, "@@") {
			st.Sticky = true
		}
	}
	return st
}

// readsLastInsertID reports whether toks call LAST_INSERT_ID() without an
// argument.
func readsLastInsertID(toks []sqllex.Token) bool {
	for i := 0; i+2 < len(toks); i++ {
		if toks[i].Kind == sqllex.Word && toks[i+1].Text == "(" && toks[i+2].Text == ")" && toks[i].Upper() == "LAST_INSERT_ID" {
			return true
		}
	}
	return false
}

func classifyRead(toks []sqllex.Token) Statement {
	st := Statement{Kind: Read, Query: true, LastInsertID: readsLastInsertID(toks)}
	if len(toks) >= 2 && toks[0].Upper() == "SHOW" {
		switch toks[1].Upper() {
		case "WARNINGS", "ERRORS", "COUNT":
			st.Diagnostics = true
		}
	}
	for i, t := range toks {
		switch t.Kind {
		case sqllex.Var:
			if !strings.HasPrefix(t.Text, "@@") {
				st.Sticky = true
			}
			if v := strings.ToLower(t.Text); strings.HasSuffix(v, "warning_count") || strings.HasSuffix(v, "error_count") {
				st.Diagnostics = true
			}
		case sqllex.Word:
			u := t.Upper()
			next := ""
			if i+1 < len(toks) {
				next = toks[i+1].Upper()
			}
			switch {
			case u == "FOR" && (next == "UPDATE" || next == "SHARE"):
				st.Kind = Write
			case u == "LOCK" && next == "IN":
				st.Kind = Write
			case u == "INTO":
				st.Kind = Write
			case u == "UPDATE" && i > 0 && toks[i-1].Upper() == "FOR":
				// FOR UPDATE, seen at FOR
			case u == "INSERT" || u == "UPDATE" || u == "DELETE" || u == "REPLACE":
				st.Kind, st.Query = Write, false
			case u == "SQL_CALC_FOUND_ROWS":
				st.Sticky = true
			case next == "(" && lockFuncs[u]:
				st.Sticky = true
			case next == "(" && sessionFuncs[u]:
				st.Kind = Write
			}
		}
	}
	if st.Sticky {
		st.Kind = Write
	}
	return st
}

// classifySet classifies SET given the tokens after SET.
func classifySet(q string, toks []sqllex.Token) Statement {
	st := Statement{Kind: Set}
	for _, item := range splitTop(toks) {
		if len(item) == 0 {
			continue
		}
		scope := ""
		i := 0
		switch u := item[0].Upper(); {
		case item[0].Kind == sqllex.Word && (u == "GLOBAL" || u == "PERSIST" || u == "PERSIST_ONLY"):
			st.Global = true
			continue
		case item[0].Kind == sqllex.Word && (u == "SESSION" || u == "LOCAL"):
			scope = "SESSION"
			i = 1
		}
		if i >= len(item) {
			continue
		}
		t := item[i]
		text := q[t.Start:item[len(item)-1].End]
		switch {
		case t.Kind == sqllex.Var && strings.HasPrefix(t.Text, "@@"):
			name := strings.ToLower(t.Text[2:])
			switch {
			case strings.HasPrefix(name, "global.") || strings.HasPrefix(name, "persist"):
				st.Global = true
				continue
			case strings.HasPrefix(name, "session."):
				name = name[len("session."):]
			case strings.HasPrefix(name, "local."):
				name = name[len("local."):]
			}
			st.Vars = append(st.Vars, assignment(q, name, item[i+1:]))
		case t.Kind == sqllex.Var:
			st.Sticky = true
		case t.Kind == sqllex.Word && (t.Upper() == "NAMES" || t.Upper() == "CHARSET" || (t.Upper() == "CHARACTER" && i+1 < len(item) && item[i+1].Upper() == "SET")):
			st.Vars = append(st.Vars, Assignment{Key: "names", Stmt: "SET " + text, Value: text})
		case t.Kind == sqllex.Word && t.Upper() == "TRANSACTION":
			if scope == "" {
				// applies to the next transaction only
				st.Sticky = true
				continue
			}
			st.Vars = append(st.Vars, Assignment{Key: "transaction", Stmt: "SET SESSION " + text, Value: text})
		case t.Kind == sqllex.Word || t.Kind == sqllex.Ident:
			st.Vars = append(st.Vars, assignment(q, strings.ToLower(sqllex.Unquote(t.Text)), item[i+1:]))
		default:
			st.Sticky = true
		}
	}
	if st.Sticky {
		st.Kind = Write
	}
	return st
}

// assignment builds the replayable assignment of name from the tokens
// after the variable name ("= expr" or ":= expr").
func assignment(q, name string, rest []sqllex.Token) Assignment {
	value := ""
	if len(rest) > 1 && (rest[0].Text == "=" || rest[0].Text == ":=") {
		value = q[rest[1].Start:rest[len(rest)-1].End]
	}
	return Assignment{Key: name, Stmt: "SET SESSION " + name + " = " + value, Value: value}
}

// splitTop splits tokens at commas outside parentheses.
func splitTop(toks []sqllex.Token) [][]sqllex.Token {
	var out [][]sqllex.Token
	depth, start := 0, 0
	for i, t := range toks {
		switch t.Text {
		case "(":
			depth++
		case ")":
			depth--
		case ",":
			if depth == 0 && t.Kind == sqllex.Punct {
				out = append(out, toks[start:i])
				start = i + 1
			}
		}
	}
	return append(out, toks[start:])
}

// BoolValue interprets a SET value as a boolean (0/1, ON/OFF,
// TRUE/FALSE, quoted or not); ok is false for anything else.
func BoolValue(v string) (b, ok bool) {
	switch strings.ToLower(strings.Trim(strings.TrimSpace(v), `'"`)) {
	case "1", "on", "true":
		return true, true
	case "0", "off", "false":
		return false, true
	}
	return false, false
}

// RowCountQuery reports whether q is `SELECT ROW_COUNT()`, with or
// without an alias and trailing semicolons, and gives the name of its
// column: the alias, or the call as written.
func RowCountQuery(q string) (column string, ok bool) {
	toks := sqllex.Lex(q)
	for len(toks) > 0 && toks[len(toks)-1].Text == ";" {
		toks = toks[:len(toks)-1]
	}
	if len(toks) < 4 || toks[0].Upper() != "SELECT" || toks[1].Kind != sqllex.Word || toks[1].Upper() != "ROW_COUNT" ||
		toks[2].Text != "(" || toks[3].Text != ")" {
		return "", false
	}
	alias := toks[4:]
	if len(alias) == 2 && alias[0].Kind == sqllex.Word && alias[0].Upper() == "AS" {
		alias = alias[1:]
	}
	switch {
	case len(alias) == 0:
		return q[toks[1].Start:toks[3].End], true
	case len(alias) == 1 && alias[0].Kind == sqllex.String && len(alias[0].Text) >= 2 && !strings.ContainsAny(alias[0].Text, `\\`):
		return alias[0].Text[1 : len(alias[0].Text)-1], true
	case len(alias) == 1 && (alias[0].Kind == sqllex.Ident || alias[0].Kind == sqllex.Word && !reservedAfterSelect[alias[0].Upper()]):
		return sqllex.Unquote(alias[0].Text), true
	}
	return "", false
}

// reservedAfterSelect are the words that may follow a select list and
// are not an alias (AS without one).
var reservedAfterSelect = map[string]bool{"AS": true, "FROM": true, "WHERE": true, "INTO": true, "LIMIT": true, "FOR": true,
	"UNION": true, "ORDER": true, "GROUP": true, "HAVING": true, "LOCK": true, "WINDOW": true}
