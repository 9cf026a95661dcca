package collate

import (
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"
)

// TestCollatedSetWeighs checks the set's own hashing of string rows
// against the collations: equal under the collation is the same row,
// whatever the case, accents or representation ([]byte, a number in a
// string column), and a binary column compares bytes.
func TestCollatedSetWeighs(t *testing.T) {
	ctx := sql.NewEmptyContext()
	ci := types.MustCreateString(sqltypes.VarChar, 100, sql.Collation_utf8mb4_0900_ai_ci)
	bin := types.MustCreateString(sqltypes.VarBinary, 100, sql.Collation_binary)
	for _, tc := range []struct {
		types []sql.Type
		rows  []sql.Row
		fresh []bool
	}{
		{[]sql.Type{ci}, []sql.Row{{"Apple"}, {"apple"}, {[]byte("APPLE")}, {"äpple"}, {"b"}, {nil}, {nil}, {"Äpfel"}, {"äpfel"}},
			[]bool{true, false, false, false, true, true, false, true, false}},
		{[]sql.Type{bin}, []sql.Row{{"Apple"}, {"apple"}, {[]byte("apple")}}, []bool{true, true, false}},
		{[]sql.Type{ci, ci}, []sql.Row{{"a", "b"}, {"A", "B"}, {"ab", ""}, {"a", nil}, {"a", "b "}}, []bool{true, false, true, true, true}},
		{[]sql.Type{ci}, []sql.Row{{int64(12)}, {"12"}}, []bool{true, false}},
		{[]sql.Type{types.Int64, ci}, []sql.Row{{int64(1), "x"}, {int64(1), "X"}, {int64(2), "x"}}, []bool{true, false, true}},
	} {
		set := NewSet(tc.types)
		for i, row := range tc.rows {
			fresh, err := set.Add(ctx, row)
			if err != nil {
				t.Fatalf("add %v: %v", row, err)
			}
			if fresh != tc.fresh[i] {
				t.Errorf("types %v: add %v = %v, want %v", tc.types, row, fresh, tc.fresh[i])
			}
		}
	}
	if _, err := NewSet([]sql.Type{ci}).Add(ctx, sql.Row{"\xff"}); err == nil {
		t.Error("malformed UTF-8 hashed without an error")
	}
}
