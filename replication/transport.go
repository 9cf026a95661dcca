package replication

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/certusdb/certus/internal/frame"
)

// Peer wire protocol. Every connection starts with a hello frame from the
// dialer and a reply from the listener; after that the dialer streams
// frames (package frame). A frame with a bad checksum or an unknown type
// closes the connection and is logged; nothing in it is applied.
const (
	frameHello     byte = 1 // JSON hello
	frameHelloOK   byte = 2 // JSON reply
	frameRaft      byte = 3 // protobuf raft message
	frameJoin      byte = 4 // JSON join request
	frameJoinReply byte = 5 // JSON join reply
	// frameStateTransfer asks for a state transfer (package
	// statetransfer); the listener answers with the transfer stream.
	frameStateTransfer byte = 6
	frameLeave         byte = 7 // JSON leave request: remove the sender
	frameLeaveReply    byte = 8 // JSON reply
	frameFlow          byte = 9 // flow control report (flowcontrol.Report)
)

// Frame limits. A frame is read into a buffer that grows as its bytes
// arrive (package frame), so a limit bounds what a peer can make this
// node hold, not what it announces. A listener reads the hello, the one
// frame before the peer is authenticated, within helloTimeout and
// helloMax; a raft message may take frame.MaxSize (it carries write-sets)
// and every other frame, sent or answered, requestMax.
const (
	helloMax     = 64 << 10
	helloTimeout = 10 * time.Second
	requestMax   = 1 << 20
)

// leaveReply answers a leave request.
type leaveReply struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

// ErrPeerRejected is returned when a peer refuses the handshake (another
// cluster name or a wrong secret).
var ErrPeerRejected = errors.New("replication: peer rejected the connection")

type hello struct {
	Cluster string `json:"cluster"`
	From    uint64 `json:"from"`
	Nonce   string `json:"nonce"`
	Auth    string `json:"auth,omitempty"`
}

type helloReply struct {
	OK     bool   `json:"ok"`
	Error  string `json:"error,omitempty"`
	NodeID uint64 `json:"node_id"`
}

// JoinRequest asks a member to add the sender to the cluster.
type JoinRequest struct {
	Member Member `json:"member"`
}

// JoinReply answers a JoinRequest.
type JoinReply struct {
	OK          bool     `json:"ok"`
	Error       string   `json:"error,omitempty"`
	Retry       bool     `json:"retry,omitempty"` // the error is temporary
	Members     []Member `json:"members,omitempty"`
	ClusterUUID string   `json:"cluster_uuid,omitempty"`
}

func authTag(secret, cluster string, from uint64, nonce string) string {
	if secret == "" {
		return ""
	}
	m := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(m, "%s|%d|%s", cluster, from, nonce)
	return hex.EncodeToString(m.Sum(nil))
}

// refusalLog rate-limits the warnings about refused peer connections, so
// that a flood of them does not flood the log: at most one line a second,
// which counts the refusals left out since the line before.
type refusalLog struct {
	mu       sync.Mutex
	next     time.Time
	unlogged int
}

func (l *refusalLog) warn(log *slog.Logger, c net.Conn, reason string) {
	l.mu.Lock()
	now := time.Now()
	if now.Before(l.next) {
		l.unlogged++
		l.mu.Unlock()
		return
	}
	unlogged := l.unlogged
	l.next, l.unlogged = now.Add(time.Second), 0
	l.mu.Unlock()
	log.Warn("refused peer connection", "remote", c.RemoteAddr().String(), "reason", reason, "refused_unlogged", unlogged)
}

// TCPTransport carries raft messages between members over TCP.
type TCPTransport struct {
	self    uint64
	cluster string
	secret  string
	log     *slog.Logger
	ln      net.Listener
	// refusals logs the inbound connections refused at the hello
	refusals refusalLog

	node atomic.Pointer[Node]

	mu      sync.Mutex
	blocked map[uint64]bool // fault injection: peers cut off
	peers   map[uint64]*peer
	addrs   map[uint64]string
	closed  bool
	inbound map[net.Conn]struct{}
	wg      sync.WaitGroup
	// read links to other members (readlink.go): up, being dialed, and
	// when a dial last failed
	links       map[uint64]*readLink
	linkDialing map[uint64]bool
	linkFailed  map[uint64]time.Time

	ctx    context.Context // ends when the transport closes
	cancel context.CancelFunc
	// transfer serves state transfer requests (nil: refused).
	transfer atomic.Pointer[TransferHandler]
}

