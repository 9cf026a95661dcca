package sqlengine

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"testing"

	"github.com/dolthub/go-mysql-server/sql/mysql_db"
)

// TestMeetsRequire checks each REQUIRE against connections with and
// without TLS and a certificate, names written as MySQL writes them.
func TestMeetsRequire(t *testing.T) {
	name := func(attrs ...string) pkix.Name {
		oids := map[string]asn1.ObjectIdentifier{"C": {2, 5, 4, 6}, "O": {2, 5, 4, 10}, "CN": {2, 5, 4, 3}, "emailAddress": {1, 2, 840, 113549, 1, 9, 1}}
		var n pkix.Name
		for i := 0; i < len(attrs); i += 2 {
			n.Names = append(n.Names, pkix.AttributeTypeAndValue{Type: oids[attrs[i]], Value: attrs[i+1]})
		}
		return n
	}
	cert := &x509.Certificate{Subject: name("C", "SE", "O", "Example", "CN", "app", "emailAddress", "a@example.com"), Issuer: name("CN", "Example CA")}
	if got, want := distinguishedName(cert.Subject), "/C=SE/O=Example/CN=app/emailAddress=a@example.com"; got != want {
		t.Fatalf("subject %q, want %q", got, want)
	}
	withCert := &tls.ConnectionState{CipherSuite: tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, VerifiedChains: [][]*x509.Certificate{{cert}}}
	noCert := &tls.ConnectionState{CipherSuite: tls.TLS_AES_128_GCM_SHA256}
	for _, tc := range []struct {
		u    mysql_db.User
		st   *tls.ConnectionState
		want bool
	}{
		{mysql_db.User{}, nil, true},
		{mysql_db.User{SslType: "ANY"}, nil, false},
		{mysql_db.User{SslType: "ANY"}, noCert, true},
		{mysql_db.User{SslType: "X509"}, noCert, false},
		{mysql_db.User{SslType: "X509"}, withCert, true},
		{mysql_db.User{SslType: "SPECIFIED", X509Subject: "/C=SE/O=Example/CN=app/emailAddress=a@example.com"}, withCert, true},
		{mysql_db.User{SslType: "SPECIFIED", X509Subject: "/CN=app"}, withCert, false},
		{mysql_db.User{SslType: "SPECIFIED", X509Issuer: "/CN=Example CA"}, withCert, true},
		{mysql_db.User{SslType: "SPECIFIED", X509Issuer: "/CN=Example CA"}, noCert, false},
		{mysql_db.User{SslType: "SPECIFIED", SslCipher: "ECDHE-RSA-AES256-GCM-SHA384"}, withCert, true},
		{mysql_db.User{SslType: "SPECIFIED", SslCipher: "TLS_AES_128_GCM_SHA256"}, noCert, true},
		{mysql_db.User{SslType: "SPECIFIED", SslCipher: "ECDHE-RSA-AES256-GCM-SHA384"}, noCert, false},
		{mysql_db.User{SslType: "SPECIFIED", SslCipher: "ECDHE-RSA-AES256-GCM-SHA384"}, nil, false},
	} {
		if got := meetsRequire(&tc.u, tc.st); got != tc.want {
			t.Errorf("%s issuer %q subject %q cipher %q, TLS %v: %v, want %v", tc.u.SslType, tc.u.X509Issuer, tc.u.X509Subject, tc.u.SslCipher, tc.st != nil, got, tc.want)
		}
	}
}
