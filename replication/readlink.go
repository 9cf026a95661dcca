package replication

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/certusdb/certus/internal/directio"
	"github.com/certusdb/certus/internal/frame"
)

// Read links.
//
// Through raft, a follower's causal read crosses both raft loops and waits
// behind the log entries queued on both peer streams: on a busy cluster
// that was most of a 5-7 ms round trip. A follower therefore keeps a read
// link to the leader, a connection of its own that carries nothing else.
// It sends a round's context; the leader's connection goroutine answers at
// once with its commit index and term (the follower commits from them, see
// LearnCommit) when it holds a published lease (Core.LeaseRead), and
// otherwise steps the request into raft as the MsgReadIndex the follower
// would have sent, so raft answers it over the raft stream (or forwards it
// to the leader it knows). Either answer
// finishes the round. When a link breaks, its rounds are asked through
// raft again; a round no one answers fails after an election timeout, as
// through raft.
const (
	frameReadIndex     byte = 10 // read link request: the round's context (8 bytes)
	frameReadIndexResp byte = 11 // read link answer: the context, the commit index and the leader's term (8 bytes each)
)

// linkRedial is how long after a failed dial a read link is not tried
// again (rounds go through raft meanwhile).
const linkRedial = time.Second

// linkWriteTimeout bounds a read link request's write (a leader that
// stopped reading); the link is then closed and its rounds go through
// raft.
const linkWriteTimeout = time.Second

// readLink is a follower's connection to a leader for read requests.
type readLink struct {
	c  net.Conn
	mu sync.Mutex // serializes requests
}

// SendReadIndex asks member to for a read index over the read link; false
// when no link to it is up (one is dialed in the background).
func (t *TCPTransport) SendReadIndex(to, ctx uint64) bool {
	t.mu.Lock()
	if t.closed || t.blocked[to] {
		t.mu.Unlock()
		return false
	}
	l := t.links[to]
	if l == nil {
		t.dialLinkLocked(to)
		t.mu.Unlock()
		return false
	}
	t.mu.Unlock()
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], ctx)
	l.mu.Lock()
	_ = l.c.SetWriteDeadline(time.Now().Add(linkWriteTimeout))
	err := frame.Write(l.c, frameReadIndex, b[:])
	l.mu.Unlock()
	if err != nil {
		l.c.Close() // its reader ends and reports the link down
		return false
	}
	return true
}

// dialLinkLocked starts dialing a read link to member id unless one is
// being dialed or the last dial failed recently. t.mu is held.
func (t *TCPTransport) dialLinkLocked(id uint64) {
	addr, ok := t.addrs[id]
	if !ok || t.linkDialing[id] || time.Since(t.linkFailed[id]) < linkRedial {
		return
	}
	t.linkDialing[id] = true
	t.wg.Add(1)
	go t.runLink(id, addr)
}

// runLink dials a read link and reads its answers until it breaks.
func (t *TCPTransport) runLink(id uint64, addr string) {
	defer t.wg.Done()
	c, err := t.auth.dial(t.ctx, addr, id)
	t.mu.Lock()
	delete(t.linkDialing, id)
	if err == nil && (t.closed || t.blocked[id] || t.addrs[id] != addr) {
		c.Close()
		err = net.ErrClosed
	}
	if err != nil {
		t.linkFailed[id] = time.Now()
		t.mu.Unlock()
		return
	}
	l := &readLink{c: c}
	t.links[id] = l
	t.mu.Unlock()

	t.readAnswers(id, l)

	t.mu.Lock()
	if t.links[id] == l {
		delete(t.links, id)
	}
	t.mu.Unlock()
	if n := t.receiver(); n != nil {
		n.readLinkDown()
	}
}

// readAnswers hands the answers arriving on l to the node until the link
// breaks or carries something else. It reads through Go's poller. A thread
// blocked in read(2) learned of an answer sooner (under write load a
// causal read right after a write took 2.3-2.7 ms instead of 3.1 ms), but
// each answer then woke that thread, which had to find a processor and
// hand the answered sessions to another: 200-260 µs more of the
// follower's CPU per causal read, and 8 oltp_read_only sessions on a
// follower of an idle cluster lost 44-51% of their throughput to
// wsrep_sync_wait=3 instead of 8-16% (see DESIGN.md).
func (t *TCPTransport) readAnswers(id uint64, l *readLink) {
	defer l.c.Close()
	r := bufio.NewReader(l.c)
	for {
		typ, payload, err := frame.ReadMax(r, requestMax)
		if err != nil {
			return
		}
		a, ok := decodeReadAnswer(typ, payload)
		if !ok {
			t.log.Warn("closing read link: unexpected frame", "peer", fmt.Sprintf("%016x", id), "type", typ, "len", len(payload))
			return
		}
		if n := t.receiver(); n != nil {
			n.finishLinkRead(id, a.Ctx, a.Index, a.Term)
		}
	}
}