// TransferHandler serves one state transfer request: it writes the
// transfer stream for payload (the request) to w until done or ctx ends.
type TransferHandler func(ctx context.Context, w io.Writer, payload []byte) error

// TransportConfig configures a TCPTransport.
type TransportConfig struct {
	// Self is this node's raft id.
	Self uint64
	// Listen is the peer address to listen on.
	Listen string
	// ClusterName and Secret must match on both ends of a connection.
	ClusterName string
	Secret      string
	Logger      *slog.Logger
}

// NewTCPTransport listens on cfg.Listen.
func NewTCPTransport(cfg TransportConfig) (*TCPTransport, error) {
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("replication: listen on peer address %s: %w", cfg.Listen, err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	t := &TCPTransport{
		self: cfg.Self, cluster: cfg.ClusterName, secret: cfg.Secret, log: cfg.Logger, ln: ln,
		peers: map[uint64]*peer{}, addrs: map[uint64]string{}, inbound: map[net.Conn]struct{}{},
		blocked: map[uint64]bool{},
		links:   map[uint64]*readLink{}, linkDialing: map[uint64]bool{}, linkFailed: map[uint64]time.Time{},
	}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	t.wg.Add(1)
	go t.accept()
	return t, nil
}

// Attach sets the node that receives messages; until then inbound raft
// messages are dropped.
func (t *TCPTransport) Attach(n *Node) { t.node.Store(n) }

// HandleStateTransfer makes the transport serve state transfer requests
// with h (this node becomes a possible donor).
func (t *TCPTransport) HandleStateTransfer(h TransferHandler) { t.transfer.Store(&h) }

// DialStateTransfer connects to the member at addr and sends it a state
// transfer request; the returned stream is the donor's answer.
func (t *TCPTransport) DialStateTransfer(ctx context.Context, addr string, req []byte) (io.ReadCloser, error) {
	c, err := dial(ctx, addr, t.cluster, t.secret, t.self)
	if err != nil {
		return nil, err
	}
	if err := frame.Write(c, frameStateTransfer, req); err != nil {
		c.Close()
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{bufio.NewReaderSize(&deadlineConn{c}, 1<<20), c}, nil
}

// deadlineConn bounds every read and write of a state transfer, so a peer
// that stops answering ends the transfer (which then resumes) instead of
// hanging it.
type deadlineConn struct{ net.Conn }

const transferIdle = 30 * time.Second

func (d *deadlineConn) Read(p []byte) (int, error) {
	_ = d.SetReadDeadline(time.Now().Add(transferIdle))
	return d.Conn.Read(p)
}

func (d *deadlineConn) Write(p []byte) (int, error) {
	_ = d.SetWriteDeadline(time.Now().Add(transferIdle))
	return d.Conn.Write(p)
}

// Addr is the listening address.
func (t *TCPTransport) Addr() string { return t.ln.Addr().String() }

// SetMembers implements Transport.
func (t *TCPTransport) SetMembers(members []Member) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range members {
		if m.ID == t.self || m.PeerAddr == "" {
			continue
		}
		if old, ok := t.addrs[m.ID]; ok && old != m.PeerAddr {
			t.dropLocked(m.ID)
		}
		t.addrs[m.ID] = m.PeerAddr
	}
}

// Block cuts this node off from the given peers (fault injection for
// tests): messages to them are dropped and connections from them closed.
// Block(nil) heals.
func (t *TCPTransport) Block(ids []uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.blocked = map[uint64]bool{}
	for _, id := range ids {
		t.blocked[id] = true
		t.dropLocked(id)
	}
	for c := range t.inbound {
		c.Close() // reconnecting peers are checked against the new set
	}
}

func (t *TCPTransport) isBlocked(id uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.blocked[id]
}

// RemoveMember implements Transport.
func (t *TCPTransport) RemoveMember(id uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.dropLocked(id)
	delete(t.addrs, id)
}

// Send implements Transport. It never blocks: a message that does not fit
// a peer's queue is dropped (raft retransmits).
func (t *TCPTransport) Send(msgs []*pb.Message) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	for _, m := range msgs {
		to := m.GetTo()
		if t.blocked[to] {
			continue
		}
		p := t.peerLocked(to)
		if p == nil {
			continue
		}
		select {
		case p.queue <- outgoing{m: m}:
		default:
			t.unreachable(to)
		}
	}
}

