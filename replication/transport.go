package replication

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/certusdb/certus/internal/frame"
	"github.com/certusdb/certus/internal/pki"
)

// Peer wire protocol. Every connection starts with a handshake (TLS when
// configured, then a hello frame from the dialer, with a cluster secret a
// challenge and proofs, and a reply from the listener: peersec.go); after
// that the dialer streams frames (package frame). A frame with a bad
// checksum or an unknown type closes the connection and is logged; nothing
// in it is applied.
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
// cluster name, a wrong secret or certificate) or fails this node's.
var ErrPeerRejected = errors.New("replication: peer rejected the connection")

// hello opens a connection: the dialer's cluster, id and nonce.
type hello struct {
	Cluster string `json:"cluster"`
	From    uint64 `json:"from"`
	Nonce   string `json:"nonce"`
}

// helloReply ends the handshake; with a cluster secret, Auth is the
// listener's proof.
type helloReply struct {
	OK     bool   `json:"ok"`
	Error  string `json:"error,omitempty"`
	NodeID uint64 `json:"node_id"`
	Auth   string `json:"auth,omitempty"`
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

// refusalLog rate-limits the warnings about refused peer connections, so
// that a flood of them does not flood the log: at most one line a second,
// which counts the refusals left out since the line before.
type refusalLog struct {
	mu       sync.Mutex
	next     time.Time
	unlogged int
}

func (l *refusalLog) warn(log *slog.Logger, c net.Conn, reason string) {
	l.log(log, "refused peer connection", "remote", c.RemoteAddr().String(), "reason", reason)
}

// log logs msg with args unless a line went out less than a second ago.
func (l *refusalLog) log(log *slog.Logger, msg string, args ...any) {
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
	log.Warn(msg, append(args, "refused_unlogged", unlogged)...)
}

// TCPTransport carries raft messages between members over TCP.
type TCPTransport struct {
	self uint64
	auth peerAuth
	log  *slog.Logger
	ln   net.Listener
	// refusals logs the inbound connections refused at the handshake,
	// dropped logs the frames of authenticated peers refused after it
	refusals, dropped refusalLog

	node atomic.Pointer[Receiver] // see Attach

	mu      sync.Mutex
	blocked map[uint64]bool // fault injection: peers cut off
	peers   map[uint64]*peer
	addrs   map[uint64]string
	// members are the ids whose requests and raft messages are taken,
	// with their names (which a peer's certificate must carry)
	members map[uint64]string
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
	// TLS, when set, carries peer connections over mutual TLS.
	TLS *pki.Peer
	// TLSOptional also takes plain connections, and dials plain when a
	// TLS dial fails: for rolling a cluster to TLS one node at a time.
	TLSOptional bool
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
		self: cfg.Self, log: cfg.Logger, ln: ln,
		auth:  peerAuth{cluster: cfg.ClusterName, secret: cfg.Secret, self: cfg.Self, tls: cfg.TLS, tlsOptional: cfg.TLSOptional && cfg.TLS != nil},
		peers: map[uint64]*peer{}, addrs: map[uint64]string{}, members: map[uint64]string{}, inbound: map[net.Conn]struct{}{},
		blocked: map[uint64]bool{},
		links:   map[uint64]*readLink{}, linkDialing: map[uint64]bool{}, linkFailed: map[uint64]time.Time{},
	}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	t.wg.Add(1)
	go t.accept()
	return t, nil
}

// Security is how this transport's connections are protected.
func (t *TCPTransport) Security() PeerSecurity { return t.auth.security() }

