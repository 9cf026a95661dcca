package replication

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"hash/crc32"
	"slices"
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/certusdb/certus/flowcontrol"
	"github.com/certusdb/certus/writeset"
)

// The peer messages' decoders, fed what a peer could send. Each target
// checks a property of what it decodes, not only that nothing panics.

// FuzzHandshake decodes data as each JSON message of the handshake, join
// and leave exchanges. Properties: the listener lets a hello in only when
// its cluster matches, takes data as a proof only when it carries the
// dialer's HMAC of the transcript (and takes the right proof), and every
// message that decodes is a fixed point of encoding after one round (a
// second decode and encode gives the same bytes).
func FuzzHandshake(f *testing.F) {
	const cluster, secret = "certus", "s3cret"
	a := &peerAuth{cluster: cluster, secret: secret, self: 1}
	tr := transcript(cluster, 0x1234, 1, "lnonce", "dnonce")
	right, _ := json.Marshal(proof{Auth: hex.EncodeToString(derive(secret, labelDialer, tr))})
	for _, m := range []any{hello{Cluster: cluster, From: 0x1234, Nonce: "dnonce"}, hello{Cluster: "other", From: 7, Nonce: "1"},
		challenge{NodeID: 1, Nonce: "lnonce"}, proof{Auth: "00"}, json.RawMessage(right),
		helloReply{OK: true, NodeID: 9, Auth: "ab"}, helloReply{Error: "cluster secret mismatch"},
		JoinRequest{Member: Member{ID: 3, Name: "n3", PeerAddr: "127.0.0.1:4567", SQLAddr: "127.0.0.1:3306"}},
		JoinReply{OK: true, ClusterUUID: "6c0e", Members: []Member{{ID: 1, Name: "n1", PeerAddr: "10.0.0.1:4567", Arbitrator: true}}},
		JoinReply{Error: "node is starting", Retry: true}, leaveReply{OK: true}} {
		data, _ := json.Marshal(m)
		f.Add(data)
	}
	if !a.checkProof(right, tr) {
		f.Fatal("the right proof is refused")
	}
	f.Fuzz(func(tt *testing.T, data []byte) {
		h, reason := a.checkHello(data)
		if (reason == "") != (json.Unmarshal(data, new(hello)) == nil && h.Cluster == cluster) {
			tt.Fatalf("hello %+v: refusal %q", h, reason)
		}
		if a.checkProof(data, tr) && !bytes.Equal(data, right) {
			var p proof
			_ = json.Unmarshal(data, &p)
			if !bytes.Equal(unhex(p.Auth), derive(secret, labelDialer, tr)) {
				tt.Fatalf("proof %q taken", data)
			}
		}
		jsonFixedPoint[hello](tt, data)
		jsonFixedPoint[challenge](tt, data)
		jsonFixedPoint[proof](tt, data)
		jsonFixedPoint[helloReply](tt, data)
		jsonFixedPoint[JoinRequest](tt, data)
		jsonFixedPoint[JoinReply](tt, data)
		jsonFixedPoint[leaveReply](tt, data)
		jsonFixedPoint[ccContext](tt, data)
		jsonFixedPoint[snapshotData](tt, data)
	})
}

// jsonFixedPoint decodes data as a T as the transport does and, when it
// decodes, checks that encoding it is stable from the first round on.
func jsonFixedPoint[T any](t *testing.T, data []byte) {
	var v T
	if json.Unmarshal(data, &v) != nil {
		return
	}
	first, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%T decoded from %q does not encode: %v", v, data, err)
	}
	var again T
	if err := json.Unmarshal(first, &again); err != nil {
		t.Fatalf("%T encoded as %s does not decode: %v", v, first, err)
	}
	if second, _ := json.Marshal(again); !bytes.Equal(first, second) {
		t.Fatalf("%T from %q encodes as %s, then as %s", v, data, first, second)
	}
}

