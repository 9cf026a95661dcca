package pki

import (
	"crypto/tls"
	"net"
	"path/filepath"
	"testing"
)

// A certificate issued by a CA serves TLS that a client trusting the CA
// verifies, as server and as client; Reload picks up a new one.
func TestIssueAndServe(t *testing.T) {
	dir := t.TempDir()
	ca, err := NewCA(dir, "test CA")
	if err != nil {
		t.Fatal(err)
	}
	if again, err := NewCA(dir, "other"); err != nil || again.cert.Subject.CommonName != "test CA" {
		t.Fatalf("a second NewCA in the same directory: %v %v", again, err)
	}
	certFile, keyFile := filepath.Join(dir, "n1.pem"), filepath.Join(dir, "n1-key.pem")
	if err := ca.Issue(certFile, keyFile, "n1", nil); err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(Files{Cert: certFile, Key: keyFile, CA: filepath.Join(dir, caFile)})
	if err != nil {
		t.Fatal(err)
	}
	pool, err := Pool(filepath.Join(dir, caFile))
	if err != nil {
		t.Fatal(err)
	}
	clientCert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	a, b := net.Pipe()
	done := make(chan error, 1)
	go func() {
		s := tls.Server(a, srv.Config())
		err := s.Handshake()
		if err == nil && len(s.ConnectionState().PeerCertificates) != 1 {
			err = net.ErrClosed
		}
		done <- err
	}()
	c := tls.Client(b, &tls.Config{RootCAs: pool, ServerName: "n1", Certificates: []tls.Certificate{clientCert}})
	if err := c.Handshake(); err != nil {
		t.Fatalf("client: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("server: %v", err)
	}
	before := srv.Config()
	if err := ca.Issue(certFile, keyFile, "n1", []string{"db.example"}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Reload(); err != nil || srv.Config() == before {
		t.Fatalf("reload: %v", err)
	}
	srv.files.Key = filepath.Join(dir, "missing.pem")
	if err := srv.Reload(); err == nil {
		t.Fatal("a reload of missing files succeeded")
	}
	if srv.Config() == nil {
		t.Fatal("a failed reload dropped the configuration in force")
	}
}

func TestAutoServerAndRSAKey(t *testing.T) {
	dir := t.TempDir()
	f, err := AutoServer(dir, "n1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewServer(f); err != nil {
		t.Fatal(err)
	}
	g, err := AutoServer(dir, "n1")
	if err != nil || g != f {
		t.Fatalf("a second AutoServer: %+v %v", g, err)
	}
	k1, err := RSAKey(filepath.Join(dir, "private_key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	k2, err := RSAKey(filepath.Join(dir, "private_key.pem"))
	if err != nil || !k1.Equal(k2) {
		t.Fatalf("the RSA key was not kept: %v", err)
	}
}
