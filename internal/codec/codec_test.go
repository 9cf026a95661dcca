package codec

import (
	"bytes"
	"context"
	"math"
	"math/rand"
	"reflect"
	"testing"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"
	"github.com/shopspring/decimal"
)

// keyTypes are the column types whose key order is checked against
// go-mysql-server's own Compare.
var keyTypes = []sql.Type{
	types.Int8, types.Int32, types.Int64, types.Uint8, types.Uint64,
	types.Float32, types.Float64,
	types.MustCreateDecimalType(20, 6),
	types.MustCreateStringWithDefaults(sqltypes.VarChar, 100),
	types.MustCreateString(sqltypes.VarChar, 100, sql.Collation_utf8mb4_0900_bin),
	types.MustCreateString(sqltypes.VarChar, 100, sql.Collation_utf8mb4_general_ci),
	types.MustCreateBinary(sqltypes.VarBinary, 100),
	types.Datetime, types.Date, types.Time, types.Year,
}

func randomValue(r *rand.Rand, t sql.Type) any {
	if r.Intn(10) == 0 {
		return nil
	}
	var v any
	switch {
	case types.IsFloat(t):
		v = (r.Float64() - 0.5) * math.Pow(10, float64(r.Intn(20)-10))
	case types.IsDecimal(t):
		v = decimal.New(r.Int63n(2_000_000_000)-1_000_000_000, int32(-r.Intn(6)))
	case types.IsBinaryType(t) || types.IsText(t):
		alphabet := []rune("aAbB zZ\x00éÉ😀")
		n := r.Intn(6)
		rs := make([]rune, n)
		for i := range rs {
			rs[i] = alphabet[r.Intn(len(alphabet))]
		}
		v = string(rs)
	case types.IsTimespan(t):
		v = types.Timespan(r.Int63n(1_000_000_000_000) - 500_000_000_000)
	case types.IsTime(t):
		v = time.Unix(r.Int63n(4_000_000_000)-1_000_000_000, int64(r.Intn(1e6))*1000).UTC()
	case types.IsYear(t):
		v = int16(1901 + r.Intn(250))
	default:
		v = r.Int63() - r.Int63()
	}
	cv, _, err := t.Convert(context.Background(), v)
	if err != nil {
		return nil
	}
	return cv
}

func TestKeyOrderMatchesTypeCompare(t *testing.T) {
	ctx := sql.NewEmptyContext()
	r := rand.New(rand.NewSource(1))
	for _, typ := range keyTypes {
		kc := KeyColumnFor(typ, 0)
		if kc.Kind == KindUnsupported {
			t.Fatalf("%s: unsupported", typ)
		}
		for i := 0; i < 2000; i++ {
			a, b := randomValue(r, typ), randomValue(r, typ)
			ka, err := kc.AppendKey(nil, a)
			if err != nil {
				t.Fatalf("%s: encode %v: %v", typ, a, err)
			}
			kb, err := kc.AppendKey(nil, b)
			if err != nil {
				t.Fatalf("%s: encode %v: %v", typ, b, err)
			}
			// An index orders NULL first (go-mysql-server's Compare puts it last).
			var want int
			switch {
			case a == nil && b == nil:
				want = 0
			case a == nil:
				want = -1
			case b == nil:
				want = 1
			default:
				want, err = typ.Compare(ctx, a, b)
				if err != nil {
					t.Fatal(err)
				}
			}
			if got := bytes.Compare(ka, kb); got != want {
				t.Fatalf("%s: compare(%#v, %#v) = %d, keys give %d (%x vs %x)", typ, a, b, want, got, ka, kb)
			}
		}
	}
}

