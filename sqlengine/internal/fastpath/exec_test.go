package fastpath

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"
)

// sortWords are values for the sort tests: ties under case and accent
// insensitive collations, trailing spaces, multi-byte characters.
var sortWords = []string{"", "a", "A", "b", "B", "ab", "Ab", "a ", "A  ", "é", "É", "e", "E", "z", "ż", "Ż", "😀", "\x00", "日本", "aé", "ß", "ss", "SS"}

// sortColumns are the string columns stringOrder takes.
var sortColumns = []struct {
	name string
	typ  sql.Type
	val  func(string) any
}{
	{"char bin", types.MustCreateString(sqltypes.Char, 20, sql.Collation_utf8mb4_0900_bin), func(s string) any { return s }},
	{"varbinary", types.MustCreateBinary(sqltypes.VarBinary, 20), func(s string) any { return []byte(s) }},
	{"char 0900_ai_ci", types.MustCreateString(sqltypes.Char, 20, sql.Collation_utf8mb4_0900_ai_ci), func(s string) any { return s }},
	{"varchar general_ci", types.MustCreateString(sqltypes.VarChar, 20, sql.Collation_utf8mb4_general_ci), func(s string) any { return s }},
	{"varchar unicode_ci", types.MustCreateString(sqltypes.VarChar, 20, sql.Collation_utf8mb4_unicode_ci), func(s string) any { return s }},
	{"varchar utf8mb3_general_ci", types.MustCreateString(sqltypes.VarChar, 20, sql.Collation_utf8mb3_general_ci), func(s string) any { return s }},
}

// TestStringOrderIsSortersOrder sorts random rows, with ties, NULLs and
// multi-byte characters, both ways and in both directions and NULL
// orderings, and compares with go-mysql-server's Sorter.
func TestStringOrderIsSortersOrder(t *testing.T) {
	ctx := sql.NewEmptyContext()
	words := sortWords
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range sortColumns {
		for _, order := range []sql.SortOrder{sql.Ascending, sql.Descending} {
			for _, nulls := range []sql.NullOrdering{sql.NullsFirst, sql.NullsLast} {
				fields := sql.SortFields{{Column: expression.NewGetField(1, c.typ, "c", true), Order: order, NullOrdering: nulls}}
				for trial := 0; trial < 200; trial++ {
					var rows []sql.Row
					for id := 0; id < rng.IntN(40); id++ {
						var v any
						if rng.IntN(6) > 0 {
							v = c.val(words[rng.IntN(len(words))])
						}
						rows = append(rows, sql.Row{int64(id), v})
					}
					want := slices.Clone(rows)
					s := &expression.Sorter{SortFields: fields, Rows: want, Ctx: ctx}
					sort.Stable(s)
					if s.LastError != nil {
						t.Fatal(s.LastError)
					}
					got := slices.Clone(rows)
					by := stringOrder(ctx, got, fields)
					if by == nil {
						t.Fatalf("%s: no string order", c.name)
					}
					sortStable(got, by)
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("%s %v %v:\n got %v\nwant %v", c.name, order, nulls, got, want)
					}
				}
			}
		}
	}
}

// TestDistinctSortedIsDistinctThenSort: for rows of one string column
// ordered by it, distinctSorted keeps the rows distinctRows keeps (the
// first of every set of equal values), in Sorter's order.
func TestDistinctSortedIsDistinctThenSort(t *testing.T) {
	ctx := sql.NewEmptyContext()
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range sortColumns {
		for _, order := range []sql.SortOrder{sql.Ascending, sql.Descending} {
			fields := sql.SortFields{{Column: expression.NewGetField(0, c.typ, "c", true), Order: order, NullOrdering: sql.NullsFirst}}
			for trial := 0; trial < 300; trial++ {
				var rows []sql.Row
				for n := rng.IntN(40); n > 0; n-- {
					var v any
					if rng.IntN(6) > 0 {
						v = c.val(sortWords[rng.IntN(len(sortWords))])
					}
					rows = append(rows, sql.Row{v})
				}
				want, err := distinctRows(ctx, []sql.Type{c.typ}, slices.Clone(rows))
				if err != nil {
					t.Fatal(err)
				}
				s := &expression.Sorter{SortFields: fields, Rows: want, Ctx: ctx}
				sort.Stable(s)
				got, ok := distinctSorted(ctx, slices.Clone(rows), fields)
				if !ok {
					t.Fatalf("%s: declined", c.name)
				}
				if len(got) == 0 && len(want) == 0 {
					continue
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%s %v:\n got %v\nwant %v", c.name, order, got, want)
				}
			}
		}
	}
	two := sql.SortFields{{Column: expression.NewGetField(1, types.Text, "c", true)}}
	if _, ok := distinctSorted(ctx, []sql.Row{{"a", "b"}}, two); ok {
		t.Error("distinctSorted took rows of two columns")
	}
	if _, ok := distinctSorted(ctx, []sql.Row{{"a"}}, two); ok {
		t.Error("distinctSorted took an order by a column the rows lack")
	}
}

