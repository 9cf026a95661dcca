package node

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/certusdb/certus/internal/pki"
	"github.com/certusdb/certus/replication"
)

// PeerSecurity is how a member (a node or an arbitrator) protects its
// peer connections, besides its cluster secret.
type PeerSecurity struct {
	// PeerCert, PeerKey and PeerCA are the member's peer certificate, its
	// key and the CA that signed every member's: peer connections are
	// then mutual TLS. All three or none.
	PeerCert, PeerKey, PeerCA string
	// PeerTLSOptional, with certificates, also takes plain connections
	// and dials plain a member that does not take TLS yet: for rolling a
	// cluster to TLS one member at a time.
	PeerTLSOptional bool
	// Insecure lets a member with neither a cluster secret nor
	// certificates listen on a peer address other than loopback.
	Insecure bool
}

// peerTransport starts the transport of member id at listen after
// checking its security: a member with neither a secret nor certificates
// is open to anyone who reaches its peer port, so it listens on loopback
// only unless sec.Insecure. peerTLS is the loaded certificate material (nil:
// none).
func peerTransport(sec PeerSecurity, id uint64, listen, cluster, secret string, log *slog.Logger) (tr *replication.TCPTransport, peerTLS *pki.Peer, err error) {
	if sec.PeerCert != "" || sec.PeerKey != "" || sec.PeerCA != "" {
		if peerTLS, err = pki.NewPeer(pki.Files{Cert: sec.PeerCert, Key: sec.PeerKey, CA: sec.PeerCA}); err != nil {
			return nil, nil, fmt.Errorf("--peer-cert, --peer-key, --peer-ca: %w", err)
		}
	}
	if peerTLS == nil && secret == "" {
		if !sec.Insecure && !loopback(listen) {
			return nil, nil, fmt.Errorf("peer address %s is not a loopback address, and peer connections would be open to anyone who reaches it: set --peer-cert, --peer-key and --peer-ca, or --cluster-secret-file (CERTUS_CLUSTER_SECRET), or --insecure to run open", listen)
		}
		log.Warn("PEER CONNECTIONS ARE OPEN: anyone who reaches the peer port can read every row, write and take part in the cluster; set --peer-cert/--peer-key/--peer-ca or --cluster-secret-file (CERTUS_CLUSTER_SECRET)", "peer_addr", listen)
	}
	tr, err = replication.NewTCPTransport(replication.TransportConfig{
		Self: id, Listen: listen, ClusterName: cluster, Secret: secret,
		TLS: peerTLS, TLSOptional: sec.PeerTLSOptional, Logger: log,
	})
	if err != nil {
		return nil, nil, err
	}
	if peerTLS != nil && sec.PeerTLSOptional {
		log.Warn("peer TLS is optional: plain connections are still taken (set --peer-tls=required once every member has certificates)")
	}
	return tr, peerTLS, nil
}

// loopback says whether every address addr's host names is a loopback
// one (an empty or unspecified host listens on every interface).
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil || len(ips) == 0 {
		return false
	}
	for _, ip := range ips {
		if !ip.IP.IsLoopback() {
			return false
		}
	}
	return true
}
