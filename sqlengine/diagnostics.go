package sqlengine

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"

	"github.com/certusdb/certus/internal/sqllex"
)

// The diagnostics area, as MySQL keeps it: a statement that fails leaves
// its error as the session's one condition, so SHOW WARNINGS and SHOW
// ERRORS show it (go-mysql-server kept the conditions of the statement
// before). SHOW ERRORS and SHOW COUNT(*) ERRORS | WARNINGS, which
// go-mysql-server does not support, are answered from the session's
// conditions, and SHOW WARNINGS is too, to list them in the order they
// were raised (go-mysql-server lists the newest first).

// recordError makes se the session's one condition, level Error.
func recordError(s *Session, se *mysql.SQLError) {
	s.ClearWarnings()
	s.Warn(&sql.Warning{Level: "Error", Code: se.Number(), Message: se.Message})
}

// Warn implements sql.Session. go-mysql-server raises what INSERT IGNORE
// and UPDATE IGNORE skip (a duplicate key, a NULL for a NOT NULL column,
// a missing parent row) as Notes with its own texts; MySQL raises
// Warnings with the texts of the errors they stand for.
func (s *Session) Warn(w *sql.Warning) {
	if w != nil && w.Level == "Note" {
		if w.Code == mysql.ERUnknownError { // go-mysql-server's code for a CHECK
			if k, ok := byMessage(w.Message); ok && k.code == erCheckConstraintViolated {
				c := *w
				c.Code = k.code
				w = &c
			}
		}
		switch w.Code {
		case mysql.ERDupEntry, mysql.ERBadNullError, mysql.ErNoReferencedRow2, mysql.ERRowIsReferenced2, erCheckConstraintViolated:
			c := *w
			c.Level, c.Message = "Warning", ignoredErrorText(s, c.Code, c.Message)
			w = &c
		case mysql.ERDbCreateExists, mysql.ERDbDropExists:
			// go-mysql-server's text leaves the name unquoted and ends in a space
			if m := databaseNoteRe.FindStringSubmatch(w.Message); m != nil {
				c := *w
				c.Message = fmt.Sprintf("Can't %s database '%s'; database %s", m[1], m[2], m[3])
				w = &c
			}
		}
	}
	if w != nil && w.Code == mysql.ERTruncatedWrongValue {
		if m := mysqlTruncatedText(w.Message); m != w.Message {
			c := *w
			c.Message = m
			w = &c
		}
	}
	s.BaseSession.Warn(w)
}

// mysqlTruncatedText is a warning 1292 in MySQL's words: go-mysql-server
// formats some values with %s whatever their type ("Incorrect datetime
// value: '%!s(float64=1000)'") and writes "Truncated incorrect double
// value: 1x" where MySQL writes "Truncated incorrect DOUBLE value: '1x'".
func mysqlTruncatedText(msg string) string {
	msg = badVerbRe.ReplaceAllString(msg, "$1")
	m := truncatedRe.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	typ := strings.ToUpper(m[1])
	switch typ {
	case "BIGINT", "INT", "SIGNED", "UNSIGNED":
		typ = "INTEGER"
	case "FLOAT":
		typ = "DOUBLE"
	}
	v := m[2]
	if len(v) < 2 || v[0] != '\'' || v[len(v)-1] != '\'' {
		v = "'" + v + "'"
	}
	return "Truncated incorrect " + typ + " value: " + v
}

var (
	// badVerbRe is what fmt writes for a %s of a value that is not a string
	badVerbRe   = regexp.MustCompile(`%!s\([a-z0-9.]+=([^)]*)\)`)
	truncatedRe = regexp.MustCompile(`^Truncated incorrect ([A-Za-z]+) value: (.*)$`)
	dupPrefixRe = regexp.MustCompile(`^duplicate (?:primary|unique) key given: `)
	notNullRe   = regexp.MustCompile(`^column name '(.+)' is non-nullable but attempted to set a value of null$`)
	// databaseNoteRe is go-mysql-server's note of CREATE DATABASE IF NOT
	// EXISTS and DROP DATABASE IF EXISTS
	databaseNoteRe = regexp.MustCompile(`^Can't (create|drop) database (.+); database (exists|doesn't exist) ?$`)
)

