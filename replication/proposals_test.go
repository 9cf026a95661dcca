package replication

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/certusdb/certus/certify"
	"github.com/certusdb/certus/writeset"
)

// TestProposals runs testdata/proposals: the policy replication.Node and
// the simulator share for their own write-sets. Times are milliseconds
// from 0; a write-set is named by its Seq, and origins are numbered from 1
// in the order they start. A command that starts a new incarnation prints
// it.
//
//	reset [last=O]                     a new run; O: the last run's origin
//	add seq=N size=B at=T commit=C     proposes N, about B bytes, when the commit index was C
//	logged seq=N index=I / dropped seq=N / overwritten from=I / abandon seq=N
//	tick at=T election=E committed=C horizon=H [primary=false]
//	outcome seq=N seqno=S committed=B reason=R   a copy of N applied at S (R: key, too-old, duplicate)
//	transferred committed=N,... failed=N,...
//	retiring / retired origin=O / clear
func TestProposals(t *testing.T) {
	var (
		p       *Proposals[uint64]
		origins uint64
		ids     map[uint64]writeset.ID
	)
	datadriven.RunTest(t, "testdata/proposals", func(t *testing.T, d *datadriven.TestData) string {
		arg := func(name string) uint64 {
			var v uint64
			if d.HasArg(name) {
				d.ScanArgs(t, name, &v)
			}
			return v
		}
		ms := func(name string) time.Time { return time.UnixMilli(int64(arg(name))) }
		id := func(seq uint64) writeset.ID { return ids[seq] }
		if p == nil || d.Cmd == "reset" {
			origins, ids = 0, map[uint64]writeset.ID{}
			p = NewProposals[uint64](arg("last"), func() uint64 { origins++; return origins })
			if d.Cmd == "reset" {
				return fmt.Sprintf("origin %d\n", p.Origin())
			}
		}
		before := p.Origin()
		out := proposalsCmd(t, d, p, arg, ms, id, ids)
		if o := p.Origin(); o != before {
			out += fmt.Sprintf("new origin %d, retiring %v\n", o, p.retiring)
		}
		return out
	})
}

func proposalsCmd(t *testing.T, d *datadriven.TestData, p *Proposals[uint64], arg func(string) uint64, ms func(string) time.Time, id func(uint64) writeset.ID, ids map[uint64]writeset.ID) string {
	switch d.Cmd {
	case "add":
		value := make([]byte, arg("size"))
		_, _ = rand.NewChaCha8([32]byte{}).Read(value) // (the encoding compresses)
		ws := &writeset.WriteSet{ID: writeset.ID{Seq: arg("seq")}, Ops: []writeset.Op{{Kind: writeset.OpPut, Value: value}}}
		p.Submit(ws, 1, arg("seq"), ms("at"), arg("commit"))
		ids[ws.ID.Seq] = ws.ID
	case "logged":
		p.Logged(id(arg("seq")), arg("index"))
	case "dropped":
		p.Dropped(id(arg("seq")))
	case "overwritten":
		return fmt.Sprintf("%d no longer in the log\n", p.Overwritten(arg("from")))
	case "abandon":
		w, ok := p.Abandon(id(arg("seq")))
		return fmt.Sprintf("%d %v\n", w, ok)
	case "tick":
		primary := true
		if d.HasArg("primary") {
			d.ScanArgs(t, "primary", &primary)
		}
		due := p.Tick(ms("at"), time.Duration(arg("election"))*time.Millisecond, arg("committed"), arg("horizon"), primary)
		var b strings.Builder
		for _, r := range due.Again {
			fmt.Fprintf(&b, "propose %d again (late %v)\n", r.ID.Seq, r.Late)
		}
		for _, w := range due.Lost {
			fmt.Fprintf(&b, "give up on %d\n", w)
		}
		for _, w := range due.NotPrimary {
			fmt.Fprintf(&b, "not primary: give up on %d\n", w)
		}
		return b.String() + fmt.Sprintf("waiting %d\n", p.Len())
	case "retiring":
		return fmt.Sprintf("%v\n", p.Retiring())
	case "retired":
		p.Retired(arg("origin"))
	case "outcome":
		var committed bool
		d.ScanArgs(t, "committed", &committed)
		out := writeset.Outcome{Seqno: arg("seqno"), Committed: committed}
		if d.HasArg("reason") {
			var r string
			d.ScanArgs(t, "reason", &r)
			out.Reason = map[string]certify.Reason{"key": certify.ReasonKey, "too-old": certify.ReasonTooOld, "duplicate": certify.ReasonDuplicate}[r].String()
		}
		s, ok := p.Outcome(id(arg("seq")), out)
		if !ok {
			return "not waiting\n"
		}
		return fmt.Sprintf("%d: committed %v unknown %v\n", s.Waiter, s.Outcome.Committed, s.Unknown)
	case "transferred":
		verdicts := map[uint64]Verdict{}
		for _, a := range d.CmdArgs {
			for _, v := range a.Vals {
				n, _ := strconv.ParseUint(v, 10, 64)
				verdicts[n] = map[string]Verdict{"committed": VerdictCommitted, "rejected": VerdictRejected, "failed": VerdictFailed}[a.Key]
			}
		}
		var b strings.Builder
		for _, s := range p.Transferred(func(id writeset.ID) (uint64, Verdict, bool) {
			v, ok := verdicts[id.Seq]
			return 100 + id.Seq, v, ok
		}) {
			fmt.Fprintf(&b, "%d: seqno %d committed %v rejected %v reason %q unknown %v\n", s.Waiter, s.Outcome.Seqno, s.Outcome.Committed, s.Outcome.Rejected != nil, s.Outcome.Reason, s.Unknown)
		}
		return b.String() + fmt.Sprintf("waiting %d\n", p.Len())
	case "clear":
		return fmt.Sprintf("%v\n", p.Clear())
	default:
		return fmt.Sprintf("unknown command %q\n", d.Cmd)
	}
	return ""
}
