// Package mysqlauth holds the parts of a MySQL server's login that the
// node's client layer (internal/clientconn) and the proxy (proxy/) both
// take part in: the TLS request, require_secure_transport's refusal and
// caching_sha2_password's exchanges (the fast path, the request for the
// password, and the password sent RSA-encrypted without TLS).
package mysqlauth

import (
	"crypto/rsa"
	"crypto/sha1"
	"crypto/x509"
	"encoding/pem"
	"errors"
)

// Capability flag and length of a client's SSL request: a handshake
// response cut after its first 32 bytes, with ClientSSL set.
const (
	ClientSSL        = 1 << 11
	SSLRequestLength = 32
)

// caching_sha2_password's packet bytes.
const (
	// MoreData starts the server's packets of the exchange.
	MoreData = 0x01
	// PublicKeyRequest is a client's answer to FullAuth without TLS: it
	// asks for the server's RSA public key.
	PublicKeyRequest = 0x02
	// FastAuthOK (after MoreData): the scramble matched the cached hash.
	FastAuthOK = 0x03
	// FullAuth (after MoreData): the server asks for the password.
	FullAuth = 0x04
)

// MySQL's refusal of a login without TLS under require_secure_transport.
const (
	InsecureCode  = 3159
	InsecureState = "HY000"
	InsecureMsg   = "Connections using insecure transport are prohibited while --require_secure_transport=ON."
)

// PublicKeyPEM is key's public half as the PEM a client asks for.
func PublicKeyPEM(key *rsa.PrivateKey) []byte {
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// DecryptPassword recovers the password of caching_sha2_password's RSA
// exchange: RSA-OAEP (SHA-1) of the password and a NUL, XORed with the
// scramble repeated.
func DecryptPassword(key *rsa.PrivateKey, ct, salt []byte) ([]byte, error) {
	if key == nil || len(salt) == 0 {
		return nil, errors.New("no RSA key")
	}
	pt, err := rsa.DecryptOAEP(sha1.New(), nil, key, ct, nil)
	if err != nil {
		return nil, err
	}
	for i := range pt {
		pt[i] ^= salt[i%len(salt)]
	}
	if len(pt) == 0 || pt[len(pt)-1] != 0 {
		return nil, errors.New("no NUL after the password")
	}
	return pt[:len(pt)-1], nil
}
