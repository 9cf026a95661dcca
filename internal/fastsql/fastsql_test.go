package fastsql

import (
	"reflect"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		q    string
		want *Statement
		lits []Value
	}{
		{"SELECT c FROM sbtest1 WHERE id=?", &Statement{Kind: Select, Table: "sbtest1", Columns: []string{"c"}, WhereCol: "id", Op: Eq, Args: []Arg{0}, NumArgs: 1}, []Value{{}}},
		{"select c from sbtest1 where id = 42", &Statement{Kind: Select, Table: "sbtest1", Columns: []string{"c"}, WhereCol: "id", Op: Eq, Args: []Arg{0}, NumArgs: 1}, []Value{{Kind: Int, Int: 42}}},
		{"SELECT id, k, c, pad FROM sbtest1 WHERE k IN (?, ?, 7)", &Statement{Kind: Select, Table: "sbtest1", Columns: []string{"id", "k", "c", "pad"}, WhereCol: "k", Op: In, Args: []Arg{0, 1, 2}, NumArgs: 3}, []Value{{}, {}, {Kind: Int, Int: 7}}},
		{"SELECT * FROM `db`.`t` WHERE t.id BETWEEN -5 AND 10 ORDER BY id DESC LIMIT 3;", &Statement{Kind: Select, DB: "db", Table: "t", WhereCol: "id", Op: Between, Args: []Arg{0, 1}, OrderBy: "id", Desc: true, HasLimit: true, Limit: 2, NumArgs: 3, negated: []int{0}}, []Value{{Kind: Int, Int: -5}, {Kind: Int, Int: 10}, {Kind: Int, Int: 3}}},
		{"SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN ? AND ?", &Statement{Kind: Select, Table: "sbtest1", Columns: []string{"k"}, Agg: "SUM", WhereCol: "id", Op: Between, Args: []Arg{0, 1}, NumArgs: 2}, []Value{{}, {}}},
		{"select count(*) from t where k = 3", &Statement{Kind: Select, Table: "t", Columns: []string{"*"}, Agg: "COUNT", WhereCol: "k", Op: Eq, Args: []Arg{0}, NumArgs: 1}, []Value{{Kind: Int, Int: 3}}},
		{"SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c", &Statement{Kind: Select, Table: "sbtest1", Columns: []string{"c"}, Distinct: true, WhereCol: "id", Op: Between, Args: []Arg{0, 1}, OrderBy: "c", NumArgs: 2}, []Value{{}, {}}},
		{"SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c DESC LIMIT 5", &Statement{Kind: Select, Table: "sbtest1", Columns: []string{"c"}, WhereCol: "id", Op: Between, Args: []Arg{0, 1}, OrderBy: "c", Desc: true, HasLimit: true, Limit: 2, NumArgs: 3}, []Value{{}, {}, {Kind: Int, Int: 5}}},
		{"BEGIN", &Statement{Kind: Begin}, nil},
		{"start transaction;", &Statement{Kind: Begin}, nil},
		{"COMMIT work", &Statement{Kind: Commit}, nil},
		{"ROLLBACK", &Statement{Kind: Rollback}, nil},
		{"UPDATE sbtest1 SET k=k+1 WHERE id=?", &Statement{Kind: Update, Table: "sbtest1", Sets: []SetExpr{{Col: "k", Self: true, Sign: 1, Arg: 0}}, WhereCol: "id", Op: Eq, Args: []Arg{1}, NumArgs: 2}, []Value{{Kind: Int, Int: 1}, {}}},
		{"UPDATE t SET c='it''s', v = NULL WHERE id = 1", &Statement{Kind: Update, Table: "t", Sets: []SetExpr{{Col: "c", Arg: 0}, {Col: "v", Arg: 1}}, WhereCol: "id", Op: Eq, Args: []Arg{2}, NumArgs: 3}, []Value{{Kind: String, Str: "it's"}, {Kind: Null}, {Kind: Int, Int: 1}}},
		{"DELETE FROM sbtest1 WHERE id=?", &Statement{Kind: Delete, Table: "sbtest1", WhereCol: "id", Op: Eq, Args: []Arg{0}, NumArgs: 1}, []Value{{}}},
		{"INSERT INTO sbtest1 (id, k, c, pad) VALUES (?, ?, ?, ?)", &Statement{Kind: Insert, Table: "sbtest1", InsertCols: []string{"id", "k", "c", "pad"}, Rows: [][]Arg{{0, 1, 2, 3}}, NumArgs: 4}, []Value{{}, {}, {}, {}}},
		{"REPLACE INTO t (a,b) VALUES (1,'x'),(2.5,\"y\\n\")", &Statement{Kind: Replace, Table: "t", InsertCols: []string{"a", "b"}, Rows: [][]Arg{{0, 1}, {2, 3}}, NumArgs: 4}, []Value{{Kind: Int, Int: 1}, {Kind: String, Str: "x"}, {Kind: Decimal, Str: "2.5"}, {Kind: String, Str: "y\n"}}},
	}
	for _, tc := range tests {
		st, lits, _, ok := Parse(tc.q)
		if !ok {
			t.Fatalf("%q: not recognised", tc.q)
		}
		if !reflect.DeepEqual(st, tc.want) {
			t.Errorf("%q:\n got %+v\nwant %+v", tc.q, st, tc.want)
		}
		if !reflect.DeepEqual(lits, tc.lits) {
			t.Errorf("%q: literals %+v, want %+v", tc.q, lits, tc.lits)
		}
	}
}

