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
)

// Accounts' REQUIRE beyond what go-mysql-server parses: the AND between
// ISSUER, SUBJECT and CIPHER is optional (requireAnd), and ALTER USER
// account [, account] REQUIRE {NONE | SSL | X509 | ISSUER ... SUBJECT ...
// CIPHER ...} changes an account's (alterUser): the REQUIRE clause and the accounts are parsed as CREATE USER's,
// each account's requirement is set, and go-mysql-server's own ALTER USER
// ... IDENTIFIED WITH its plugin AS its current hash then writes the
// account as it now is, in the statement's transaction, so that it
// replicates like any change of users. Needs CREATE USER, as in MySQL.

var (
	alterRequireRe  = regexp.MustCompile(`(?is)^\s*ALTER\s+USER\s+(IF\s+EXISTS\s+)?(.+?)\s+REQUIRE\s+(.+?)\s*;?\s*$`)
	requireOptionRe = regexp.MustCompile(`(?i)(` + quoted + `)\s+(ISSUER|SUBJECT|CIPHER)\b`)
)

// requireAnd puts the AND go-mysql-server wants between the options of a
// CREATE or ALTER USER's REQUIRE, where MySQL lets it out.
func requireAnd(q string) string {
	if !mayStartWith(q, "create") && !mayStartWith(q, "alter") || !containsFold(q, "require") {
		return q
	}
	lx := lexer{s: q}
	if w := lx.word(); w != "CREATE" && w != "ALTER" || lx.word() != "USER" {
		return q
	}
	return requireOptionRe.ReplaceAllString(q, "$1 AND $2")
}

// alterUser answers ALTER USER: a password change (password.go), else a
// REQUIRE change; handled is false for another ALTER USER, which
// go-mysql-server runs.
func (h *Handler) alterUser(ctx context.Context, c *mysql.Conn, query string, out func(*sqltypes.Result) error) (handled bool, err error) {
	if done, err := h.changePassword(ctx, c, query, out); done || err != nil {
		return done, err
	}
	m := alterRequireRe.FindStringSubmatch(query)
	s := h.session(c)
	if m == nil || s == nil || h.users == nil {
		return false, nil
	}
	parsed, err := ast.Parse("CREATE USER " + m[2] + " REQUIRE " + m[3])
	st, ok := parsed.(*ast.CreateUser)
	if err != nil || !ok {
		return true, mysql.NewSQLError(mysql.ERParseError, "42000",
			"You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use near '%s'", m[2]+" REQUIRE "+m[3])
	}
	if !h.holds(ctx, s, sql.PrivilegeType_CreateUser) {
		return true, errCreateUserDenied
	}
	if otherAlterOptions(st) {
		return true, mysql.NewSQLError(mysql.ERNotSupportedYet, "42000",
			"This version of MySQL doesn't yet support 'ALTER USER with REQUIRE and other options; change the requirement in a statement of its own'")
	}
	req := requirement(st.TLSOptions)
	for _, a := range st.Users {
		host := a.Host
		if host == "" || a.AnyHost {
			host = "%"
		}
		pk := mysql_db.UserPrimaryKey{User: a.Name, Host: host}
		account := "'" + escapeString(pk.User) + "'@'" + escapeString(pk.Host) + "'"
		old, ok := h.setRequirement(pk, req)
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
			h.setRequirement(pk, requirementOf(old))
			return true, err
		}
	}
	return true, out(&sqltypes.Result{})
}

// otherAlterOptions reports whether st, an ALTER USER ... REQUIRE read as
// CREATE USER, changes more than the requirement (a password, limits,
// password options, a lock, an attribute), which alterUser would drop.
func otherAlterOptions(st *ast.CreateUser) bool {
	for _, a := range st.Users {
		if a.Auth1 != nil || a.Auth2 != nil || a.Auth3 != nil || a.AuthInitial != nil {
			return true
		}
	}
	return st.AccountLimits != nil || st.PasswordOptions != nil || st.Locked || st.Attribute != "" || len(st.DefaultRoles) > 0
}

// tlsRequirement is an account's REQUIRE as mysql.user keeps it.
type tlsRequirement struct{ sslType, cipher, issuer, subject string }

// requirement is o's, as CREATE USER stores it.
func requirement(o *ast.TLSOptions) tlsRequirement {
	var r tlsRequirement
	if o == nil {
		return r
	}
	switch {
	case o.Cipher != "" || o.Issuer != "" || o.Subject != "":
		r.sslType = "SPECIFIED"
	case o.X509:
		r.sslType = "X509"
	case o.SSL:
		r.sslType = "ANY"
	}
	r.cipher, r.issuer, r.subject = o.Cipher, o.Issuer, o.Subject
	return r
}

func requirementOf(u mysql_db.User) tlsRequirement {
	return tlsRequirement{sslType: u.SslType, cipher: u.SslCipher, issuer: u.X509Issuer, subject: u.X509Subject}
}

// setRequirement gives account pk the requirement r in memory and returns
// the account as it was; ok is false when there is no such account.
func (h *Handler) setRequirement(pk mysql_db.UserPrimaryKey, r tlsRequirement) (old mysql_db.User, ok bool) {
	ed := h.users.Editor()
	defer ed.Close()
	u, ok := ed.GetUser(pk)
	if !ok {
		return old, false
	}
	old = *u
	c := *u
	c.SslType, c.SslCipher, c.X509Issuer, c.X509Subject = r.sslType, r.cipher, r.issuer, r.subject
	// PutUser alone keeps the old entry next to the new one
	ed.RemoveUser(pk)
	ed.PutUser(&c)
	return old, true
}
