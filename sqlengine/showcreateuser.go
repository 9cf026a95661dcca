package sqlengine

import (
	"context"
	"regexp"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/mysql_db"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"

	"github.com/certusdb/certus/internal/sqllex"
)

// SHOW CREATE USER, which go-mysql-server does not parse: the statement
// that makes the account again, as MySQL 8.0 prints it (mysqldump
// --system=users and backup tools run it for every account).

// accountPart is one side of an account name: quoted, backquoted or bare.
const accountPart = `(?:` + quoted + `|"(?:[^"\\]|\\.|"")*"|` + "`(?:[^`]|``)*`" + `|[\w$.%-]+)`

var showCreateUserRe = regexp.MustCompile(`(?is)^\s*SHOW\s+CREATE\s+USER\s+(?:(CURRENT_USER(?:\s*\(\s*\))?)|(` + accountPart + `)(?:\s*@\s*(` + accountPart + `))?)\s*;?\s*$`)

// showCreateUser answers SHOW CREATE USER account | CURRENT_USER[()].
// Another account than one's own needs SELECT on the mysql schema or
// CREATE USER, as in MySQL.
func (h *Handler) showCreateUser(ctx context.Context, c *mysql.Conn, query string, out func(*sqltypes.Result) error) (handled bool, err error) {
	m := showCreateUserRe.FindStringSubmatch(query)
	s := h.session(c)
	if m == nil || s == nil || h.users == nil {
		return false, nil
	}
	client := s.Client()
	user, host := sqllex.Unquote(m[2]), "%"
	if m[3] != "" {
		host = sqllex.Unquote(m[3])
	}
	rd := h.users.Reader()
	defer rd.Close()
	var u *mysql_db.User
	if m[1] != "" {
		// the account the session logged in as, not the name it gave
		u = h.users.GetUser(rd, client.User, hostOf(client.Address), false)
	} else {
		u, _ = rd.GetUser(mysql_db.UserPrimaryKey{User: user, Host: host})
		own := u != nil && client.User == user && h.users.GetUser(rd, client.User, hostOf(client.Address), false) == u
		if !own && !h.holds(ctx, s, sql.PrivilegeType_CreateUser) &&
			!h.users.UserHasPrivileges(sql.NewContext(ctx, sql.WithSession(s)), sql.NewPrivilegedOperation(sql.PrivilegeCheckSubject{Database: "mysql"}, sql.PrivilegeType_Select)) {
			return true, mysql.NewSQLError(erTableAccessDenied, "42000", "SELECT command denied to user '%s'@'%s' for table 'user'", client.User, hostOf(client.Address))
		}
	}
	if u == nil {
		return true, mysql.NewSQLError(erCannotUser, "HY000", "Operation SHOW CREATE USER failed for '%s'@'%s'", user, host)
	}
	stmt := createUserText(u)
	return true, out(&sqltypes.Result{
		Fields: []*querypb.Field{{Name: "CREATE USER for " + u.User + "@" + u.Host, Type: sqltypes.VarChar, Charset: mysql.CharacterSetUtf8}},
		Rows:   [][]sqltypes.Value{{sqltypes.MakeTrusted(sqltypes.VarChar, []byte(stmt))}},
	})
}

// createUserText is the CREATE USER statement of u, in MySQL 8.0's words.
func createUserText(u *mysql_db.User) string {
	var b strings.Builder
	b.WriteString("CREATE USER " + backquote(u.User) + "@" + backquote(u.Host))
	plugin := u.Plugin
	if plugin == "" {
		plugin = "mysql_native_password"
	}
	b.WriteString(" IDENTIFIED WITH '" + plugin + "'")
	if u.AuthString != "" {
		b.WriteString(" AS '" + escapeString(u.AuthString) + "'")
	}
	switch u.SslType {
	case "ANY":
		b.WriteString(" REQUIRE SSL")
	case "X509":
		b.WriteString(" REQUIRE X509")
	case "SPECIFIED":
		b.WriteString(" REQUIRE")
		for _, o := range []struct{ name, v string }{{"ISSUER", u.X509Issuer}, {"SUBJECT", u.X509Subject}, {"CIPHER", u.SslCipher}} {
			if o.v != "" {
				b.WriteString(" " + o.name + " '" + escapeString(o.v) + "'")
			}
		}
	default:
		b.WriteString(" REQUIRE NONE")
	}
	b.WriteString(" PASSWORD EXPIRE DEFAULT ACCOUNT ")
	if u.Locked {
		b.WriteString("LOCK")
	} else {
		b.WriteString("UNLOCK")
	}
	b.WriteString(" PASSWORD HISTORY DEFAULT PASSWORD REUSE INTERVAL DEFAULT PASSWORD REQUIRE CURRENT DEFAULT")
	return b.String()
}
