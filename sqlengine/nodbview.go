package sqlengine

import (
	"reflect"
	"strings"

	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/certusdb/certus/sqlengine/internal/treewalk"
)

// lendDatabase makes a query's database the session's current one when the
// query failed with err for want of one and lentDatabase allows it; the
// caller runs it again and then calls restore. It returns nil otherwise.
func lendDatabase(s *Session, query string, err error) (restore func()) {
	if s == nil || err == nil || s.GetCurrentDatabase() != "" || !wantsDatabase(err) {
		return nil
	}
	db := lentDatabase(query)
	if db == "" {
		return nil
	}
	s.SetCurrentDatabase(db)
	return func() { s.SetCurrentDatabase("") }
}

// wantsDatabase reports whether err is go-mysql-server's failure for want
// of a current database: 1046, or 1049 for the database named "" (its
// rewrite of a DELETE without WHERE into a TRUNCATE looks the current
// database up).
func wantsDatabase(err error) bool {
	se := ToSQLError(err)
	return se.Number() == mysql.ERNoDb || se.Number() == mysql.ERBadDb && strings.HasSuffix(se.Message, "database not found: ")
}

// lentDatabase returns the database a query may run under when it failed
// for want of a current database although it names every table with its
// database: go-mysql-server reads a view by first saving the current
// database, which fails when there is none, so `SELECT * FROM db.v` was
// 1046 with no database selected where MySQL answers it, and `DELETE FROM
// db.t` was 1049. The query runs under a database it names only when that
// cannot change what it means: it is a SELECT (or UNION ...), a DELETE or
// a TRUNCATE, every table it names is qualified and it does not ask for
// the current database (DATABASE(), SCHEMA()). It returns "" otherwise,
// and the error stands.
func lentDatabase(query string) string {
	st, err := ast.Parse(query)
	if err != nil {
		return ""
	}
	switch st := st.(type) {
	case *ast.Select, *ast.SetOp, *ast.Delete:
	case *ast.DDL:
		if st.Action != ast.TruncateStr || st.Table.DbQualifier.IsEmpty() {
			return ""
		}
		return st.Table.DbQualifier.String()
	default:
		return ""
	}
	db, ok := "", true
	treewalk.AST(reflect.ValueOf(&st).Elem(), func(v reflect.Value) {
		if !ok || (v.Kind() != reflect.Pointer && v.Kind() != reflect.Interface) {
			return
		}
		switch n := v.Interface().(type) {
		case *ast.AliasedTableExpr:
			tn, isName := n.Expr.(ast.TableName)
			if !isName {
				return // a derived table or table function: walked into
			}
			if tn.DbQualifier.IsEmpty() {
				ok = false // the current database's table, or a CTE's
				return
			}
			if db == "" {
				db = tn.DbQualifier.String()
			}
		case *ast.FuncExpr:
			switch n.Name.Lowered() {
			case "database", "schema":
				ok = false
			}
		}
	})
	if !ok {
		return ""
	}
	return db
}
