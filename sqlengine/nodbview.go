package sqlengine

import (
	"reflect"

	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// lendDatabase makes a query's database the session's current one when the
// query failed with err for want of one and lentDatabase allows it; the
// caller runs it again and then calls restore. It returns nil otherwise.
func lendDatabase(s *Session, query string, err error) (restore func()) {
	if s == nil || err == nil || s.GetCurrentDatabase() != "" || ToSQLError(err).Number() != mysql.ERNoDb {
		return nil
	}
	db := lentDatabase(query)
	if db == "" {
		return nil
	}
	s.SetCurrentDatabase(db)
	return func() { s.SetCurrentDatabase("") }
}

// lentDatabase returns the database a query may run under when it failed
// with 1046 "no database selected" although it names every table with its
// database: go-mysql-server reads a view by first saving the current
// database, which fails when there is none, so `SELECT * FROM db.v` was
// 1046 with no database selected where MySQL answers it. The query runs
// under a database it names only when that cannot change what it means: it
// is a SELECT (or UNION ...), every table it reads is qualified and it does
// not ask for the current database (DATABASE(), SCHEMA()). It returns ""
// otherwise, and the 1046 stands.
func lentDatabase(query string) string {
	st, err := ast.Parse(query)
	if err != nil {
		return ""
	}
	switch st.(type) {
	case *ast.Select, *ast.SetOp:
	default:
		return ""
	}
	db, ok := "", true
	walkAST(reflect.ValueOf(&st).Elem(), func(v reflect.Value) {
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