// ReadAnswer is a read link's answer: the round's context, the leader's
// commit index and its term.
type ReadAnswer struct{ Ctx, Index, Term uint64 }

func (a ReadAnswer) encode() []byte {
	b := binary.BigEndian.AppendUint64(nil, a.Ctx)
	b = binary.BigEndian.AppendUint64(b, a.Index)
	return binary.BigEndian.AppendUint64(b, a.Term)
}

// decodeReadAnswer reads a frame of a read link as an answer; ok is false
// for any other frame.
func decodeReadAnswer(typ byte, payload []byte) (a ReadAnswer, ok bool) {
	if typ != frameReadIndexResp || len(payload) != 24 {
		return ReadAnswer{}, false
	}
	return ReadAnswer{binary.BigEndian.Uint64(payload), binary.BigEndian.Uint64(payload[8:]), binary.BigEndian.Uint64(payload[16:])}, true
}

// closeLinkLocked closes the read link to member id, if any. t.mu is
// held.
func (t *TCPTransport) closeLinkLocked(id uint64) {
	if l := t.links[id]; l != nil {
		l.c.Close()
		delete(t.links, id)
	}
}

// servedLinks counts the read links this node answers as a leader. They
// are read directly (internal/directio): under load a goroutine parked on
// the poller learned of a request about a millisecond later than a thread
// blocked in read(2) did, and the request is most of a causal read's wait.
var servedLinks = directio.Group{PerProc: 16}

// readDirectly moves inbound connection c, which just carried a read link
// request, out of the poller (see servedLinks) and returns the connection
// to use from now on, or nil to keep c: when it is one already, when r
// holds bytes read ahead (the next request comes through the poller and
// is tried again), or when the socket cannot be moved. r reads from the
// returned connection.
func (t *TCPTransport) readDirectly(c net.Conn, r *bufio.Reader) *directio.Conn {
	if _, ok := c.(*directio.Conn); ok || r.Buffered() > 0 {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	d := directio.New(c, &servedLinks)
	if d == nil {
		return nil
	}
	_ = d.SetWriteTimeout(linkWriteTimeout)
	delete(t.inbound, c)
	t.inbound[d] = struct{}{}
	r.Reset(d)
	return d
}

// answerReadIndex answers a read link request from member from on c: from
// the lease at once, or else through raft. It returns false when c broke.
func (t *TCPTransport) answerReadIndex(c net.Conn, from uint64, rctx []byte) bool {
	n := t.receiver()
	if n == nil {
		return true // not started: the round fails after a timeout
	}
	a, step := AnswerReadLink(n.leaseRead, t.self, from, rctx)
	if step != nil {
		n.Step(step)
		return true
	}
	if _, direct := c.(*directio.Conn); !direct { // else bounded by its write timeout
		_ = c.SetWriteDeadline(time.Now().Add(linkWriteTimeout))
	}
	return frame.Write(c, frameReadIndexResp, a.encode()) == nil
}

// AnswerReadLink is a leader's (self's) answer to read link request rctx
// (8 bytes) from member from: its commit index and term from its published
// lease (leaseRead, Core.LeaseRead), or, without one, the MsgReadIndex to
// step into raft for the follower, which raft answers over the raft
// stream or forwards to the leader it knows.
func AnswerReadLink(leaseRead func() (index, term uint64, ok bool), self, from uint64, rctx []byte) (ReadAnswer, *pb.Message) {
	if idx, term, ok := leaseRead(); ok {
		return ReadAnswer{Ctx: binary.BigEndian.Uint64(rctx), Index: idx, Term: term}, nil
	}
	return ReadAnswer{}, &pb.Message{Type: pb.MsgReadIndex.Enum(), From: &from, To: &self, Entries: []*pb.Entry{{Data: rctx}}}
}