// SendFlow implements Transport. Like Send it never blocks: a report that
// does not fit the peer's queue is dropped (the next one follows soon).
func (t *TCPTransport) SendFlow(to uint64, report []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || t.blocked[to] {
		return
	}
	if p := t.peerLocked(to); p != nil {
		select {
		case p.queue <- outgoing{flow: report}:
		default:
		}
	}
}

// dropLocked stops the stream to member id and closes the read link to
// it. t.mu is held.
func (t *TCPTransport) dropLocked(id uint64) {
	if p := t.peers[id]; p != nil {
		p.stop()
		delete(t.peers, id)
	}
	t.closeLinkLocked(id)
}

// peerLocked returns the connection to member id, started on first use;
// nil when its address is unknown. t.mu is held.
func (t *TCPTransport) peerLocked(id uint64) *peer {
	p := t.peers[id]
	if p == nil {
		addr, ok := t.addrs[id]
		if !ok {
			return nil
		}
		p = newPeer(t, id, addr)
		t.peers[id] = p
	}
	return p
}

func (t *TCPTransport) unreachable(id uint64) {
	if n := t.node.Load(); n != nil {
		n.reportUnreachable(id)
	}
}

// Close stops the transport.
func (t *TCPTransport) Close() {
	t.cancel()
	t.mu.Lock()
	t.closed = true
	for _, p := range t.peers {
		p.stop()
	}
	for id := range t.links {
		t.closeLinkLocked(id)
	}
	for c := range t.inbound {
		c.Close()
	}
	t.mu.Unlock()
	t.ln.Close()
	t.wg.Wait()
}

func (t *TCPTransport) accept() {
	defer t.wg.Done()
	for {
		c, err := t.ln.Accept()
		if err != nil {
			return
		}
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			c.Close()
			return
		}
		t.inbound[c] = struct{}{}
		t.wg.Add(1)
		t.mu.Unlock()
		go func() {
			defer t.wg.Done()
			t.serve(c)
		}()
	}
}

// serve handles one inbound connection, listed in t.inbound, and takes it
// off the list when it ends.
func (t *TCPTransport) serve(c net.Conn) {
	defer func() {
		c.Close()
		t.mu.Lock()
		delete(t.inbound, c)
		t.mu.Unlock()
	}()
	// the hello is read from c itself, without read-ahead: no buffer is
	// given to a peer before it is authenticated
	_ = c.SetReadDeadline(time.Now().Add(helloTimeout))
	typ, payload, err := frame.ReadMax(c, helloMax)
	if err == nil && typ != frameHello {
		err = fmt.Errorf("frame type %d instead of a hello", typ)
	}
	if err != nil {
		t.refusals.warn(t.log, c, "bad handshake: "+err.Error())
		return
	}
	h, reply := t.checkHello(payload)
	if t.isBlocked(h.From) {
		return
	}
	data, _ := json.Marshal(reply)
	if err := frame.Write(c, frameHelloOK, data); err != nil || !reply.OK {
		if !reply.OK {
			t.refusals.warn(t.log, c, reply.Error)
		}
		return
	}
	r := bufio.NewReaderSize(c, 64<<10)
	_ = c.SetReadDeadline(time.Time{})
	for {
		if t.isBlocked(h.From) {
			return
		}
		typ, payload, err := readPeerFrame(r)
		if err != nil {
			if errors.Is(err, frame.ErrTooLarge) {
				t.refusals.warn(t.log, c, err.Error())
			} else if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				t.log.Debug("peer connection closed", "remote", c.RemoteAddr().String(), "err", err)
			}
			return
		}
		switch typ {
		case frameRaft:
			m := &pb.Message{}
			if err := proto.Unmarshal(payload, m); err != nil {
				t.log.Warn("dropping corrupt raft message from peer", "remote", c.RemoteAddr().String(), "err", err)
				return
			}
			if m.GetTo() != t.self {
				continue
			}
			if n := t.node.Load(); n != nil {
				n.core.stats.ReceivedBytes.Add(uint64(len(payload)))
				n.Step(m)
			}
		case frameReadIndex:
			if len(payload) != 8 {
				t.log.Warn("closing peer connection: malformed read index request", "remote", c.RemoteAddr().String(), "len", len(payload))
				return
			}
			if d := t.readDirectly(c, r); d != nil {
				c = d
			}
			if !t.answerReadIndex(c, h.From, payload) {
				return
			}
		case frameFlow:
			if n := t.node.Load(); n != nil {
				if err := n.receiveFlow(h.From, payload); err != nil {
					t.log.Warn("closing peer connection: corrupt flow control report", "remote", c.RemoteAddr().String(), "err", err)
					return
				}
			}
		case frameJoin:
			t.handleJoin(c, payload)
			return
		case frameLeave:
			t.handleLeave(c, h.From)
			return
		case frameStateTransfer:
			h := t.transfer.Load()
			if h == nil {
				t.log.Warn("refusing a state transfer request: this node cannot donate", "remote", c.RemoteAddr().String())
				return
			}
			if err := (*h)(t.ctx, &deadlineConn{c}, payload); err != nil {
				t.log.Debug("state transfer to peer ended", "remote", c.RemoteAddr().String(), "err", err)
			}
			return
		default:
			t.log.Warn("closing peer connection: unknown frame type", "remote", c.RemoteAddr().String(), "type", typ)
			return
		}
	}
}

