package sqlengine

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/dolthub/vitess/go/mysql"

	"github.com/certusdb/certus/internal/sqllex"
)

// mysqlMessages rewrites go-mysql-server's texts of the errors a user
// meets most into MySQL's, by code: the code and SQLSTATE were already
// MySQL's, the text was not ("table not found: t" for "Table 'db.t'
// doesn't exist"). Each rewrite takes the name from go-mysql-server's
// text; $db stands for the database a bare table name is in.
var mysqlMessages = []struct {
	code int
	re   *regexp.Regexp
	repl string
}{
	{mysql.ERNoSuchTable, regexp.MustCompile(`^table not found: (.+)$`), "Table '$db$1' doesn't exist"},
	{mysql.ERBadTable, regexp.MustCompile(`^table not found: (.+)$`), "Unknown table '$db$1'"},
	{mysql.ERBadDb, regexp.MustCompile(`^database not found: (.+)$`), "Unknown database '$1'"},
	{mysql.ERTableExists, regexp.MustCompile(`^table with name (.+) already exists$`), "Table '$1' already exists"},
	{mysql.ERDbCreateExists, regexp.MustCompile(`^can't create database (.+); database exists$`), "Can't create database '$1'; database exists"},
	{mysql.ERDupFieldName, regexp.MustCompile("^duplicate column name: `(.+)`$"), "Duplicate column name '$1'"},
	{mysql.ERDupFieldName, regexp.MustCompile(`^Column "(.+)" already exists$`), "Duplicate column name '$1'"},
	{mysql.ERSPDoesNotExist, regexp.MustCompile(`^stored procedure "(.+)" does not exist$`), "PROCEDURE $db$1 does not exist"},
	{erCheckConstraintViolated, regexp.MustCompile(`^Check constraint "(.+)" violated$`), "Check constraint '$1' is violated."},
}

var (
	// dmlRe matches the statements that read or write rows: MySQL reports
	// a table of a database that does not exist as a missing table (1146)
	dmlRe        = regexp.MustCompile(`(?is)^\s*(?:\(\s*)*(SELECT|INSERT|UPDATE|DELETE|REPLACE|WITH|TABLE)\b`)
	dbNotFoundRe = regexp.MustCompile(`^database not found: (.+)$`)
	// qualifiedRe is a qualified name, db.table (or table.column)
	qualifiedRe = regexp.MustCompile("(?:`([^`]+)`|([A-Za-z0-9_$]+))\\s*\\.\\s*(?:`([^`]+)`|([A-Za-z0-9_$]+))")
)

// withMySQLMessage returns se with MySQL's text when it is one of
// mysqlMessages; db is the session's current database, query the
// statement (a table it names with a database is in that one).
func withMySQLMessage(se *mysql.SQLError, db, query string) *mysql.SQLError {
	if se.Number() == mysql.ERUnknownError && se.Message == "local_infile needs to be set to 1 to use LOCAL" {
		return mysql.NewSQLError(3948, "42000", "Loading local data is disabled; this must be enabled on both the client and server sides")
	}
	if se.Number() == mysql.ERBadDb && dmlRe.MatchString(query) {
		if m := dbNotFoundRe.FindStringSubmatch(se.Message); m != nil {
			for _, n := range qualifiedNames(query) {
				if strings.EqualFold(n[0], m[1]) {
					return mysql.NewSQLError(mysql.ERNoSuchTable, "42S02", "Table '%s.%s' doesn't exist", m[1], n[1])
				}
			}
		}
	}
	switch se.Number() {
	case mysql.ERBadFieldError:
		if msg, ok := unknownColumn(se.Message, query); ok {
			return mysql.NewSQLError(se.Number(), se.SQLState(), "%s", msg)
		}
	case mysql.ERParseError:
		if msg, ok := syntaxError(se.Message, query); ok {
			return mysql.NewSQLError(se.Number(), se.SQLState(), "%s", msg)
		}
	case mysql.ERBadNullError:
		if m := notNullRe.FindStringSubmatch(se.Message); m != nil {
			return mysql.NewSQLError(se.Number(), se.SQLState(), "Column '%s' cannot be null", m[1])
		}
	}
	for _, m := range mysqlMessages {
		if m.code != se.Number() {
			continue
		}
		sub := m.re.FindStringSubmatch(se.Message)
		if sub == nil {
			continue
		}
		prefix := ""
		if !strings.Contains(sub[1], ".") {
			for _, n := range qualifiedNames(query) {
				if strings.EqualFold(n[1], sub[1]) {
					db = n[0]
					break
				}
			}
			if db != "" {
				prefix = db + "."
			}
		}
		msg := strings.ReplaceAll(m.repl, "$db", prefix)
		msg = strings.ReplaceAll(msg, "$1", sub[1])
		return mysql.NewSQLError(se.Number(), se.SQLState(), "%s", msg)
	}
	return se
}