func TestTupleKeysCompareColumnByColumn(t *testing.T) {
	s := KeyColumnFor(types.Text, 0)
	i := KeyColumnFor(types.Int64, 0)
	enc := func(str string, n int64) []byte {
		k, _ := s.AppendKey(nil, str)
		k, _ = i.AppendKey(k, n)
		return k
	}
	// "ab" sorts before "abc" whatever the second column holds.
	if bytes.Compare(enc("ab", math.MaxInt64), enc("abc", math.MinInt64)) >= 0 {
		t.Fatal("prefix string did not sort first")
	}
	if bytes.Compare(enc("ab", 1), enc("ab", 2)) >= 0 {
		t.Fatal("second column did not order equal first columns")
	}
}

func TestCaseInsensitiveKeysAreEqual(t *testing.T) {
	kc := KeyColumnFor(types.MustCreateString(sqltypes.VarChar, 10, sql.Collation_utf8mb4_0900_ai_ci), 0)
	a, _ := kc.AppendKey(nil, "Hello")
	b, _ := kc.AppendKey(nil, "hELLO")
	if !bytes.Equal(a, b) {
		t.Fatalf("ci keys differ: %x %x", a, b)
	}
}

func TestRowRoundTrip(t *testing.T) {
	ctx := context.Background()
	vals := []any{
		nil, int8(-3), int16(300), int32(-70000), int64(math.MinInt64),
		uint8(250), uint16(65000), uint32(4e9), uint64(math.MaxUint64),
		float32(1.5), math.Inf(-1), decimal.RequireFromString("-12.3400"),
		"héllo", []byte{0, 1, 2}, time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC),
		types.Timespan(-123456789), types.Point{SRID: 4326, X: 1, Y: 2},
	}
	ids := make([]uint32, len(vals))
	for i := range ids {
		ids[i] = uint32(i*3 + 1)
	}
	data, err := AppendRow(ctx, nil, ids, vals)
	if err != nil {
		t.Fatal(err)
	}
	got, err := NewRowLayout(ids).DecodeRow(data)
	if err != nil {
		t.Fatal(err)
	}
	// a partial decode gives the marked columns and nil elsewhere
	want := make([]bool, len(vals))
	for i := range want {
		want[i] = i%3 == 1
	}
	some := make(sql.Row, len(vals))
	if err := NewRowLayout(ids).DecodeSome(data, some, want); err != nil {
		t.Fatal(err)
	}
	for i := range vals {
		if !want[i] && some[i] != nil {
			t.Fatalf("col %d not wanted but decoded: %#v", i, some[i])
		}
		if want[i] && !reflect.DeepEqual(some[i], got[i]) {
			t.Fatalf("col %d: partial %#v != full %#v", i, some[i], got[i])
		}
	}
	for i := range vals {
		if d, ok := vals[i].(decimal.Decimal); ok {
			if g := got[i].(decimal.Decimal); !d.Equal(g) || d.Exponent() != g.Exponent() {
				t.Fatalf("col %d: %v != %v", i, vals[i], got[i])
			}
			continue
		}
		if !reflect.DeepEqual(vals[i], got[i]) {
			t.Fatalf("col %d: %#v != %#v", i, vals[i], got[i])
		}
	}
}