// TestStringOrderDeclines leaves other character sets, several fields and
// invalid UTF-8 to Sorter.
func TestStringOrderDeclines(t *testing.T) {
	ctx := sql.NewEmptyContext()
	bin := types.MustCreateString(sqltypes.Char, 20, sql.Collation_utf8mb4_0900_bin)
	ci := types.MustCreateString(sqltypes.Char, 20, sql.Collation_utf8mb4_0900_ai_ci)
	field := func(typ sql.Type) sql.SortField {
		return sql.SortField{Column: expression.NewGetField(0, typ, "c", true)}
	}
	rows := []sql.Row{{"b"}, {"a"}}
	for _, tc := range []struct {
		name   string
		rows   []sql.Row
		fields sql.SortFields
	}{
		{"invalid UTF-8, case-insensitive", []sql.Row{{"b"}, {"\xff"}}, sql.SortFields{field(ci)}},
		{"latin1", rows, sql.SortFields{field(types.MustCreateString(sqltypes.Char, 20, sql.Collation_latin1_swedish_ci))}},
		{"two fields", rows, sql.SortFields{field(bin), field(bin)}},
		{"an integer column", []sql.Row{{int64(2)}, {int64(1)}}, sql.SortFields{field(types.Int64)}},
		{"invalid UTF-8", []sql.Row{{"b"}, {"\xff"}}, sql.SortFields{field(bin)}},
		{"a non-string value", []sql.Row{{"b"}, {int64(1)}}, sql.SortFields{field(bin)}},
	} {
		if stringOrder(ctx, tc.rows, tc.fields) != nil {
			t.Errorf("%s: a string order", tc.name)
		}
	}
}

// TestSQLIntoOwnsItsBytes checks that a value converted by sqlInto never
// shares memory with the value it came from, even where the type's SQL
// method returns that value's own bytes (a []byte for a text column): the
// session's next select reuses the memory rows are decoded into.
func TestSQLIntoOwnsItsBytes(t *testing.T) {
	ctx := sql.NewEmptyContext()
	var buf []byte
	for _, tc := range []struct {
		typ sql.Type
		v   []byte
	}{
		{types.Text, []byte("from the scanned row")},
		{types.MustCreateString(sqltypes.VarChar, 100, sql.Collation_utf8mb4_0900_bin), []byte("a varchar")},
		{types.Text, bytes.Repeat([]byte("x"), sqlBufSize)}, // larger than a buffer
	} {
		src := bytes.Clone(tc.v)
		sv, err := sqlInto(ctx, tc.typ, src, &buf)
		if err != nil {
			t.Fatal(err)
		}
		for i := range src {
			src[i] = '!'
		}
		if !bytes.Equal(sv.Raw(), tc.v) {
			t.Errorf("%v: value changed with its source: %.20q", tc.typ, sv.Raw())
		}
	}
}

// TestSQLIntoBuffersGrow checks that a result's conversion buffers start
// small and double up to sqlBufSize (a point select must not zero a
// full-size buffer), and that every value converted across the buffer
// changes comes back intact.
func TestSQLIntoBuffersGrow(t *testing.T) {
	ctx := sql.NewEmptyContext()
	typ := types.MustCreateString(sqltypes.VarChar, 200, sql.Collation_utf8mb4_0900_bin)
	var buf []byte
	var caps []int
	var vals []sqltypes.Value
	for i := 0; i < 400; i++ {
		sv, err := sqlInto(ctx, typ, string(bytes.Repeat([]byte{byte('a' + i%26)}, 1+i%150)), &buf)
		if err != nil {
			t.Fatal(err)
		}
		vals = append(vals, sv)
		if len(caps) == 0 || caps[len(caps)-1] != cap(buf) {
			caps = append(caps, cap(buf))
		}
	}
	if caps[0] != sqlBufFirst {
		t.Errorf("first buffer holds %d bytes, want %d", caps[0], sqlBufFirst)
	}
	for i := 1; i < len(caps); i++ {
		if want := min(2*caps[i-1], sqlBufSize); caps[i] != want {
			t.Errorf("buffer %d holds %d bytes after %d, want %d (%v)", i, caps[i], caps[i-1], want, caps)
		}
	}
	for i, sv := range vals {
		if want := bytes.Repeat([]byte{byte('a' + i%26)}, 1+i%150); !bytes.Equal(sv.Raw(), want) {
			t.Fatalf("value %d is %q, want %q", i, sv.Raw(), want)
		}
	}
}