// qualifiedNames are the qualified names (db.table) in query, outside its
// string literals.
func qualifiedNames(query string) [][2]string {
	var out [][2]string
	for _, m := range qualifiedRe.FindAllStringSubmatch(stripLiterals(query), -1) {
		out = append(out, [2]string{m[1] + m[2], m[3] + m[4]})
	}
	return out
}

// stripLiterals blanks the quoted strings ('...' and "...") of query.
func stripLiterals(query string) string {
	b := []byte(query)
	for i := 0; i < len(b); i++ {
		q := b[i]
		if q != '\'' && q != '"' {
			continue
		}
		for i++; i < len(b) && b[i] != q; i++ {
			if b[i] == '\\' && i+1 < len(b) {
				b[i] = ' '
				i++
			}
			b[i] = ' '
		}
	}
	return string(b)
}

var (
	columnNotFoundRe = regexp.MustCompile(`^column "(.+)" could not be found in any table in scope$`)
	tableColumnRe    = regexp.MustCompile(`^table "(.+)" does not have column "(.+)"$`)
	unknownColumnRe  = regexp.MustCompile(`^Unknown column '(.+)' in '.*'$`)
	syntaxErrorRe    = regexp.MustCompile(`^syntax error at position (\d+) near '(.*)'$`)
)

// unknownColumn is MySQL's text of 1054 for go-mysql-server's msg:
// "Unknown column 'c' in 'where clause'", naming the clause of query where
// the column first appears (the select list when it cannot be found).
func unknownColumn(msg, query string) (string, bool) {
	var col, name string
	if m := columnNotFoundRe.FindStringSubmatch(msg); m != nil {
		col, name = m[1], m[1]
	} else if m := tableColumnRe.FindStringSubmatch(msg); m != nil {
		col, name = m[2], m[1]+"."+m[2]
	} else if m := unknownColumnRe.FindStringSubmatch(msg); m != nil {
		col, name = m[1], m[1]
	} else {
		return "", false
	}
	return fmt.Sprintf("Unknown column '%s' in '%s'", name, columnClause(query, col)), true
}

// columnClause names, as MySQL's 1054 does, the clause of query in which
// the word col (or `col`) first appears.
func columnClause(query, col string) string {
	clause := "field list"
	lx := sqllex.NewScanner(query)
	want := sqllex.Upper(col)
	quoted := strings.Index(strings.ToLower(query), "`"+strings.ToLower(col)+"`") // the lexer skips `col`
	for w := lx.Word(); w != ""; w = lx.Word() {
		if quoted >= 0 && lx.Pos() > quoted {
			return clause
		}
		switch w {
		case want:
			return clause
		case "SELECT", "SET":
			clause = "field list"
		case "WHERE":
			clause = "where clause"
		case "ORDER":
			clause = "order clause"
		case "GROUP":
			clause = "group statement"
		case "HAVING":
			clause = "having clause"
		case "ON":
			clause = "on clause"
		}
	}
	if quoted >= 0 {
		return clause
	}
	return "field list"
}

// syntaxError is MySQL's text of 1064 for go-mysql-server's msg, which
// gives the position just past the token it could not take: "You have an
// error in your SQL syntax; ... near '<the query from that token>' at line
// n".
func syntaxError(msg, query string) (string, bool) {
	m := syntaxErrorRe.FindStringSubmatch(msg)
	if m == nil {
		return "", false
	}
	pos, err := strconv.Atoi(m[1])
	if err != nil {
		return "", false
	}
	near, start := "", len(query)
	if end := pos - 1; end >= 0 && end <= len(query) && m[2] != "" {
		if i := strings.LastIndex(strings.ToLower(query[:end]), strings.ToLower(m[2])); i >= 0 {
			start = i
		}
	}
	if start < len(query) {
		near = query[start:]
		if len(near) > 80 {
			near = near[:80]
		}
	}
	line := 1 + strings.Count(query[:start], "\n")
	return fmt.Sprintf("You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use near '%s' at line %d", near, line), true
}
