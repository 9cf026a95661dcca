package codec

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
)

// TestArenaValues checks that what an arena hands out equals what plain
// allocation gives, stays intact while the arena hands out more and the
// collector runs, and reallocates when appended to.
func TestArenaValues(t *testing.T) {
	var a Arena
	type kept struct {
		row   []any
		b     []byte
		wantB string
	}
	var all []kept
	for i := range 5000 {
		s := strings.Repeat(fmt.Sprint(i%10), i%70)
		if i%997 == 0 {
			s = strings.Repeat("x", arenaLarge+1) // a large value
		}
		row := a.Row(4)
		row[0] = a.String([]byte(s))
		row[1] = a.Int64(int64(i) * 1_000_003)
		row[2] = a.Int64(int64(i % 256))
		row[3] = a.Int32(int32(-i))
		b := a.Bytes([]byte(s))
		all = append(all, kept{row, b, s})
	}
	runtime.GC()
	for i, k := range all {
		want := strings.Repeat(fmt.Sprint(i%10), i%70)
		if i%997 == 0 {
			want = strings.Repeat("x", arenaLarge+1)
		}
		if got, ok := k.row[0].(string); !ok || got != want {
			t.Fatalf("row %d string = %#v, want %q", i, k.row[0], want)
		}
		if got, ok := k.row[1].(int64); !ok || got != int64(i)*1_000_003 {
			t.Fatalf("row %d int = %#v", i, k.row[1])
		}
		if got, ok := k.row[2].(int64); !ok || got != int64(i%256) {
			t.Fatalf("row %d small int = %#v", i, k.row[2])
		}
		if got, ok := k.row[3].(int32); !ok || got != int32(-i) {
			t.Fatalf("row %d int32 = %#v", i, k.row[3])
		}
		if string(k.b) != k.wantB {
			t.Fatalf("bytes %d = %q, want %q", i, k.b, k.wantB)
		}
	}
	// appending to a row or to bytes must not write into a neighbour
	r1, r2 := a.Row(1), a.Row(1)
	r2[0] = "second"
	_ = append(r1, "spill")
	if r2[0] != "second" {
		t.Fatalf("appending to a row overwrote the next one: %v", r2[0])
	}
	b1, b2 := a.Bytes([]byte("ab")), a.Bytes([]byte("cd"))
	_ = append(b1, 'X')
	if string(b2) != "cd" {
		t.Fatalf("appending to bytes overwrote the next ones: %q", b2)
	}
	if a.String(nil) != "" {
		t.Fatal("empty string")
	}
}

// TestArenaAllocations checks the point of the arena: decoding rows into
// it allocates far less than once per row.
func TestArenaAllocations(t *testing.T) {
	ids := []uint32{1, 2, 3, 4}
	l := NewRowLayout(ids)
	data, err := AppendRow(context.Background(), nil, ids, []any{int64(123456), "a string value of some length", int64(7), int32(-100000)})
	if err != nil {
		t.Fatal(err)
	}
	var a Arena
	allocs := testing.AllocsPerRun(1000, func() {
		row := a.Row(4)
		if err := l.DecodeSomeIn(data, row, nil, &a); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 0.1 {
		t.Fatalf("%.2f allocations per decoded row with an arena, want about 0", allocs)
	}
}

// TestArenaStartsSmall checks that a scan returning one row pins little:
// its first chunks are a fraction of full size.
func TestArenaStartsSmall(t *testing.T) {
	var a Arena
	a.Row(4)
	a.Bytes([]byte("key"))
	_ = a.String([]byte("value"))
	if c := cap(a.vals.cur); c >= arenaValues {
		t.Fatalf("first row chunk holds %d values, want a fraction of %d", c, arenaValues)
	}
	if c := cap(a.bytes.cur); c >= arenaBytes {
		t.Fatalf("first byte chunk is %d bytes, want a fraction of %d", c, arenaBytes)
	}
	for range 10 * arenaValues {
		a.Row(1)
	}
	if c := cap(a.vals.cur); c != arenaValues {
		t.Fatalf("row chunks grew to %d values, want %d", c, arenaValues)
	}
}

// TestArenaReset checks that after Reset the arena hands out the memory
// it handed out before, cleared where a row needs it, without allocating
// once it has grown to what the scans need.
func TestArenaReset(t *testing.T) {
	var a Arena
	names := make([][]byte, 100)
	for j := range names {
		names[j] = []byte(fmt.Sprintf("row %d", j))
	}
	rows := make([]sql.Row, 100)
	fill := func(i int) {
		for j := range rows {
			r := a.Row(4)
			r[0] = a.Int64(int64(i*1000 + j + 256))
			r[1] = a.String(names[(i+j)%100])
			r[2] = a.Int32(int32(-j))
			rows[j] = r
		}
	}
	check := func(i int) {
		for j, r := range rows {
			want := sql.Row{int64(i*1000 + j + 256), string(names[(i+j)%100]), int32(-j), nil}
			if !reflect.DeepEqual(r, want) {
				t.Fatalf("scan %d row %d: %v, want %v", i, j, r, want)
			}
		}
	}
	fill(0)
	check(0)
	a.Reset()
	fill(1)
	check(1)
	i := 2
	allocs := testing.AllocsPerRun(20, func() {
		a.Reset()
		fill(i)
		i++
	})
	check(i - 1)
	if allocs > 0 {
		t.Fatalf("%.1f allocations per 100-row scan after Reset, want 0", allocs)
	}
	// a huge scan's memory is not kept for good
	for range 100 {
		fill(i)
	}
	a.Reset()
	if n := len(a.vals.free); n > arenaKeep {
		t.Fatalf("Reset kept %d row chunks, want at most %d", n, arenaKeep)
	}
}

// TestArenaWithoutResetHoldsNothing checks that a scan's own arena, never
// Reset, does not keep the chunks it filled: a scan streaming a huge
// table's rows lets them go as they are consumed.
func TestArenaWithoutResetHoldsNothing(t *testing.T) {
	var a Arena
	for range 100 * arenaValues {
		a.Row(2)
		a.Bytes([]byte("0123456789"))
	}
	if n := len(a.vals.used) + len(a.bytes.used); n > 0 {
		t.Fatalf("an arena never Reset keeps %d filled chunks", n)
	}
}
