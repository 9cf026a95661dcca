package sqlengine

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/mysql_db"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"

	"github.com/certusdb/certus/internal/clientconn"
	"github.com/certusdb/certus/internal/pki"
	"github.com/certusdb/certus/internal/sqllex"
)

// Client TLS as MySQL has it: internal/clientconn does the TLS of the
// client port (and require_secure_transport), this file the rest: the ssl_*
// variables, Ssl_cipher and Ssl_version, a user's REQUIRE, and ALTER
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

// secureEnough refuses, as MySQL does (1045), a login that does not meet
// its account's REQUIRE: SSL wants TLS; X509 a client certificate the
// node's CA verified; ISSUER and SUBJECT such a certificate with that
// issuer and subject; CIPHER that cipher. go-mysql-server's own check
// cannot tell (see loginview.go). Over TLS it gives the session its
// Ssl_cipher and Ssl_version.
func (h *Handler) secureEnough(ctx context.Context, s *Session, g *clientconn.Conn) error {
	var st *tls.ConnectionState
	if g != nil {
		st = g.TLS()
	}
	if st != nil {
		sctx := sql.NewContext(ctx, sql.WithSession(s))
		_ = s.SetStatusVariable(sctx, "Ssl_cipher", cipherName(st.CipherSuite))
		_ = s.SetStatusVariable(sctx, "Ssl_version", strings.Replace(tls.VersionName(st.Version), "TLS ", "TLSv", 1))
	}
	if h.users == nil {
		return nil
	}
	c := s.Client()
	host := hostOf(c.Address)
	rd := h.users.Reader()
	u := h.users.GetUser(rd, c.User, host, false)
	rd.Close()
	if u == nil || meetsRequire(u, st) {
		return nil
	}
	return mysql.NewSQLError(mysql.ERAccessDeniedError, mysql.SSAccessDeniedError, "Access denied for user '%s'@'%s' (using password: YES)", c.User, host)
}

// meetsRequire reports whether a connection with TLS state st (nil: no
// TLS) meets u's REQUIRE.
func meetsRequire(u *mysql_db.User, st *tls.ConnectionState) bool {
	if u.SslType == "" {
		return true
	}
	if st == nil {
		return false
	}
	// the handshake verified any certificate the client sent against the
	// CA (tls.VerifyClientCertIfGiven): one that got here is valid
	var cert *x509.Certificate
	if len(st.VerifiedChains) > 0 {
		cert = st.VerifiedChains[0][0]
	}
	switch u.SslType {
	case "ANY":
		return true
	case "X509":
		return cert != nil
	case "SPECIFIED":
		if (u.X509Issuer != "" || u.X509Subject != "") && cert == nil {
			return false
		}
		return (u.X509Issuer == "" || u.X509Issuer == distinguishedName(cert.Issuer)) &&
			(u.X509Subject == "" || u.X509Subject == distinguishedName(cert.Subject)) &&
			(u.SslCipher == "" || u.SslCipher == cipherName(st.CipherSuite))
	}
	return false
}

// distinguishedName writes a name as MySQL shows and compares it (OpenSSL's
// X509_NAME_oneline): "/C=SE/O=Example/CN=app", in the certificate's order.
func distinguishedName(n pkix.Name) string {
	var b strings.Builder
	for _, a := range n.Names {
		key, ok := dnShortNames[a.Type.String()]
		if !ok {
			key = a.Type.String()
		}
		fmt.Fprintf(&b, "/%s=%v", key, a.Value)
	}
	return b.String()
}

// dnShortNames are OpenSSL's short names of the attributes of a name.
var dnShortNames = map[string]string{
	"2.5.4.3": "CN", "2.5.4.4": "SN", "2.5.4.5": "serialNumber", "2.5.4.6": "C",
	"2.5.4.7": "L", "2.5.4.8": "ST", "2.5.4.9": "street", "2.5.4.10": "O",
	"2.5.4.11": "OU", "2.5.4.12": "title", "2.5.4.17": "postalCode", "2.5.4.42": "GN",
	"2.5.4.43": "initials", "2.5.4.46": "dnQualifier", "2.5.4.65": "pseudonym",
	"1.2.840.113549.1.9.1": "emailAddress", "0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1": "UID",
}

// cipherName is a cipher suite's name as MySQL (OpenSSL) gives it in
// Ssl_cipher and compares it with REQUIRE CIPHER. TLS 1.3's suites have
// the same names in both.
func cipherName(id uint16) string {
	if n, ok := opensslCiphers[id]; ok {
		return n
	}
	return tls.CipherSuiteName(id)
}

var opensslCiphers = map[uint16]string{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256:       "ECDHE-ECDSA-AES128-GCM-SHA256",
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384:       "ECDHE-ECDSA-AES256-GCM-SHA384",
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256:         "ECDHE-RSA-AES128-GCM-SHA256",
	tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384:         "ECDHE-RSA-AES256-GCM-SHA384",
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: "ECDHE-ECDSA-CHACHA20-POLY1305",
	tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256:   "ECDHE-RSA-CHACHA20-POLY1305",
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA:          "ECDHE-ECDSA-AES128-SHA",
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA:          "ECDHE-ECDSA-AES256-SHA",
	tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA:            "ECDHE-RSA-AES128-SHA",
	tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA:            "ECDHE-RSA-AES256-SHA",
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256:       "ECDHE-ECDSA-AES128-SHA256",
	tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256:         "ECDHE-RSA-AES128-SHA256",
	tls.TLS_RSA_WITH_AES_128_GCM_SHA256:               "AES128-GCM-SHA256",
	tls.TLS_RSA_WITH_AES_256_GCM_SHA384:               "AES256-GCM-SHA384",
	tls.TLS_RSA_WITH_AES_128_CBC_SHA:                  "AES128-SHA",
	tls.TLS_RSA_WITH_AES_256_CBC_SHA:                  "AES256-SHA",
	tls.TLS_RSA_WITH_AES_128_CBC_SHA256:               "AES128-SHA256",
}

// reloadTLS answers ALTER INSTANCE RELOAD TLS [NO ROLLBACK ON ERROR]: the
// client port's certificate, key and CA are read again for the logins
// that follow (the statement needs CONNECTION_ADMIN or SUPER). handled
// is false when query is not that statement.
func (h *Handler) reloadTLS(ctx context.Context, s *Session, query string, out func(*sqltypes.Result) error) (handled bool, err error) {
	lx := sqllex.NewScanner(query)
	if lx.Word() != "ALTER" || lx.Word() != "INSTANCE" || lx.Word() != "RELOAD" || lx.Word() != "TLS" {
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
