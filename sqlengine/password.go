package sqlengine

import (
	"context"
	"regexp"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/mysql_db"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
)

// Password changes go-mysql-server does not parse: SET PASSWORD [FOR
// account] = 'auth' (or MariaDB's = PASSWORD('auth')) and ALTER USER
// USER() | CURRENT_USER[()] IDENTIFIED ... become ALTER USER of the
// account named, or of the session's own. As in MySQL, a user may change
// its own password without privileges (go-mysql-server's ALTER USER asks
// for CREATE USER, which the statement then gets for itself alone);
// another account's needs CREATE USER.

const quoted = `'(?:[^'\\]|\\.|'')*'`

var (
	setPasswordRe = regexp.MustCompile(`(?is)^\s*SET\s+PASSWORD\s*(?:FOR\s+(.+?)\s*)?=\s*(?:PASSWORD\s*\(\s*(` + quoted + `)\s*\)|(` + quoted + `))\s*;?\s*$`)
	// only the password: a list of accounts or other clauses could
	// change more than the user's own password
	alterOwnRe    = regexp.MustCompile(`(?is)^\s*ALTER\s+USER\s+(?:IF\s+EXISTS\s+)?(?:USER\s*\(\s*\)|CURRENT_USER(?:\s*\(\s*\))?)\s+(IDENTIFIED\s+(?:WITH\s+\w+\s+)?BY\s+` + quoted + `)\s*;?\s*$`)
	currentUserRe = regexp.MustCompile(`(?is)^CURRENT_USER(?:\s*\(\s*\))?$`)
)

// changePassword answers the statements above; handled is false for
// another statement.
func (h *Handler) changePassword(ctx context.Context, c *mysql.Conn, query string, out func(*sqltypes.Result) error) (handled bool, err error) {
	s := h.session(c)
	if s == nil {
		return false, nil
	}
	self := "'" + escapeString(s.Client().User) + "'@'" + escapeString(s.Client().Address) + "'"
	var account, rest string
	if m := setPasswordRe.FindStringSubmatch(query); m != nil {
		account, rest = m[1], "IDENTIFIED BY "+m[2]+m[3]
	} else if m := alterOwnRe.FindStringSubmatch(query); m != nil {
		rest = m[1]
	} else {
		return false, nil
	}
	if account == "" || currentUserRe.MatchString(account) {
		account = self
	}
	restore := func() {}
	if account == self && h.users != nil {
		restore = h.widen(ctx, s, func(own mysql_db.PrivilegeSet) bool {
			own.AddGlobalStatic(sql.PrivilegeType_CreateUser)
			return true
		})
	}
	defer restore()
	err = h.inner.ComQuery(ctx, c, "ALTER USER "+account+" "+rest, func(r *sqltypes.Result, _ bool) error {
		return out(r)
	})
	if se := ToSQLError(err); se != nil && se.Number() == erTableAccessDenied {
		return true, errCreateUserDenied
	}
	return true, err
}

// errCreateUserDenied is MySQL's answer to a change of another account's
// password by a user without CREATE USER.
var errCreateUserDenied = mysql.NewSQLError(mysql.ERSpecifiedAccessDenied, "42000",
	"Access denied; you need (at least one of) the CREATE USER privilege(s) for this operation")