// checkHello reads a peer's hello and the reply it gets: OK when its
// cluster name and secret match this node's.
func (t *TCPTransport) checkHello(payload []byte) (hello, helloReply) {
	var h hello
	if err := json.Unmarshal(payload, &h); err != nil {
		return hello{}, helloReply{Error: "unreadable hello: " + err.Error()}
	}
	switch {
	case h.Cluster != t.cluster:
		return h, helloReply{Error: fmt.Sprintf("cluster name mismatch: this node is in cluster %q, peer claims %q", t.cluster, h.Cluster)}
	case !hmac.Equal([]byte(h.Auth), []byte(authTag(t.secret, h.Cluster, h.From, h.Nonce))):
		return h, helloReply{Error: "cluster secret mismatch"}
	}
	return h, helloReply{OK: true, NodeID: t.self}
}

// readPeerFrame reads the next frame from an authenticated peer: a raft
// message may take frame.MaxSize, any other frame requestMax.
func readPeerFrame(r *bufio.Reader) (byte, []byte, error) {
	hdr, err := r.Peek(5) // length and type
	if err != nil {
		return 0, nil, err
	}
	if hdr[4] == frameRaft {
		return frame.Read(r)
	}
	return frame.ReadMax(r, requestMax)
}

func (t *TCPTransport) handleJoin(c net.Conn, payload []byte) {
	var req JoinRequest
	reply := JoinReply{}
	n := t.node.Load()
	if err := json.Unmarshal(payload, &req); err != nil {
		reply.Error = "unreadable join request"
	} else if n == nil {
		reply.Error, reply.Retry = "node is starting", true
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		members, err := n.AddMember(ctx, req.Member)
		cancel()
		if err != nil {
			reply.Error = err.Error()
			reply.Retry = !errors.Is(err, ErrDuplicateName)
		} else {
			reply.OK, reply.Members, reply.ClusterUUID = true, members, n.ClusterUUID()
		}
	}
	data, _ := json.Marshal(reply)
	_ = frame.Write(c, frameJoinReply, data)
}

// handleLeave removes the sender of a leave request from the cluster and
// answers once the removal applied here: the leaving node cannot count on
// learning it from raft, which stops talking to a removed member.
func (t *TCPTransport) handleLeave(c net.Conn, from uint64) {
	reply := leaveReply{}
	if n := t.node.Load(); n == nil {
		reply.Error = "node is starting"
	} else {
		ctx, cancel := context.WithTimeout(t.ctx, 30*time.Second)
		err := n.RemoveMember(ctx, from)
		cancel()
		if err != nil {
			reply.Error = err.Error()
		} else {
			reply.OK = true
			t.log.Info("member left the cluster", "id", fmt.Sprintf("%016x", from))
		}
	}
	data, _ := json.Marshal(reply)
	_ = frame.Write(c, frameLeaveReply, data)
}

