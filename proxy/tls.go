package proxy

import (
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/certusdb/certus/internal/pki"
	"github.com/certusdb/certus/proxy/config"
)

// setupTLS prepares the TLS the proxy offers clients, the RSA key of
// caching_sha2_password's exchange without TLS, and the TLS of the node
// connections. What the proxy makes for itself goes to cfg.DataDir, by
// default the configuration file's directory.
func (p *Proxy) setupTLS(cfg *config.Config) error {
	dir := cfg.DataDir
	if dir == "" && p.path != "" {
		dir = filepath.Dir(p.path)
	}
	if *cfg.SSL {
		if cfg.SSLCert == "" && dir == "" {
			return errors.New("proxy: no directory for the TLS certificate the proxy makes itself: set data_dir (or ssl_cert and ssl_key)")
		}
		srv, err := pki.NewServerOrAuto(pki.Files{Cert: cfg.SSLCert, Key: cfg.SSLKey, CA: cfg.SSLCA}, filepath.Join(dir, "tls"), "certus-proxy")
		if err != nil {
			return fmt.Errorf("proxy: %w", err)
		}
		p.tls = srv
		p.log.Info("proxy: TLS offered to clients", "cert", srv.Files().Cert, "ca", srv.Files().CA)
	}
	if dir != "" {
		key, err := pki.RSAKey(filepath.Join(dir, "private_key.pem"))
		if err != nil {
			return fmt.Errorf("proxy: %w", err)
		}
		p.rsaKey = key
	}
	if cfg.BackendTLS {
		c := &tls.Config{MinVersion: tls.VersionTLS12}
		if cfg.BackendSSLCA != "" {
			pool, err := pki.Pool(cfg.BackendSSLCA)
			if err != nil {
				return fmt.Errorf("proxy: backend_ssl_ca: %w", err)
			}
			c.RootCAs = pool
		} else {
			// as a MySQL client's --ssl-mode=REQUIRED: encrypted, the
			// node's certificate not checked
			c.InsecureSkipVerify = true
			p.log.Warn("proxy: TLS to the nodes without backend_ssl_ca: encrypted, but the nodes' certificates are not verified")
		}
		p.backendTLS = c
	}
	return nil
}

// clientTLS is the TLS configuration offered to clients now, or nil.
func (p *Proxy) clientTLS() *tls.Config {
	if p.tls == nil {
		return nil
	}
	return p.tls.Config()
}

// sha2Cached reports whether user logged in with caching_sha2_password's
// full authentication since the proxy started, with password: MySQL's
// cache, which lets later logins use the fast path (the scramble).
func (p *Proxy) sha2Cached(user, password string) bool {
	v, ok := p.sha2Cache.Load(user)
	return ok && v.([sha256.Size]byte) == sha2Hash(password)
}

// sha2Remember records user's successful full authentication.
func (p *Proxy) sha2Remember(user, password string) { p.sha2Cache.Store(user, sha2Hash(password)) }

// sha2Hash is what the cache keeps of a password: SHA256(SHA256(password)),
// from which the fast path's scramble is checked.
func sha2Hash(password string) [sha256.Size]byte {
	h := sha256.Sum256([]byte(password))
	return sha256.Sum256(h[:])
}