// noteTableExists raises MySQL's Note 1050 for a CREATE TABLE IF NOT
// EXISTS whose table exists (go-mysql-server creates nothing and says
// nothing); migration tools log it. A temporary table and a table of the
// same name do not stop each other's creation, so only a table of the same
// kind counts.
func noteTableExists(ctx *sql.Context, n *plan.CreateTable) {
	if !n.IfNotExists() || n.Db == nil {
		return
	}
	t, ok, err := n.Db.GetTableInsensitive(ctx, n.Name())
	if err != nil || !ok {
		return
	}
	temp, _ := t.(sql.TemporaryTable)
	if (temp != nil && temp.IsTemporary()) == n.Temporary() {
		ctx.Session.Warn(tableExistsNote(n.Name()))
	}
}

// tableExistsNote is MySQL's Note 1050 for table name.
func tableExistsNote(name string) *sql.Warning {
	return &sql.Warning{Level: "Note", Code: mysql.ERTableExists, Message: fmt.Sprintf("Table '%s' already exists", name)}
}

// ignoredErrorText is MySQL's text of the error an IGNORE statement
// skipped, from go-mysql-server's msg.
func ignoredErrorText(s *Session, code int, msg string) string {
	switch code {
	case mysql.ERDupEntry:
		return dupPrefixRe.ReplaceAllString(msg, "")
	case mysql.ERBadNullError:
		return withMySQLMessage(mysql.NewSQLError(code, "23000", "%s", msg), "", "").Message
	case mysql.ErNoReferencedRow2, mysql.ERRowIsReferenced2:
		return foreignKeyMessage(context.Background(), s, mysql.NewSQLError(code, "23000", "%s", msg), "").Message
	case erCheckConstraintViolated:
		return withMySQLMessage(mysql.NewSQLError(code, "HY000", "%s", msg), "", "").Message
	}
	return msg
}

// noteDiagnostics counts the session's conditions for @@warning_count and
// @@error_count when query names either: go-mysql-server clears them when
// it plans the statement that reads the variables, while MySQL reports
// those of the statement before.
func noteDiagnostics(s *Session, query string) {
	if !sqllex.ContainsFold(query, "warning_count") && !sqllex.ContainsFold(query, "error_count") {
		return
	}
	var n [2]int64
	for _, w := range s.Warnings() {
		n[0]++
		if w.Level == "Error" {
			n[1]++
		}
	}
	s.diagCounts = n
}

// keepConditions is deferred around a statement that uses no table: as in
// MySQL, such a statement leaves the session's conditions as they were
// unless it raises its own (SELECT 1/0 does; SELECT @@warning_count does
// not).
func keepConditions(s *Session) func() {
	before := s.Warnings() // newest first
	if len(before) == 0 {
		return func() {}
	}
	return func() {
		if len(s.Warnings()) > 0 {
			return
		}
		for i := len(before) - 1; i >= 0; i-- {
			s.Warn(before[i])
		}
	}
}

var (
	showErrorsRe = regexp.MustCompile(`(?is)^\s*SHOW\s+(ERRORS|WARNINGS)(?:\s+LIMIT\s+(\d+)(?:\s*,\s*(\d+))?)?\s*;?\s*$`)
	showCountRe  = regexp.MustCompile(`(?is)^\s*SHOW\s+COUNT\s*\(\s*\*\s*\)\s+(ERRORS|WARNINGS)\s*;?\s*$`)
)

