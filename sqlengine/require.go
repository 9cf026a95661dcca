package sqlengine

import (
	"context"
	"fmt"
	"regexp"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/mysql_db"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/certusdb/certus/internal/sqllex"
)

// Accounts' REQUIRE and lock beyond what go-mysql-server parses: the AND
// between ISSUER, SUBJECT and CIPHER is optional (requireAnd), and ALTER
// USER account [, account] [REQUIRE {NONE | SSL | X509 | ISSUER ...
// SUBJECT ... CIPHER ...}] [ACCOUNT {LOCK | UNLOCK}] changes existing
// accounts (alterUser): the accounts and clauses are parsed as CREATE
// USER's, each account is changed in memory, and go-mysql-server's own
// ALTER USER ... IDENTIFIED WITH its plugin AS its current hash then writes
// it as it now is, in the statement's transaction, so that it replicates
// like any change of users. Needs CREATE USER, as in MySQL.

var (
	alterAccountRe  = regexp.MustCompile(`(?is)^\s*ALTER\s+USER\s+(IF\s+EXISTS\s+)?(.+?\s(?:REQUIRE|ACCOUNT)\s.+?)\s*;?\s*$`)
	requireClauseRe = regexp.MustCompile(`(?i)\sREQUIRE\s`)
	lockClauseRe    = regexp.MustCompile(`(?i)\sACCOUNT\s+(UN)?LOCK\b`)
	requireOptionRe = regexp.MustCompile(`(?i)(` + quoted + `)\s+(ISSUER|SUBJECT|CIPHER)\b`)
)

// requireAnd puts the AND go-mysql-server wants between the options of a
// CREATE or ALTER USER's REQUIRE, where MySQL lets it out.
func requireAnd(q string) string {
	if !mayStartWith(q, "create") && !mayStartWith(q, "alter") || !sqllex.ContainsFold(q, "require") {
		return q
	}
	lx := sqllex.NewScanner(q)
	if w := lx.Word(); w != "CREATE" && w != "ALTER" || lx.Word() != "USER" {
		return q
	}
	return requireOptionRe.ReplaceAllString(q, "$1 AND $2")
}

// alterUser answers ALTER USER: a password change (password.go), else a
// change of REQUIRE or lock; handled is false for another ALTER USER,
// which go-mysql-server runs.
func (h *Handler) alterUser(ctx context.Context, c *mysql.Conn, query string, out func(*sqltypes.Result) error) (handled bool, err error) {
	if done, err := h.changePassword(ctx, c, query, out); done || err != nil {
		return done, err
	}
	m := alterAccountRe.FindStringSubmatch(query)
	s := h.session(c)
	if m == nil || s == nil || h.users == nil {
		return false, nil
	}
	parsed, err := ast.Parse("CREATE USER " + m[2])
	st, ok := parsed.(*ast.CreateUser)
	if err != nil || !ok {
		return true, mysql.NewSQLError(mysql.ERParseError, "42000",
			"You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use near '%s'", m[2])
	}
	if !h.holds(ctx, s, sql.PrivilegeType_CreateUser) {
		return true, errCreateUserDenied
	}
	if otherAlterOptions(st) {
		return true, mysql.NewSQLError(mysql.ERNotSupportedYet, "42000",
			"This version of MySQL doesn't yet support 'ALTER USER with REQUIRE or ACCOUNT and other options; change them in a statement of their own'")
	}
	change := func(u *mysql_db.User) {
		if requireClauseRe.MatchString(m[2]) {
			setRequirement(u, st.TLSOptions)
		}
		if l := lockClauseRe.FindStringSubmatch(m[2]); l != nil {
			u.Locked = l[1] == ""
		}
	}
	for _, a := range st.Users {
		host := a.Host
		if host == "" || a.AnyHost {
			host = "%"
		}
		pk := mysql_db.UserPrimaryKey{User: a.Name, Host: host}
		account := "'" + escapeString(pk.User) + "'@'" + escapeString(pk.Host) + "'"
		old, ok := h.changeAccount(pk, change)
		if !ok {
			if m[1] != "" {
				s.Warn(&sql.Warning{Level: "Note", Code: 3162, Message: fmt.Sprintf("Authorization ID %s does not exist.", account)})
				continue
			}
			return true, mysql.NewSQLError(erCannotUser, mysql.SSUnknownSQLState, "Operation ALTER USER failed for %s", account)
		}
		plugin := old.Plugin
		if plugin == "" {
			plugin = string(mysql.MysqlNativePassword)
		}
		err := h.inner.ComQuery(ctx, c, "ALTER USER "+account+" IDENTIFIED WITH "+plugin+" AS '"+escapeString(old.AuthString)+"'",
			func(*sqltypes.Result, bool) error { return nil })
		if err != nil {
			h.changeAccount(pk, func(u *mysql_db.User) {
				u.SslType, u.SslCipher, u.X509Issuer, u.X509Subject, u.Locked = old.SslType, old.SslCipher, old.X509Issuer, old.X509Subject, old.Locked
			})
			return true, err
		}
	}
	return true, out(&sqltypes.Result{})
}

// otherAlterOptions reports whether st, an ALTER USER read as CREATE USER,
// changes more than the requirement and the lock (a password, limits,
// password options, an attribute), which alterUser would drop.
func otherAlterOptions(st *ast.CreateUser) bool {
	for _, a := range st.Users {
		if a.Auth1 != nil || a.Auth2 != nil || a.Auth3 != nil || a.AuthInitial != nil {
			return true
		}
	}
	// a lone ACCOUNT LOCK comes with PasswordOptions whose failed attempts
	// and lock time are 0
	pw := false
	if o := st.PasswordOptions; o != nil {
		zero := func(v *ast.SQLVal) bool { return v == nil || string(v.Val) == "0" }
		pw = o.ExpirationTime != nil || o.History != nil || o.ReuseInterval != nil || o.RequireCurrentOptional ||
			!zero(o.FailedAttempts) || !zero(o.LockTime)
	}
	return st.AccountLimits != nil || pw || st.Attribute != "" || len(st.DefaultRoles) > 0
}

// setRequirement gives u the requirement o, as CREATE USER stores it in
// mysql.user (nil: none).
func setRequirement(u *mysql_db.User, o *ast.TLSOptions) {
	u.SslType, u.SslCipher, u.X509Issuer, u.X509Subject = "", "", "", ""
	if o == nil {
		return
	}
	switch {
	case o.Cipher != "" || o.Issuer != "" || o.Subject != "":
		u.SslType = "SPECIFIED"
	case o.X509:
		u.SslType = "X509"
	case o.SSL:
		u.SslType = "ANY"
	}
	u.SslCipher, u.X509Issuer, u.X509Subject = o.Cipher, o.Issuer, o.Subject
}

// changeAccount applies change to account pk in memory and returns the
// account as it was; ok is false when there is no such account.
func (h *Handler) changeAccount(pk mysql_db.UserPrimaryKey, change func(*mysql_db.User)) (old mysql_db.User, ok bool) {
	ed := h.users.Editor()
	defer ed.Close()
	u, ok := ed.GetUser(pk)
	if !ok {
		return old, false
	}
	old = *u
	replaceUser(ed, u, change)
	return old, true
}

// replaceUser puts in ed a copy of u with change applied, in u's place
// (PutUser alone keeps the old entry next to the new one).
func replaceUser(ed *mysql_db.Editor, u *mysql_db.User, change func(*mysql_db.User)) {
	c := *u
	change(&c)
	ed.RemoveUser(mysql_db.UserPrimaryKey{User: u.User, Host: u.Host})
	ed.PutUser(&c)
}