// Receiver is the node as the transport sees it: where what peers send
// goes. *Node is the one; the transport knows no more of it.
type Receiver interface {
	// Step takes a raft message.
	Step(m *pb.Message)
	// AddMember and RemoveMember answer a joiner's and a leaver's
	// request; the joiner learns the ClusterUUID too.
	AddMember(ctx context.Context, m Member) ([]Member, error)
	RemoveMember(ctx context.Context, id uint64) error
	ClusterUUID() string
	// reportUnreachable says that a peer could not be reached.
	reportUnreachable(id uint64)
	// receiveFlow takes a peer's flow control report.
	receiveFlow(from uint64, data []byte) error
	// leaseRead answers a read link's round from the leader's lease, when
	// it holds one.
	leaseRead() (index, term uint64, ok bool)
	// finishLinkRead takes the leader's answer to a read link's round,
	// readLinkDown the news that the link broke.
	finishLinkRead(lead, ctx, index, term uint64)
	readLinkDown()
	// countPeerBytes counts raft payload bytes received and sent.
	countPeerBytes(received, sent int)
}

var _ Receiver = (*Node)(nil)

// Attach sets the node that receives messages; until then inbound raft
// messages are dropped.
func (t *TCPTransport) Attach(r Receiver) { t.node.Store(&r) }

// receiver is the attached node, or nil.
func (t *TCPTransport) receiver() Receiver {
	if r := t.node.Load(); r != nil {
		return *r
	}
	return nil
}

// HandleStateTransfer makes the transport serve state transfer requests
// with h (this node becomes a possible donor).
func (t *TCPTransport) HandleStateTransfer(h TransferHandler) { t.transfer.Store(&h) }

