package bench

import (
	"os"
	"path/filepath"

	"github.com/certusdb/certus/internal/pki"
)

// TLSFiles is a CA, a server certificate and a client certificate it
// signed, for a benchmark over TLS: the servers take ca.pem,
// server-cert.pem and server-key.pem; sysbench reads client-key.pem,
// client-cert.pem and cacert.pem from its working directory, which is Dir.
type TLSFiles struct {
	Dir string
}

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
	if err := ca.Issue(f.path("server-cert.pem"), f.path("server-key.pem"), "server", nil); err != nil {
		return f, err
	}
	if err := ca.Issue(f.path("client-cert.pem"), f.path("client-key.pem"), "sysbench", nil); err != nil {
		return f, err
	}
	data, err := os.ReadFile(f.path("ca.pem"))
	if err == nil {
		err = os.WriteFile(f.path("cacert.pem"), data, 0o644)
	}
	for _, name := range []string{"server-key.pem", "client-key.pem"} {
		if err == nil {
			err = os.Chmod(f.path(name), 0o644)
		}
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

// AnchorEnv is the anchor scripts' environment for the server files.
func (f TLSFiles) AnchorEnv() []string { return []string{"TLS_DIR=" + f.Dir} }