// requestRemoval asks the member at addr to remove this node and waits
// for its answer.
func (t *TCPTransport) requestRemoval(ctx context.Context, addr string) error {
	c, err := dial(ctx, addr, t.cluster, t.secret, t.self)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := frame.Write(c, frameLeave, []byte("{}")); err != nil {
		return err
	}
	_ = c.SetReadDeadline(time.Now().Add(40 * time.Second))
	typ, payload, err := frame.ReadMax(c, requestMax)
	if err != nil {
		return err
	}
	var reply leaveReply
	if typ != frameLeaveReply || json.Unmarshal(payload, &reply) != nil {
		return fmt.Errorf("%s: unexpected answer to a leave request", addr)
	}
	if !reply.OK {
		return fmt.Errorf("%s: %s", addr, reply.Error)
	}
	return nil
}

// peerDeadAfter is how long data sent to a peer may stay unacknowledged
// (TCP_USER_TIMEOUT) before its connection is dropped and dialed again.
// Without it, a connection that was cut off (a network partition, not a
// closed socket) lived on while TCP retransmitted with exponential
// backoff, so after a partition of 30 s a node took 23 s after the network
// healed to hear from the others again, and up to 2 minutes after longer
// ones; a fresh dial gets through within a second or two. It matches the
// write deadline of a peer stream's small messages.
const peerDeadAfter = 10 * time.Second