// DialStateTransfer connects to the member at addr and sends it a state
// transfer request; the returned stream is the donor's answer.
func (t *TCPTransport) DialStateTransfer(ctx context.Context, addr string, req []byte) (io.ReadCloser, error) {
	c, err := t.auth.dial(ctx, addr, 0)
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
		if m.ID == t.self {
			continue
		}
		t.members[m.ID] = m.Name
		if m.PeerAddr == "" {
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
	delete(t.members, id)
}

// admits says whether frames from authenticated peer id are taken: false
// when it is cut off (fault injection), and member is whether it is a
// member, whose name is among certNames when the peer came with a
// certificate (certNames not nil).
func (t *TCPTransport) admits(id uint64, certNames []string) (ok, member bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	name, member := t.members[id]
	return !t.blocked[id], member && (certNames == nil || slices.Contains(certNames, name))
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
	if n := t.receiver(); n != nil {
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
func (t *TCPTransport) serve(raw net.Conn) {
	defer func() {
		raw.Close()
		t.mu.Lock()
		delete(t.inbound, raw)
		t.mu.Unlock()
	}()
	c, h, err := t.auth.serverHandshake(raw, t.isBlocked)
	if err != nil {
		if err != errDropped {
			t.refusals.warn(t.log, raw, err.Error())
		}
		return
	}
	certNames := peerCertNames(c)
	r := bufio.NewReaderSize(c, 64<<10)
	for {
		admitted, member := t.admits(h.From, certNames)
		if !admitted {
			return
		}
		typ, payload, err := readPeerFrame(r, member)
		if err != nil {
			if errors.Is(err, frame.ErrTooLarge) || errors.Is(err, ErrRecordAuth) {
				t.refusals.warn(t.log, raw, err.Error())
			} else if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				t.log.Debug("peer connection closed", "remote", raw.RemoteAddr().String(), "err", err)
			}
			return
		}
		// a join is anyone's who passed the handshake; everything else
		// only a member's
		if !member && typ != frameJoin {
			t.dropped.log(t.log, "refused a request from a peer that is not a member", "remote", raw.RemoteAddr().String(), "peer", fmt.Sprintf("%016x", h.From), "type", typ)
			if typ == frameRaft || typ == frameFlow {
				continue // it may be added soon: raft sends again
			}
			return
		}
		switch typ {
		case frameRaft:
			m := &pb.Message{}
			if err := proto.Unmarshal(payload, m); err != nil {
				t.log.Warn("dropping corrupt raft message from peer", "remote", raw.RemoteAddr().String(), "err", err)
				return
			}
			if m.GetFrom() != h.From {
				t.dropped.log(t.log, "dropped a raft message whose sender is not the connection's peer", "remote", raw.RemoteAddr().String(),
					"peer", fmt.Sprintf("%016x", h.From), "from", fmt.Sprintf("%016x", m.GetFrom()))
				continue
			}
			if m.GetTo() != t.self {
				continue
			}
			if n := t.receiver(); n != nil {
				n.countPeerBytes(len(payload), 0)
				n.Step(m)
			}
		case frameReadIndex:
			if len(payload) != 8 {
				t.log.Warn("closing peer connection: malformed read index request", "remote", raw.RemoteAddr().String(), "len", len(payload))
				return
			}
			if c == raw { // a TLS or MAC layer must see every byte
				if d := t.readDirectly(c, r); d != nil {
					c, raw = d, d
				}
			}
			if !t.answerReadIndex(c, h.From, payload) {
				return
			}
		case frameFlow:
			if n := t.receiver(); n != nil {
				if err := n.receiveFlow(h.From, payload); err != nil {
					t.log.Warn("closing peer connection: corrupt flow control report", "remote", raw.RemoteAddr().String(), "err", err)
					return
				}
			}
		case frameJoin:
			t.handleJoin(c, payload, certNames)
			return
		case frameLeave:
			t.handleLeave(c, h.From)
			return
		case frameStateTransfer:
			h := t.transfer.Load()
			if h == nil {
				t.log.Warn("refusing a state transfer request: this node cannot donate", "remote", raw.RemoteAddr().String())
				return
			}
			if err := (*h)(t.ctx, &deadlineConn{c}, payload); err != nil {
				t.log.Debug("state transfer to peer ended", "remote", raw.RemoteAddr().String(), "err", err)
			}
			return
		default:
			t.log.Warn("closing peer connection: unknown frame type", "remote", raw.RemoteAddr().String(), "type", typ)
			return
		}
	}
}

// readPeerFrame reads the next frame from an authenticated peer: a
// member's raft message may take frame.MaxSize, any other frame
// requestMax.
func readPeerFrame(r *bufio.Reader, member bool) (byte, []byte, error) {
	hdr, err := r.Peek(5) // length and type
	if err != nil {
		return 0, nil, err
	}
	if hdr[4] == frameRaft && member {
		return frame.Read(r)
	}
	return frame.ReadMax(r, requestMax)
}

// handleJoin answers a join request; certNames, when not nil, are the
// names the joiner's certificate carries, one of which must be its name.
func (t *TCPTransport) handleJoin(c net.Conn, payload []byte, certNames []string) {
	var req JoinRequest
	reply := JoinReply{}
	n := t.receiver()
	if err := json.Unmarshal(payload, &req); err != nil {
		reply.Error = "unreadable join request"
	} else if certNames != nil && !slices.Contains(certNames, req.Member.Name) {
		reply.Error = fmt.Sprintf("the joiner's certificate is not for the name %q", req.Member.Name)
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
	if n := t.receiver(); n == nil {
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
	c, err := t.auth.dial(ctx, addr, 0)
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

// ErrJoinRefused is returned when a member refused a join for a reason
// that retrying cannot fix (a duplicate name, a malformed request).
var ErrJoinRefused = errors.New("replication: join refused")

// Join asks one of addrs to add m, this transport's node, to the cluster
// and returns the members. It retries while the cluster cannot take the
// change yet (no primary component, members unreachable) until ctx ends.
func (t *TCPTransport) Join(ctx context.Context, addrs []string, m Member) (JoinReply, error) {
	backoff := 100 * time.Millisecond
	for {
		reply, err := t.joinOnce(ctx, addrs, m)
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

func (t *TCPTransport) joinOnce(ctx context.Context, addrs []string, m Member) (JoinReply, error) {
	var lastErr error
	for _, addr := range addrs {
		c, err := t.auth.dial(ctx, addr, 0)
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
		c, err := p.t.auth.dial(ctx, p.addr, p.id)
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
	if n := p.t.receiver(); n != nil && o.m != nil && o.m.GetType() == pb.MsgApp {
		n.countPeerBytes(0, len(data))
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