// FuzzRaftMessage decodes data as the transport decodes a raft frame, and
// its entries as the apply stage does (view, configuration change,
// write-set). Properties: a message that decodes encodes to one that
// decodes equal, and so does a view, also when the entry is sealed with a
// valid magic and checksum.
func FuzzRaftMessage(f *testing.F) {
	to, from, term, index := uint64(2), uint64(1), uint64(3), uint64(41)
	ws := (&writeset.WriteSet{ID: writeset.ID{Origin: 1, Seq: 7}, LastSeen: 40,
		Tables: []writeset.Table{{ID: 5, SchemaPos: 2}},
		Keys:   []writeset.Key{{Kind: writeset.KeyRow, Key: []byte("t\x00\x05r\x01"), Pos: 40}},
		Ops:    []writeset.Op{{Kind: writeset.OpPut, TableID: 5, Key: []byte("\x01"), Value: []byte("row")}}}).Encode(nil)
	cc, _ := proto.Marshal(&pb.ConfChangeV2{Changes: []*pb.ConfChangeSingle{{Type: pb.ConfChangeAddLearnerNode.Enum(), NodeId: new(uint64(3))}},
		Context: []byte(`{"member":{"id":3,"name":"n3","peer_addr":"127.0.0.1:4567"}}`)})
	snap, _ := json.Marshal(snapshotData{ClusterUUID: "6c0e", Donors: []string{"127.0.0.1:4567"}, Members: []Member{{ID: 1, Name: "n1"}}})
	for _, m := range []*pb.Message{
		{Type: pb.MsgApp.Enum(), To: &to, From: &from, Term: &term, Index: &index, LogTerm: &term, Commit: &index,
			Entries: []*pb.Entry{{Term: &term, Index: new(index + 1), Data: ws}, {Term: &term, Index: new(index + 2), Data: encodeView([]uint64{1, 2, 3})},
				{Type: pb.EntryConfChangeV2.Enum(), Term: &term, Index: new(index + 3), Data: cc}}},
		{Type: pb.MsgHeartbeat.Enum(), To: &to, From: &from, Term: &term, Commit: &index, Context: noticeCtx},
		{Type: pb.MsgSnap.Enum(), To: &to, From: &from, Term: &term, Snapshot: &pb.Snapshot{Data: snap,
			Metadata: &pb.SnapshotMetadata{Index: &index, Term: &term, ConfState: &pb.ConfState{Voters: []uint64{1, 2}}}}},
	} {
		data, _ := proto.Marshal(m)
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkView(t, data)
		checkView(t, sealView(data))
		m := &pb.Message{}
		if proto.Unmarshal(data, m) != nil {
			return
		}
		again, err := proto.Marshal(m)
		if err != nil {
			t.Fatalf("decoded message does not encode: %v", err)
		}
		m2 := &pb.Message{}
		if err := proto.Unmarshal(again, m2); err != nil || !proto.Equal(m, m2) {
			t.Fatalf("message %v encodes to one that decodes as %v (%v)", m, m2, err)
		}
		for _, e := range m.GetEntries() {
			switch e.GetType() {
			case pb.EntryConfChange, pb.EntryConfChangeV2:
				if cc, err := decodeConfChange(e); err == nil {
					_ = cc.AsV2().GetChanges()
				}
			default:
				checkView(t, e.GetData())
				if ws, err := writeset.Decode(e.GetData()); err == nil && ws == nil {
					t.Fatal("write-set decoded as nil")
				}
			}
		}
	})
}

// sealView makes body the body of a view entry with a valid checksum.
func sealView(body []byte) []byte {
	b := encodeView(nil)
	b = append(b[:len(viewMagic)], body...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
}

// checkView decodes data as a view entry and checks that a view that
// decodes encodes to one that decodes equal.
func checkView(t *testing.T, data []byte) {
	ids, isView, ok := decodeView(data)
	if ok && !isView {
		t.Fatalf("%x: not a view, yet decoded", data)
	}
	if !ok {
		return
	}
	if again, _, ok := decodeView(encodeView(ids)); !ok || !slices.Equal(again, ids) {
		t.Fatalf("view %x decoded as %v, which encodes to %v", data, ids, again)
	}
}

// FuzzReadLink decodes a frame of a read link (the follower's request,
// the leader's answer that carries the commit notice) and a flow control
// report. Properties: an answer decodes only from its type and 24 bytes,
// and encodes back to them; a report that decodes encodes back to its
// bytes.
func FuzzReadLink(f *testing.F) {
	f.Add(frameReadIndexResp, ReadAnswer{Ctx: 77, Index: 1041, Term: 3}.encode())
	f.Add(frameReadIndex, binary.BigEndian.AppendUint64(nil, 77))
	f.Add(frameFlow, flowcontrol.Report{Over: true, Queue: 250, Rate: 812.5}.Encode(nil))
	f.Fuzz(func(t *testing.T, typ byte, payload []byte) {
		a, ok := decodeReadAnswer(typ, payload)
		if ok != (typ == frameReadIndexResp && len(payload) == 24) {
			t.Fatalf("type %d, %d bytes: decoded %v", typ, len(payload), ok)
		}
		if ok && !bytes.Equal(a.encode(), payload) {
			t.Fatalf("answer %x decoded as %+v, which encodes as %x", payload, a, a.encode())
		}
		if r, err := flowcontrol.DecodeReport(payload); err == nil && !bytes.Equal(r.Encode(nil), payload) {
			t.Fatalf("report %x decoded as %+v, which encodes as %x", payload, r, r.Encode(nil))
		}
	})
}