func TestParseRejects(t *testing.T) {
	for _, q := range []string{
		"SELECT c FROM t WHERE id = ? FOR UPDATE",
		"SELECT c FROM t WHERE id = ? AND k = 1",
		"SELECT SUM(k), c FROM t WHERE id BETWEEN 1 AND 2",
		"START TRANSACTION READ ONLY",
		"START TRANSACTION WITH CONSISTENT SNAPSHOT",
		"COMMIT AND CHAIN",
		"ROLLBACK TO SAVEPOINT a",
		"BEGIN x",
		"SELECT c, SUM(k) FROM t WHERE id BETWEEN 1 AND 2",
		"SELECT SUM(*) FROM t WHERE id = 1",
		"SELECT LENGTH(c) FROM t WHERE id = 1",
		"SELECT SUM(k) FROM t WHERE id BETWEEN 1 AND 2 ORDER BY k",
		"SELECT SUM(k) FROM t WHERE id BETWEEN 1 AND 2 LIMIT 1",
		"SELECT DISTINCT SUM(k) FROM t WHERE id = 1",
		"SELECT DISTINCT c FROM t WHERE id BETWEEN 1 AND 2 ORDER BY k",
		"SELECT SUM(DISTINCT k) FROM t WHERE id = 1",
		"SELECT c FROM t WHERE id = 1; DROP TABLE t",
		"SELECT c FROM t WHERE id = 1 -- x",
		"SELECT c FROM t WHERE id = 1 /* x */",
		"SELECT c FROM t",
		"UPDATE t SET k = j + 1 WHERE id = 1",
		"UPDATE t SET k = k * 2 WHERE id = 1",
		"UPDATE t SET k = 1 WHERE id IN (1, 2)",
		"DELETE FROM t WHERE id > 1",
		"INSERT INTO t VALUES (1, 2)",
		"INSERT INTO t (a, b) VALUES (1)",
		"INSERT INTO t (a) VALUES (1) ON DUPLICATE KEY UPDATE a = 2",
		"INSERT INTO t (a) SELECT 1",
		"SELECT c FROM t WHERE id = 'unterminated",
		"SELECT c FROM t WHERE id = 0x10",
		"SELECT c FROM t WHERE id = -'x'",
		"",
	} {
		if _, _, _, ok := Parse(q); ok {
			t.Errorf("%q was recognised", q)
		}
	}
}

func TestShapeMatchesParse(t *testing.T) {
	a, la, sa, _ := Parse("SELECT c FROM t WHERE id = 5")
	_, lb, sb, _ := Parse("SELECT c FROM t WHERE id = 77")
	shape, lits, ok := Shape("SELECT c FROM t WHERE id = 77")
	if sa != sb || shape != sa || !ok {
		t.Fatalf("shapes differ: %q %q %q", sa, sb, shape)
	}
	if !reflect.DeepEqual(lits, lb) || la[a.Args[0]].Int != 5 {
		t.Fatalf("literals %v vs %v", lits, lb)
	}
}

