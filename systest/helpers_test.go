package systest

import (
	"database/sql"
	"errors"
	"testing"

	"github.com/go-sql-driver/mysql"
)

func mustExec(t testing.TB, db interface {
	Exec(string, ...any) (sql.Result, error)
}, q string, args ...any) sql.Result {
	t.Helper()
	r, err := db.Exec(q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return r
}

// mysqlErr returns the MySQL error number and SQLSTATE of err.
func mysqlErr(err error) (uint16, string) {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number, string(me.SQLState[:])
	}
	return 0, ""
}

// wantErr fails unless err is MySQL error code with SQLSTATE state.
func wantErr(t testing.TB, err error, code uint16, state string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want error %d (%s), got none", code, state)
	}
	c, s := mysqlErr(err)
	if c != code || s != state {
		t.Fatalf("want error %d (%s), got %d (%s): %v", code, state, c, s, err)
	}
}
