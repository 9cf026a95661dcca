package sqlengine

import (
	"github.com/dolthub/go-mysql-server/server"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/mysql_db"
	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// The login view is the copy of the accounts that go-mysql-server checks
// passwords against: the same users, grants and root, except that an
// account with REQUIRE X509, ISSUER, SUBJECT or CIPHER reads as REQUIRE
// SSL there. go-mysql-server checks a client certificate only on a
// *tls.Conn of the protocol library's own, and the client port's TLS is
// internal/clientconn's, below it; so it would refuse every such login.
// It still checks the password, the lock and that the login came over TLS;
// Handler.secureEnough then checks the certificate and the cipher against
// the account itself.

// newLoginView is an empty view; loadPrivileges fills it.
func newLoginView() *mysql_db.MySQLDb {
	v := mysql_db.CreateEmptyMySQLDb()
	v.SetEnabled(true)
	return v
}

// loadLoginView loads the users and grants of data, and root, into v.
func loadLoginView(ctx *sql.Context, v *mysql_db.MySQLDb, data []byte, root, rootAt string) error {
	ed := v.Editor()
	defer ed.Close()
	if len(data) > 0 {
		if err := v.OverwriteUsersAndGrantData(ctx, ed, data); err != nil {
			return err
		}
	}
	v.AddEphemeralSuperUser(ed, "root", rootAt, root)
	var certified []*mysql_db.User
	ed.VisitUsers(func(u *mysql_db.User) {
		if u.SslType == "X509" || u.SslType == "SPECIFIED" {
			certified = append(certified, u)
		}
	})
	for _, u := range certified {
		replaceUser(ed, u, func(c *mysql_db.User) { setRequirement(c, &ast.TLSOptions{SSL: true}) })
	}
	return nil
}

// loginViewListener makes the protocol library log clients in against
// view.
func loginViewListener(view *mysql_db.MySQLDb) server.ProtocolListenerFunc {
	return func(cfg server.Config, lc mysql.ListenerConfig, sel server.ServerEventListener) (server.ProtocolListener, error) {
		lc.AuthServer = view
		return server.MySQLProtocolListenerFactory(cfg, lc, sel)
	}
}
