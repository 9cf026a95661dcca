package sqlengine

import (
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

// TestSortByBytesIsSortersOrder sorts random rows, with ties, NULLs and
// multi-byte characters, both ways and in both directions and NULL
// orderings, and compares with go-mysql-server's Sorter.
func TestSortByBytesIsSortersOrder(t *testing.T) {
	ctx := sql.NewEmptyContext()
	words := []string{"", "a", "A", "b", "ab", "a ", "é", "e", "z", "ż", "😀", "\x00", "日本", "aé"}
	cols := []struct {
		name string
		typ  sql.Type
		val  func(string) any
	}{
		{"char bin", types.MustCreateString(sqltypes.Char, 20, sql.Collation_utf8mb4_0900_bin), func(s string) any { return s }},
		{"varbinary", types.MustCreateBinary(sqltypes.VarBinary, 20), func(s string) any { return []byte(s) }},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range cols {
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
					if !sortByBytes(ctx, got, fields) {
						t.Fatalf("%s: not sorted by bytes", c.name)
					}
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("%s %v %v:\n got %v\nwant %v", c.name, order, nulls, got, want)
					}
				}
			}
		}
	}
}

// TestSortByBytesDeclines leaves other collations, several fields and
// invalid UTF-8 to Sorter.
func TestSortByBytesDeclines(t *testing.T) {
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
		{"case-insensitive collation", rows, sql.SortFields{field(ci)}},
		{"two fields", rows, sql.SortFields{field(bin), field(bin)}},
		{"an integer column", []sql.Row{{int64(2)}, {int64(1)}}, sql.SortFields{field(types.Int64)}},
		{"invalid UTF-8", []sql.Row{{"b"}, {"\xff"}}, sql.SortFields{field(bin)}},
		{"a non-string value", []sql.Row{{"b"}, {int64(1)}}, sql.SortFields{field(bin)}},
	} {
		in := slices.Clone(tc.rows)
		if sortByBytes(ctx, in, tc.fields) {
			t.Errorf("%s: sorted by bytes", tc.name)
		}
		if !reflect.DeepEqual(in, tc.rows) {
			t.Errorf("%s: rows changed to %v", tc.name, in)
		}
	}
}