func TestRowSchemaEvolution(t *testing.T) {
	ctx := context.Background()
	data, err := AppendRow(ctx, nil, []uint32{1, 2, 3}, []any{int64(1), "dropped", int64(3)})
	if err != nil {
		t.Fatal(err)
	}
	// column 2 dropped, column 4 added
	row, err := NewRowLayout([]uint32{1, 3, 4}).DecodeRow(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(row, sql.Row{int64(1), int64(3), nil}) {
		t.Fatalf("got %v", row)
	}
}

func TestJSONRoundTrip(t *testing.T) {
	ctx := context.Background()
	doc := types.MustJSON(`{"a": [1, 2.5, "x", null, true]}`)
	data, err := AppendRow(ctx, nil, []uint32{1}, []any{doc})
	if err != nil {
		t.Fatal(err)
	}
	row, err := NewRowLayout([]uint32{1}).DecodeRow(data)
	if err != nil {
		t.Fatal(err)
	}
	cmp, err := types.CompareJSON(ctx, doc, row[0].(sql.JSONWrapper))
	if err != nil || cmp != 0 {
		t.Fatalf("json differs: %v %v", row[0], err)
	}
}

// FuzzDecodeRow checks that arbitrary bytes never panic the decoder and that
// whatever decodes re-encodes to the same bytes.
func FuzzDecodeRow(f *testing.F) {
	ctx := context.Background()
	seed, _ := AppendRow(ctx, nil, []uint32{1, 2, 3}, []any{int64(7), "abc", nil})
	f.Add(seed)
	f.Add([]byte{rowVersion, 1, 1, tDecimal, 3, '1', '.', '5'})
	f.Fuzz(func(t *testing.T, data []byte) {
		layout := NewRowLayout([]uint32{0, 1, 2, 3, 4})
		_, _ = layout.DecodeRow(data)
		_ = layout.DecodeSome(data, make(sql.Row, 5), []bool{false, true})
	})
}

// FuzzKeyOrder checks the key encoding's order against Type.Compare for
// fuzzed integers, floats and strings.
func FuzzKeyOrder(f *testing.F) {
	f.Add(int64(1), int64(-1), 1.5, -0.0, "a", "B")
	f.Fuzz(func(t *testing.T, a, b int64, fa, fb float64, sa, sb string) {
		ctx := sql.NewEmptyContext()
		check := func(typ sql.Type, x, y any) {
			kc := KeyColumnFor(typ, 0)
			cx, _, err1 := typ.Convert(ctx, x)
			cy, _, err2 := typ.Convert(ctx, y)
			if err1 != nil || err2 != nil {
				return
			}
			kx, err1 := kc.AppendKey(nil, cx)
			ky, err2 := kc.AppendKey(nil, cy)
			if err1 != nil || err2 != nil {
				return // malformed strings are rejected, not mis-ordered
			}
			want, err := typ.Compare(ctx, cx, cy)
			if err != nil {
				return
			}
			if got := bytes.Compare(kx, ky); got != want {
				t.Fatalf("%s: %#v vs %#v: compare %d, keys %d", typ, cx, cy, want, got)
			}
		}
		check(types.Int64, a, b)
		if !math.IsNaN(fa) && !math.IsNaN(fb) {
			check(types.Float64, fa, fb)
		}
		check(types.LongText, sa, sb)
		check(types.LongBlob, sa, sb)
	})
}

// TestSkipValueMatchesDecode skips every kind of encoded value and checks
// it ends where decoding ends (numbers are skipped without decoding them).
func TestSkipValueMatchesDecode(t *testing.T) {
	ctx := context.Background()
	for _, v := range []any{nil, int8(-3), int16(300), int32(-70000), int64(1) << 40, -1, uint8(200), uint16(60000),
		uint32(1) << 31, uint64(1) << 63, uint(7), types.Timespan(-3600e6), float32(1.5), 2.25, "héllo", []byte{0, 1},
		time.Date(2024, 2, 29, 1, 2, 3, 4000, time.UTC), decimal.RequireFromString("12.340")} {
		enc, err := appendValue(ctx, nil, v)
		if err != nil {
			t.Fatalf("encode %v: %v", v, err)
		}
		enc = append(enc, 0xAB) // what follows
		rest, err := skipValue(enc)
		if err != nil || len(rest) != 1 || rest[0] != 0xAB {
			t.Errorf("skip %T %v: rest %x, %v", v, v, rest, err)
		}
		if _, drest, err := decodeValue(enc, nil); err != nil || len(drest) != len(rest) {
			t.Errorf("decode %T %v: rest %x, %v", v, v, drest, err)
		}
	}
	if _, err := skipValue([]byte{tInt32}); err == nil {
		t.Error("a number without its bytes skipped without an error")
	}
}
