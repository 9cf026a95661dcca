package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/certusdb/certus/replication"
	"github.com/certusdb/certus/statetransfer"
)

// State transfers in the simulation. Every node has a donor and a joiner
// of package statetransfer; a joiner reaches a donor through an in-process
// pipe. The seed decides whether a stream is cut part way (the joiner must
// resume it) and whether the joiner "crashes" in the middle of a transfer
// (its node goes down and must finish the transfer when it restarts). The
// transfer runs inside the joiner's Process, so it is atomic in simulated
// time; only the data it moves is checked by the invariants.

// maxTransferAttempts is how many failed connections a transfer survives
// before the simulated node gives up (as if it crashed) until its restart.
const maxTransferAttempts = 8

func (n *node) openTransfer() error {
	ranges := replication.StateRanges()
	donor, err := statetransfer.NewDonor(statetransfer.DonorConfig{
		DB: n.eng.DB(), FS: n.fs, Dir: "sst", Ranges: ranges,
		Describe: replication.DescribeState, Applied: n.eng.Applied,
		WaitBehind: time.Millisecond, ChunkBytes: 512, Logger: n.w.log,
	})
	if err != nil {
		return err
	}
	n.donor = donor
	n.transferCtx, n.transferCancel = context.WithCancel(context.Background())
	n.joiner = statetransfer.NewJoiner(statetransfer.JoinerConfig{
		Name: n.member.Name, DB: n.eng.DB(), FS: n.fs, TempDir: "sst-incoming", FileBytes: 2 << 10, Ranges: ranges, RecordKey: replication.TransferRecordKey,
		Dial: n.dialDonor, RetryDelay: time.Nanosecond, Logger: n.w.log,
	})
	n.attempts = 0
	return nil
}

// dialDonor connects the node's joiner to the donor at addr.
func (n *node) dialDonor(ctx context.Context, addr string, req []byte) (io.ReadCloser, error) {
	w := n.w
	n.attempts++
	if n.attempts > maxTransferAttempts {
		w.event("n%d gives up its state transfer", n.id)
		n.transferFailed = true
		n.transferCancel()
		return nil, errors.New("simulated crash during state transfer")
	}
	slot, err := strconv.ParseUint(strings.TrimPrefix(addr, "sim:"), 10, 64)
	if err != nil || slot == 0 || slot > uint64(len(w.nodes)) {
		return nil, fmt.Errorf("no such donor %q", addr)
	}
	d := w.nodes[slot-1] // (the node at that address now)
	id := d.id
	if !d.up || d.joining || d.pausedUntil > w.tick || w.net.cut[[2]uint64{n.id, id}] {
		w.event("n%d cannot reach donor n%d", n.id, id)
		return nil, fmt.Errorf("donor n%d unreachable", id)
	}
	client, server := net.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = d.donor.Serve(ctx, server, req)
		server.Close()
	}()
	p := &pipeConn{Reader: client, c: client, done: done}
	fault := 7 // none in the quiet phase
	if !w.quiet {
		fault = w.r.Intn(8)
	}
	switch fault {
	case 0, 1:
		cut := int64(w.r.Intn(12 << 10))
		w.event("n%d transfer from n%d cut after %d bytes", n.id, id, cut)
		p.Reader = io.LimitReader(client, cut)
	case 2:
		// the joiner dies part way: it must finish the transfer when
		// it restarts
		cut := int64(w.r.Intn(12 << 10))
		w.event("n%d transfer from n%d; n%d crashes after %d bytes", n.id, id, n.id, cut)
		p.Reader = io.LimitReader(client, cut)
		p.atCut = func() {
			n.transferFailed = true
			n.transferCancel()
		}
	default:
		w.event("n%d transfer from n%d", n.id, id)
	}
	return p, nil
}

// pipeConn is the joiner's end of a transfer pipe; Close waits for the
// donor's goroutine so none outlives the transfer.
type pipeConn struct {
	io.Reader
	c     net.Conn
	done  chan struct{}
	atCut func() // called when a cut stream ends
}

func (p *pipeConn) Read(b []byte) (int, error) {
	n, err := p.Reader.Read(b)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
		if p.atCut != nil {
			p.atCut()
			p.atCut = nil
		}
	}
	return n, err
}

func (p *pipeConn) Close() error {
	err := p.c.Close()
	<-p.done
	return err
}
