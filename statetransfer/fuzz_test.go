package statetransfer

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"testing"

	"github.com/certusdb/certus/internal/frame"
	"github.com/certusdb/certus/storage"
)

// FuzzJoinerStream hands a joiner a donor's answer made of the frames in
// data (each a type byte, a uvarint length and the payload, framed with a
// valid checksum so the fuzzer gets past it), as Run does after wiping
// the state. Properties: a transfer that the joiner accepts left exactly a
// state whose digest is the one the stream announced, with everything the
// end frame counted; the pairs of a chunk encode back to pairs that decode
// equal. The seeds are the frames of a real donor's stream.
func FuzzJoinerStream(f *testing.F) {
	r := newRig(f, 40)
	req, _ := json.Marshal(Request{Joiner: "j"})
	var real bytes.Buffer
	if err := r.donor.Serve(context.Background(), &real, req); err != nil {
		f.Fatal(err)
	}
	var seed []byte
	for {
		typ, payload, err := frame.Read(&real)
		if err != nil {
			break
		}
		seed = binary.AppendUvarint(append(seed, typ), uint64(len(payload)))
		seed = append(seed, payload...)
	}
	f.Add(seed)
	refusal, _ := json.Marshal(streamError{Error: "no checkpoint", Retry: true})
	f.Add(append(binary.AppendUvarint([]byte{frameError}, uint64(len(refusal))), refusal...))

	j := r.newJoiner()
	var stream []byte // the answer to the next dial
	j.cfg.Dial = func(context.Context, string, []byte) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(stream)), nil
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkChunks(t, data)
		rec := &record{Plan: Plan{Donors: []string{"donor"}}, Donor: "donor"}
		if err := j.wipe(rec); err != nil {
			t.Fatal(err)
		}
		stream = streamOf(data)
		if err := j.fetch(context.Background(), rec); err != nil {
			return
		}
		if rec.Got != rec.Total {
			t.Fatalf("accepted %+v of %+v", rec.Got, rec.Total)
		}
		var got storage.Digest
		it, _ := r.jdb.NewIter(nil)
		defer it.Close()
		for it.First(); it.Valid(); it.Next() {
			if inRanges(ranges, it.Key()) {
				got.Toggle(it.Key(), it.Value())
			}
		}
		if got != rec.Meta.StateDigest {
			t.Fatalf("accepted a state of digest %s announced as %s", got, rec.Meta.StateDigest)
		}
	})
}

// frames calls fn for each frame of a fuzz input.
func frames(data []byte, fn func(typ byte, payload []byte)) {
	for len(data) > 0 {
		typ := data[0]
		n, w := binary.Uvarint(data[1:])
		if w <= 0 || n > uint64(len(data)-1-w) {
			return
		}
		fn(typ, data[1+w:1+w+int(n)])
		data = data[1+w+int(n):]
	}
}

// streamOf frames a fuzz input's frames as a donor sends them.
func streamOf(data []byte) []byte {
	var out []byte
	frames(data, func(typ byte, payload []byte) { out = frame.Append(out, typ, payload) })
	return out
}

// checkChunks decodes each frame of a fuzz input as a chunk and checks
// that its pairs encode back to pairs that decode equal.
func checkChunks(t *testing.T, data []byte) {
	frames(data, func(typ byte, payload []byte) {
		var pairs, again [][2][]byte
		var enc []byte
		if decodePairs(payload, func(k, v []byte) error {
			if cap(k) != len(k) || cap(v) != len(v) {
				t.Fatalf("a pair's key or value can grow into the next")
			}
			pairs = append(pairs, [2][]byte{k, v})
			enc = appendPair(enc, k, v)
			return nil
		}) != nil {
			return
		}
		if err := decodePairs(enc, func(k, v []byte) error {
			again = append(again, [2][]byte{k, v})
			return nil
		}); err != nil || len(again) != len(pairs) {
			t.Fatalf("%d pairs encode to %d pairs (%v)", len(pairs), len(again), err)
		}
		for i := range pairs {
			if !bytes.Equal(pairs[i][0], again[i][0]) || !bytes.Equal(pairs[i][1], again[i][1]) {
				t.Fatalf("pair %d: %q=%q encodes to %q=%q", i, pairs[i][0], pairs[i][1], again[i][0], again[i][1])
			}
		}
	})
}
