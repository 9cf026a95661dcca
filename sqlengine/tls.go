package sqlengine

import (
	"context"
	"crypto/tls"
	"net"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"

	"github.com/certusdb/certus/internal/clientconn"
	"github.com/certusdb/certus/internal/pki"
)

// Client TLS as MySQL has it: internal/clientconn does the TLS of the
// client port (and require_secure_transport), this file the rest: the ssl_*
// variables, Ssl_cipher and Ssl_version, a user's REQUIRE SSL, and ALTER
// INSTANCE RELOAD TLS.

// tlsVars are the variables that describe the client port's TLS.
func tlsVars(files *pki.Server) []sql.SystemVariable {
	global := sql.GetMysqlScope(sql.SystemVariableScope_Global)
	str := func(name, v string) sql.SystemVariable {
		return &sql.MysqlSystemVariable{Name: name, Scope: global, Type: types.NewSystemStringType(name), Default: v}
	}
	have := "DISABLED"
	var f pki.Files
	if files != nil {
		have, f = "YES", files.Files()
	}
	return []sql.SystemVariable{
		str("have_ssl", have), str("have_openssl", have),
		str("ssl_cert", f.Cert), str("ssl_key", f.Key), str("ssl_ca", f.CA),
		str("tls_version", "TLSv1.2,TLSv1.3"),
	}
}

// secureEnough refuses, as MySQL does (1045), a login of a user whose
// account says REQUIRE SSL (or more) over a connection without TLS;
// otherwise it gives the session its Ssl_cipher and Ssl_version.
// go-mysql-server's own check cannot tell: the TLS is clientconn's.
func (h *Handler) secureEnough(ctx context.Context, s *Session, g *clientconn.Conn) error {
	var st *tls.ConnectionState
	if g != nil {
		st = g.TLS()
	}
	if st != nil {
		sctx := sql.NewContext(ctx, sql.WithSession(s))
		_ = s.SetStatusVariable(sctx, "Ssl_cipher", tls.CipherSuiteName(st.CipherSuite))
		_ = s.SetStatusVariable(sctx, "Ssl_version", strings.Replace(tls.VersionName(st.Version), "TLS ", "TLSv", 1))
		return nil
	}
	if h.users == nil {
		return nil
	}
	c := s.Client()
	host := hostOf(c.Address)
	rd := h.users.Reader()
	u := h.users.GetUser(rd, c.User, host, false)
	rd.Close()
	if u != nil && u.SslType != "" {
		return mysql.NewSQLError(mysql.ERAccessDeniedError, mysql.SSAccessDeniedError, "Access denied for user '%s'@'%s' (using password: YES)", c.User, host)
	}
	return nil
}

// reloadTLS answers ALTER INSTANCE RELOAD TLS [NO ROLLBACK ON ERROR]: the
// client port's certificate, key and CA are read again for the logins
// that follow (the statement needs CONNECTION_ADMIN or SUPER). handled
// is false when query is not that statement.
func (h *Handler) reloadTLS(ctx context.Context, s *Session, query string, out func(*sqltypes.Result) error) (handled bool, err error) {
	lx := lexer{s: query}
	if lx.word() != "ALTER" || lx.word() != "INSTANCE" || lx.word() != "RELOAD" || lx.word() != "TLS" {
		return false, nil
	}
	if !h.holds(ctx, s, sql.PrivilegeType_Super) && !h.holdsDynamic(ctx, s, "connection_admin") {
		return true, mysql.NewSQLError(mysql.ERSpecifiedAccessDenied, "42000", "Access denied; you need (at least one of) the SUPER or CONNECTION_ADMIN privilege(s) for this operation")
	}
	if h.tls == nil {
		return true, mysql.NewSQLError(3888 /* ER_DA_SSL_LIBRARY_ERROR */, mysql.SSUnknownSQLState, "Failed to set up SSL because of the following SSL library error: the node has no certificate")
	}
	if err := h.tls.Reload(); err != nil {
		return true, mysql.NewSQLError(3888, mysql.SSUnknownSQLState, "Failed to set up SSL because of the following SSL library error: %s", strings.TrimPrefix(err.Error(), "tls: "))
	}
	h.log.Info("client TLS reloaded", "cert", h.tls.Files().Cert)
	return true, out(&sqltypes.Result{})
}

// hostOf is the host part of a client's address (host:port).
func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}
