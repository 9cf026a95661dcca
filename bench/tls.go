package bench

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/certusdb/certus/internal/pki"
)

// TLSFiles is a CA, a server certificate and a client certificate it
// signed, and a certificate per cluster member, for a benchmark over TLS:
// the servers take ca.pem, server-cert.pem and server-key.pem; sysbench
// reads client-key.pem, client-cert.pem and cacert.pem from its working
// directory, which is Dir; Certus node nK's peers take
// member-nK-cert.pem and member-nK-key.pem.
type TLSFiles struct {
	Dir string
}

// maxMembers is how many member certificates MakeTLS issues (n1..n9, the
// anchor scripts' largest cluster too).
const maxMembers = 9

// MakeTLS makes the files in a new directory under parent. They are
// readable by everyone: MariaDB's server runs as its own user.
func MakeTLS(parent string) (TLSFiles, error) {
	dir, err := os.MkdirTemp(parent, "tls-")
	if err != nil {
		return TLSFiles{}, err
	}
	f := TLSFiles{Dir: dir}
	ca, err := pki.NewCA(dir, "Certus benchmark CA")
	if err != nil {
		return f, err
	}
	local := []string{"127.0.0.1", "localhost"}
	issue := [][3]string{{"server-cert.pem", "server-key.pem", "server"}, {"client-cert.pem", "client-key.pem", "sysbench"}}
	for i := 1; i <= maxMembers; i++ {
		name := fmt.Sprintf("n%d", i)
		issue = append(issue, [3]string{"member-" + name + "-cert.pem", "member-" + name + "-key.pem", name})
	}
	for _, c := range issue {
		if err := ca.Issue(f.path(c[0]), f.path(c[1]), c[2], local); err != nil {
			return f, err
		}
		if err := os.Chmod(f.path(c[1]), 0o644); err != nil {
			return f, err
		}
	}
	data, err := os.ReadFile(f.path("ca.pem"))
	if err == nil {
		err = os.WriteFile(f.path("cacert.pem"), data, 0o644)
	}
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	return f, err
}

func (f TLSFiles) path(name string) string { return filepath.Join(f.Dir, name) }

// CertusFlags are a Certus node's flags for the server files.
func (f TLSFiles) CertusFlags() []string {
	return []string{"--ssl-cert", f.path("server-cert.pem"), "--ssl-key", f.path("server-key.pem"), "--ssl-ca", f.path("ca.pem")}
}

// PeerFlags are a Certus node's flags for mutual TLS between members;
// StartCertus puts each node's name in place of {node}.
func (f TLSFiles) PeerFlags() []string {
	return []string{"--peer-cert", f.path("member-{node}-cert.pem"), "--peer-key", f.path("member-{node}-key.pem"), "--peer-ca", f.path("ca.pem")}
}

// ClientConfig is the TLS configuration of a Go client that verifies the
// servers' certificates.
func (f TLSFiles) ClientConfig() (*tls.Config, error) {
	pem, err := os.ReadFile(f.path("ca.pem"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no certificate", f.path("ca.pem"))
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// AnchorScripts copies the anchor scripts of dir into a new directory
// under f.Dir and returns it, with the server files in the configuration
// they write: ssl_cert, ssl_key and ssl_ca for the clients of MariaDB and
// of each Galera node, and socket.ssl_* for Galera's group communication
// and IST, which also make a joiner's rsync SST go through stunnel (the
// stunnel4 package). The settings go after the lines the scripts write today; a
// script that no longer writes them is an error, not a run without TLS.
func (f TLSFiles) AnchorScripts(dir string) (string, error) {
	out, err := os.MkdirTemp(f.Dir, "anchors-")
	if err != nil {
		return "", err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	serverTLS := fmt.Sprintf("bind-address=127.0.0.1\nssl_cert=%s\nssl_key=%s\nssl_ca=%s",
		f.path("server-cert.pem"), f.path("server-key.pem"), f.path("ca.pem"))
	peerTLS := fmt.Sprintf("gcache.size=512M;socket.ssl_cert=%s;socket.ssl_key=%s;socket.ssl_ca=%s;",
		f.path("server-cert.pem"), f.path("server-key.pem"), f.path("ca.pem"))
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return "", err
		}
		s := string(data)
		edit := func(old, new string) {
			if err == nil && !strings.Contains(s, old) {
				err = fmt.Errorf("%s: no %q to add TLS settings to", e.Name(), old)
			}
			s = strings.ReplaceAll(s, old, new)
		}
		switch e.Name() {
		case "single.sh":
			edit("bind-address=127.0.0.1", serverTLS)
		case "cluster.sh":
			edit("bind-address=127.0.0.1", serverTLS)
			edit("gcache.size=512M;", peerTLS)
		}
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(out, e.Name()), []byte(s), 0o755); err != nil {
			return "", err
		}
	}
	return out, nil
}