// dial connects to addr and completes the handshake.
func dial(ctx context.Context, addr, cluster, secret string, self uint64) (net.Conn, error) {
	d := net.Dialer{Timeout: 3 * time.Second, KeepAlive: 10 * time.Second, Control: peerControl}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	nonce := fmt.Sprintf("%d", time.Now().UnixNano())
	data, _ := json.Marshal(hello{Cluster: cluster, From: self, Nonce: nonce, Auth: authTag(secret, cluster, self, nonce)})
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	// a peer that accepted but does not answer must not hold up stopping
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Now()) })
	defer stop()
	if err := frame.Write(c, frameHello, data); err != nil {
		c.Close()
		return nil, err
	}
	typ, payload, err := frame.ReadMax(c, helloMax)
	if err != nil || typ != frameHelloOK {
		c.Close()
		if err == nil {
			err = fmt.Errorf("unexpected frame %d", typ)
		}
		return nil, fmt.Errorf("handshake with %s: %w", addr, err)
	}
	var reply helloReply
	if err := json.Unmarshal(payload, &reply); err != nil || !reply.OK {
		c.Close()
		if err == nil {
			err = errors.New(reply.Error)
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrPeerRejected, addr, err)
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

// ErrJoinRefused is returned when a member refused a join for a reason
// that retrying cannot fix (a duplicate name, a malformed request).
var ErrJoinRefused = errors.New("replication: join refused")

// Join asks one of addrs to add m to the cluster and returns the members.
// It retries while the cluster cannot take the change yet (no primary
// component, members unreachable) until ctx ends.
func Join(ctx context.Context, addrs []string, cluster, secret string, m Member) (JoinReply, error) {
	backoff := 100 * time.Millisecond
	for {
		reply, err := joinOnce(ctx, addrs, cluster, secret, m)
		if err == nil || errors.Is(err, ErrPeerRejected) || errors.Is(err, ErrJoinRefused) {
			return reply, err
		}
		select {
		case <-ctx.Done():
			return JoinReply{}, fmt.Errorf("could not join through %v: %w", addrs, err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

func joinOnce(ctx context.Context, addrs []string, cluster, secret string, m Member) (JoinReply, error) {
	var lastErr error
	for _, addr := range addrs {
		c, err := dial(ctx, addr, cluster, secret, m.ID)
		if err != nil {
			lastErr = err
			if errors.Is(err, ErrPeerRejected) {
				return JoinReply{}, err
			}
			continue
		}
		data, _ := json.Marshal(JoinRequest{Member: m})
		if err := frame.Write(c, frameJoin, data); err != nil {
			c.Close()
			lastErr = err
			continue
		}
		_ = c.SetReadDeadline(time.Now().Add(40 * time.Second))
		typ, payload, err := frame.ReadMax(c, requestMax)
		c.Close()
		if err != nil || typ != frameJoinReply {
			lastErr = fmt.Errorf("join via %s: %v", addr, err)
			continue
		}
		var reply JoinReply
		if err := json.Unmarshal(payload, &reply); err != nil {
			lastErr = err
			continue
		}
		if !reply.OK {
			if reply.Retry {
				lastErr = fmt.Errorf("join via %s: %s", addr, reply.Error)
				continue
			}
			return reply, fmt.Errorf("%w by %s: %s", ErrJoinRefused, addr, reply.Error)
		}
		return reply, nil
	}
	return JoinReply{}, lastErr
}

// peer is an outbound connection to one member with its send queue.
type peer struct {
	t     *TCPTransport
	id    uint64
	addr  string
	queue chan outgoing
	done  chan struct{}
	once  sync.Once
}

// outgoing is a queued frame: a raft message, or a flow control report.
type outgoing struct {
	m    *pb.Message
	flow []byte
}

func newPeer(t *TCPTransport, id uint64, addr string) *peer {
	p := &peer{t: t, id: id, addr: addr, queue: make(chan outgoing, 4096), done: make(chan struct{})}
	t.wg.Add(1)
	go p.run()
	return p
}

func (p *peer) stop() { p.once.Do(func() { close(p.done) }) }

func (p *peer) run() {
	defer p.t.wg.Done()
	backoff := 50 * time.Millisecond
	var lastLog time.Time
	for {
		select {
		case <-p.done:
			return
		default:
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-p.done:
				cancel()
			case <-ctx.Done():
			}
		}()
		c, err := dial(ctx, p.addr, p.t.cluster, p.t.secret, p.t.self)
		stopping := ctx.Err() != nil && c == nil
		cancel()
		if stopping {
			return
		}
		if err != nil {
			if time.Since(lastLog) > 10*time.Second {
				p.t.log.Warn("cannot reach peer", "peer", fmt.Sprintf("%016x", p.id), "addr", p.addr, "err", err)
				lastLog = time.Now()
			}
			p.drain()
			select {
			case <-p.done:
				return
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, time.Second)
			continue
		}
		backoff = 50 * time.Millisecond
		p.stream(c)
	}
}

// drain drops queued messages while the peer is unreachable and tells raft.
func (p *peer) drain() {
	dropped := false
	for {
		select {
		case <-p.queue:
			dropped = true
		default:
			if dropped {
				p.t.unreachable(p.id)
			}
			return
		}
	}
}

// stream writes queued messages to c until an error or stop.
func (p *peer) stream(c net.Conn) {
	defer c.Close()
	// detect a closed connection: the listener never writes after hello
	closed := make(chan struct{})
	go func() {
		var b [1]byte
		_, _ = c.Read(b[:])
		close(closed)
	}()
	w := bufio.NewWriterSize(c, 256<<10)
	for {
		var o outgoing
		select {
		case <-p.done:
			return
		case <-closed:
			return
		case o = <-p.queue:
		}
		for {
			if !p.write(c, w, o) {
				return
			}
			select {
			case o = <-p.queue:
				continue
			default:
			}
			break
		}
		if err := w.Flush(); err != nil {
			p.broken(err, 0)
			return
		}
	}
}

// write writes one queued frame to w (buffered for c); false: the
// connection broke.
func (p *peer) write(c net.Conn, w *bufio.Writer, o outgoing) bool {
	typ, data := frameFlow, o.flow
	if o.m != nil {
		var err error
		if data, err = proto.Marshal(o.m); err != nil {
			p.t.log.Error("cannot marshal raft message", "err", err)
			return true
		}
		typ = frameRaft
	}
	// a message carrying a huge write-set gets time for its size (at
	// 10 MB/s at least) before the connection counts as dead
	_ = c.SetWriteDeadline(time.Now().Add(peerDeadAfter + time.Duration(len(data))*time.Second/(10<<20)))
	if err := frame.Write(w, typ, data); err != nil {
		p.broken(err, len(data))
		return false
	}
	if n := p.t.node.Load(); n != nil && o.m != nil && o.m.GetType() == pb.MsgApp {
		n.core.stats.SentBytes.Add(uint64(len(data)))
	}
	return true
}

// broken logs a connection that failed while sending: raft messages were
// lost with it (raft sends again; a lost proposal is proposed again by its
// origin).
func (p *peer) broken(err error, size int) {
	select {
	case <-p.done:
		return // stopping
	default:
	}
	p.t.log.Warn("connection to peer broke while sending", "peer", fmt.Sprintf("%016x", p.id), "addr", p.addr, "message_bytes", size, "err", err)
}
