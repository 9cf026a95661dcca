// Package pki holds the TLS material of a node or a proxy: certificates,
// keys and CAs read from PEM files (reloadable while serving), the
// self-signed CA and server certificate a node makes for itself when none
// is given (as MySQL's auto_generate_certs does), the certificates
// `certus cert` issues, and caching_sha2_password's RSA key.
package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"
)

// Files names a certificate, its key and the CA that verifies the other
// end's certificates (empty: the other end's are not asked for).
type Files struct {
	Cert, Key, CA string
}

// Server is a TLS server configuration read from Files; Reload reads them
// again. A connection takes the configuration in force when it starts.
type Server struct {
	files Files
	cfg   atomic.Pointer[tls.Config]
}

// NewServer reads files.
func NewServer(files Files) (*Server, error) {
	s := &Server{files: files}
	if err := s.Reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// NewServerOrAuto reads files or, when files.Cert is empty, the
// self-signed CA and certificate for name that AutoServer keeps in dir.
func NewServerOrAuto(files Files, dir, name string) (*Server, error) {
	if files.Cert == "" {
		auto, err := AutoServer(dir, name)
		if err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
		files = auto
	}
	return NewServer(files)
}

// Files are the files s reads.
func (s *Server) Files() Files { return s.files }

// Config is the configuration in force.
func (s *Server) Config() *tls.Config { return s.cfg.Load() }

// Reload reads the files again; on an error the configuration in force
// stays.
func (s *Server) Reload() error {
	cert, err := tls.LoadX509KeyPair(s.files.Cert, s.files.Key)
	if err != nil {
		return fmt.Errorf("tls: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if s.files.CA != "" {
		pool, err := Pool(s.files.CA)
		if err != nil {
			return err
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	}
	s.cfg.Store(cfg)
	return nil
}

// Peer is the TLS material of a member's peer connections: mutual TLS,
// each end presenting its certificate and verifying the other's against
// the CA. Every certificate the CA signed is a member's, so the host name
// is not checked (members are reached at whatever --peer-addr says); the
// peer's identity is its authenticated hello. Reload reads the files
// again; a connection takes the configuration in force when it starts.
type Peer struct {
	files  Files
	server atomic.Pointer[tls.Config]
	client atomic.Pointer[tls.Config]
}

// NewPeer reads files; all three are required.
func NewPeer(files Files) (*Peer, error) {
	if files.Cert == "" || files.Key == "" || files.CA == "" {
		return nil, errors.New("peer tls: a certificate, its key and the CA are all required")
	}
	p := &Peer{files: files}
	if err := p.Reload(); err != nil {
		return nil, err
	}
	return p, nil
}

// Files are the files p reads.
func (p *Peer) Files() Files { return p.files }

// Server is the configuration of the listening end in force.
func (p *Peer) Server() *tls.Config { return p.server.Load() }

// Client is the configuration of the dialing end in force.
func (p *Peer) Client() *tls.Config { return p.client.Load() }

// Reload reads the files again; on an error the configuration in force
// stays.
func (p *Peer) Reload() error {
	cert, err := tls.LoadX509KeyPair(p.files.Cert, p.files.Key)
	if err != nil {
		return fmt.Errorf("peer tls: %w", err)
	}
	pool, err := Pool(p.files.CA)
	if err != nil {
		return fmt.Errorf("peer %w", err)
	}
	certs := []tls.Certificate{cert}
	p.server.Store(&tls.Config{Certificates: certs, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12})
	p.client.Store(&tls.Config{
		Certificates: certs, RootCAs: pool, MinVersion: tls.VersionTLS12,
		// the chain is verified below, without the host name
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("peer tls: no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
			return err
		},
	})
	return nil
}

// Pool reads the certificates of a CA file.
func Pool(file string) (*x509.CertPool, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("tls: no certificate in %s", file)
	}
	return pool, nil
}

// The files a node makes in its data directory when it is given none,
// named as MySQL names its own.
const (
	caFile     = "ca.pem"
	caKeyFile  = "ca-key.pem"
	serverCert = "server-cert.pem"
	serverKey  = "server-key.pem"
)

// AutoServer returns the files of a self-signed CA and a server
// certificate it signed in dir, making them first if they are missing.
func AutoServer(dir, name string) (Files, error) {
	f := Files{Cert: filepath.Join(dir, serverCert), Key: filepath.Join(dir, serverKey), CA: filepath.Join(dir, caFile)}
	if exists(f.Cert) && exists(f.Key) {
		return f, nil
	}
	ca, err := NewCA(dir, "Certus auto-generated CA for "+name)
	if err != nil {
		return Files{}, err
	}
	if err := ca.Issue(f.Cert, f.Key, name, nil); err != nil {
		return Files{}, err
	}
	return f, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// CA is a certificate authority whose key is at hand.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	der  []byte
}

// validity is how long certificates made here are valid (MySQL's
// auto-generated ones: 10 years).
const validity = 10 * 365 * 24 * time.Hour

// NewCA makes a CA in dir (ca.pem, ca-key.pem), or loads the one there.
func NewCA(dir, name string) (*CA, error) {
	if exists(filepath.Join(dir, caFile)) {
		return LoadCA(dir)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(validity),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := writePEM(filepath.Join(dir, caKeyFile), "EC PRIVATE KEY", mustMarshalEC(key), 0o600); err != nil {
		return nil, err
	}
	if err := writePEM(filepath.Join(dir, caFile), "CERTIFICATE", der, 0o644); err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{cert: cert, key: key, der: der}, nil
}

// LoadCA loads the CA of dir (ca.pem, ca-key.pem).
func LoadCA(dir string) (*CA, error) {
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, caFile), filepath.Join(dir, caKeyFile))
	if err != nil {
		return nil, fmt.Errorf("ca: %w", err)
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return nil, errors.New("ca: the key is not an ECDSA key made by certus cert")
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, err
	}
	return &CA{cert: cert, key: key, der: pair.Certificate[0]}, nil
}

// Issue writes a certificate for name, signed by ca, valid as a server
// and as a client, for the host names and addresses hosts (name and the
// loopback addresses when empty), and its key.
func (ca *CA) Issue(certFile, keyFile, name string, hosts []string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(validity),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	if len(hosts) == 0 {
		hosts = []string{name, "localhost", "127.0.0.1", "::1"}
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return err
	}
	if err := writePEM(keyFile, "EC PRIVATE KEY", mustMarshalEC(key), 0o600); err != nil {
		return err
	}
	return writePEM(certFile, "CERTIFICATE", der, 0o644)
}

// RSAKey loads caching_sha2_password's RSA key from path, making it first
// if it is missing (as MySQL's caching_sha2_password_auto_generate_rsa_keys
// does).
func RSAKey(path string) (*rsa.PrivateKey, error) {
	if data, err := os.ReadFile(path); err == nil {
		block, _ := pem.Decode(data)
		if block == nil {
			return nil, fmt.Errorf("rsa key: no PEM block in %s", path)
		}
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("rsa key %s: %w", path, err)
		}
		key, ok := k.(*rsa.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("rsa key %s: not an RSA key", path)
		}
		return key, nil
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return key, writePEM(path, "PRIVATE KEY", der, 0o600)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}

func mustMarshalEC(key *ecdsa.PrivateKey) []byte {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		panic(err) // a P-256 key always marshals
	}
	return der
}

// writePEM writes one PEM block to path with mode perm, replacing the file
// whole.
func writePEM(path, typ string, der []byte, perm os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), perm); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