// TestShapeLiteralsNegated: a cached statement turns the literals of
// another text of its shape into the same arguments Parse gives.
func TestShapeLiteralsNegated(t *testing.T) {
	st, _, shape, _ := Parse("SELECT c FROM t WHERE id BETWEEN -5 AND 7")
	_, want, _, _ := Parse("SELECT c FROM t WHERE id BETWEEN -9 AND 3")
	s2, lits, _ := Shape("SELECT c FROM t WHERE id BETWEEN -9 AND 3")
	if s2 != shape {
		t.Fatalf("shapes differ: %q %q", s2, shape)
	}
	got, ok := st.Literals(lits)
	if !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("literals %v, want %v", got, want)
	}
	if lits[0].Int != 9 {
		t.Fatalf("Literals changed its input: %v", lits)
	}
}

// TestShapeKeepsCase: result columns are named as the query spells them,
// so statements differing in identifier case must not share an entry.
func TestShapeKeepsCase(t *testing.T) {
	_, _, a, _ := Parse("SELECT c FROM t WHERE id = 1")
	_, _, b, _ := Parse("SELECT C FROM t WHERE id = 1")
	if a == b {
		t.Fatalf("shapes equal: %q", a)
	}
}

// FuzzParse checks what the fast path relies on for any text: every
// argument index of a recognised statement refers to a lifted value, and
// the statement cached under its shape turns the literals Shape lifts
// from the text into the arguments Parse gave (so a cache hit runs the
// statement Parse would have built).
func FuzzParse(f *testing.F) {
	for _, q := range []string{
		"SELECT c FROM sbtest1 WHERE id=?",
		"UPDATE t SET k=k-1 WHERE id=-5",
		"INSERT INTO t (a,b) VALUES ('x\\'y', NULL)",
		// sysbench's oltp_read_write statements
		"SELECT c FROM sbtest1 WHERE id=5012",
		"SELECT c FROM sbtest1 WHERE id BETWEEN 4985 AND 5084",
		"SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN 4985 AND 5084",
		"SELECT c FROM sbtest1 WHERE id BETWEEN 4985 AND 5084 ORDER BY c",
		"SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN 4985 AND 5084 ORDER BY c",
		"UPDATE sbtest1 SET k=k+1 WHERE id=5012",
		"UPDATE sbtest1 SET c='83868641912-28773972837-60736120486' WHERE id=5012",
		"DELETE FROM sbtest1 WHERE id=5012",
		"INSERT INTO sbtest1 (id, k, c, pad) VALUES (5012, 4993, '83868641912-28773972837', '67847967377-48000963322')",
		"BEGIN", "COMMIT", "ROLLBACK",
		"SELECT id, k FROM `db`.`t` WHERE k IN (-9223372036854775808, 18446744073709551615, 1.5e3, 0x1f) LIMIT 10",
	} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		st, lits, shape, ok := Parse(q)
		if !ok {
			return
		}
		if shape2, shapeLits, ok := Shape(q); !ok || shape2 != shape {
			t.Fatalf("%q: Parse's shape %q, Shape's %q (%v)", q, shape, shape2, ok)
		} else if got, ok := st.Literals(shapeLits); !ok || !reflect.DeepEqual(got, lits) {
			t.Fatalf("%q: cached statement's literals %v (%v), Parse's %v", q, got, ok, lits)
		}
		if st.NumArgs != len(lits) {
			t.Fatalf("%q: %d arguments, %d values", q, st.NumArgs, len(lits))
		}
		// every argument index refers to a lifted value
		check := func(a Arg) {
			if int(a) < 0 || int(a) >= len(lits) {
				t.Fatalf("%q: argument %d of %d", q, a, len(lits))
			}
		}
		for _, a := range st.Args {
			check(a)
		}
		for _, s := range st.Sets {
			check(s.Arg)
		}
		for _, r := range st.Rows {
			for _, a := range r {
				check(a)
			}
		}
		if st.HasLimit {
			check(st.Limit)
		}
	})
}