// showDiagnostics answers SHOW ERRORS | WARNINGS [LIMIT [offset,] n] and
// SHOW COUNT(*) ERRORS | WARNINGS; handled is false for another statement.
func (h *Handler) showDiagnostics(s *Session, query string, out func(*sqltypes.Result) error) (handled bool, err error) {
	if s == nil {
		return false, nil
	}
	if m := showCountRe.FindStringSubmatch(query); m != nil {
		errs := strings.EqualFold(m[1], "ERRORS")
		n, name := 0, "@@session.warning_count"
		if errs {
			name = "@@session.error_count"
		}
		for _, w := range s.Warnings() {
			if !errs || w.Level == "Error" {
				n++
			}
		}
		return true, out(&sqltypes.Result{
			Fields: []*querypb.Field{{Name: name, Type: querypb.Type_INT64, Charset: mysql.CharacterSetBinary, ColumnLength: 21}},
			Rows:   [][]sqltypes.Value{{sqltypes.NewInt64(int64(n))}},
		})
	}
	m := showErrorsRe.FindStringSubmatch(query)
	if m == nil {
		return false, nil
	}
	errs := strings.EqualFold(m[1], "ERRORS")
	offset, limit := 0, -1 // LIMIT n, or LIMIT offset, n
	switch {
	case m[3] != "":
		offset, _ = strconv.Atoi(m[2])
		limit, _ = strconv.Atoi(m[3])
	case m[2] != "":
		limit, _ = strconv.Atoi(m[2])
	}
	res := &sqltypes.Result{Fields: []*querypb.Field{
		{Name: "Level", Type: querypb.Type_VARCHAR, Charset: mysql.CharacterSetUtf8, ColumnLength: 7 * 4},
		{Name: "Code", Type: querypb.Type_UINT32, Charset: mysql.CharacterSetBinary, ColumnLength: 4, Flags: uint32(querypb.MySqlFlag_UNSIGNED_FLAG)},
		{Name: "Message", Type: querypb.Type_VARCHAR, Charset: mysql.CharacterSetUtf8, ColumnLength: 512 * 4},
	}}
	// Warnings lists the most recent first; MySQL lists in order
	ws := s.Warnings()
	k := 0
	for i := len(ws) - 1; i >= 0; i-- {
		w := ws[i]
		if errs && w.Level != "Error" {
			continue
		}
		if k++; k <= offset || limit >= 0 && len(res.Rows) >= limit {
			continue
		}
		res.Rows = append(res.Rows, []sqltypes.Value{sqltypes.NewVarChar(w.Level),
			sqltypes.NewUint32(uint32(w.Code)), sqltypes.NewVarChar(w.Message)})
	}
	s.ClearWarningCount() // the result itself raised none
	return true, out(res)
}

// duplicateIndex matches go-mysql-server's warning 1831.
var duplicateIndex = regexp.MustCompile(`^Duplicate index '(.*)' defined on the table '(.*)\.(.*)'\.`)

// dropFalseDuplicateIndexWarnings removes the warnings 1831 of the
// statement for indexes that duplicate no other: go-mysql-server warns for
// any new index with as many columns as an existing one (CREATE TABLE t (a
// INT, b INT, KEY(a), KEY(b)) warned that b duplicates a).
func dropFalseDuplicateIndexWarnings(s *Session) {
	if s == nil || s.WarningCount() == 0 {
		return
	}
	ws := s.Warnings() // the latest first
	keep := make([]*sql.Warning, 0, len(ws))
	dropped := false
	for i := len(ws) - 1; i >= 0; i-- {
		if w := ws[i]; w.Code != 1831 || duplicatesAnIndex(s, w.Message) {
			keep = append(keep, w)
		} else {
			dropped = true
		}
	}
	if !dropped {
		return
	}
	s.ClearWarnings()
	for _, w := range keep {
		s.Warn(w)
	}
}

// duplicatesAnIndex reports whether the index a warning 1831 names has the
// same columns as another index of its table (true when that cannot be
// told: the warning stays).
func duplicatesAnIndex(s *Session, msg string) bool {
	m := duplicateIndex.FindStringSubmatch(msg)
	if m == nil {
		return true
	}
	cat := s.p.mgr.Engine().Catalog()
	if t, ok := s.GetTransaction().(*Transaction); ok && t != nil {
		cat = t.Catalog() // the statement's own change, before its commit
	}
	def, ok := cat.TableByName(m[2], m[3])
	if !ok {
		return true
	}
	ix, _ := def.Index(m[1])
	if ix == nil {
		return true
	}
	for i := range def.Indexes {
		other := &def.Indexes[i]
		if other != ix && slices.Equal(other.Columns, ix.Columns) && slices.Equal(other.Prefix, ix.Prefix) && other.Kind == ix.Kind {
			return true
		}
	}
	return false
}
