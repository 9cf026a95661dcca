package writeset

import (
	"encoding/binary"
	"hash/crc32"
	"testing"
)

// FuzzDecode decodes data as it arrives in a log entry, and again with
// its checksum made valid, so that the fuzzer reaches past the checksum.
// Properties: a write-set that decodes has an ID PeekID agrees with, and
// encodes within Size to bytes that decode equal (roundTrip).
func FuzzDecode(f *testing.F) {
	f.Add(sample().Encode(nil))
	ws := sample()
	ws.Flags = FlagFragment | FlagStreamSealed
	ws.Stream = Stream{ID: ID{Origin: 0xdef, Seq: 7}, Node: 3, Frag: 12}
	f.Add(ws.Encode(nil))
	f.Add((&WriteSet{ID: ID{Origin: 1, Seq: 2}, LastSeen: 3, Flags: FlagHeartbeat}).Encode(nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecode(t, data)
		if len(data) >= 8 {
			sealed := append([]byte(nil), data[:len(data)-4]...)
			checkDecode(t, binary.LittleEndian.AppendUint32(sealed, crc32.Checksum(sealed, crcTable)))
		}
	})
}

func checkDecode(t *testing.T, data []byte) {
	ws, err := Decode(data)
	if err != nil {
		return
	}
	if id, ok := PeekID(data); !ok || id != ws.ID {
		t.Fatalf("PeekID %v (%v), Decode %v", id, ok, ws.ID)
	}
	roundTrip(t, ws)
}
