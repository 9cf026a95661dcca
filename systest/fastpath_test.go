package systest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// The fast path (sqlengine/fastpath.go) answers hot statements without
// go-mysql-server. It must be invisible: these tests run random statements
// of the shapes it takes on two sessions of one node, one with
// certus_fast_path=1 and one with 0, and require equal answers — column
// names and types, rows in order, affected rows, error codes — and equal
// table contents after random writes. A failure prints the seed; rerun it
// with CERTUS_FASTPATH_SEED=<seed>.

// fastPathSeed returns the seed of a randomized differential test.
func fastPathSeed(t *testing.T) uint64 {
	if s := os.Getenv("CERTUS_FASTPATH_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("CERTUS_FASTPATH_SEED: %v", err)
		}
		return v
	}
	return uint64(time.Now().UnixNano())
}

// result is everything a client sees of one statement.
type result struct {
	Cols     []string // name and type
	Rows     [][]string
	Affected int64
	InsertID int64
	Err      uint16
}

func (r result) String() string {
	if r.Err != 0 {
		return fmt.Sprintf("error %d", r.Err)
	}
	if r.Cols == nil {
		return fmt.Sprintf("ok affected=%d insert_id=%d", r.Affected, r.InsertID)
	}
	return fmt.Sprintf("%v %v", r.Cols, r.Rows)
}

// runStmt runs q on c: the text protocol without args, else a prepared
// statement (the DSN does not interpolate).
func runStmt(ctx context.Context, c *sql.Conn, query bool, q string, args ...any) (result, error) {
	var r result
	fail := func(err error) (result, error) {
		var me *mysql.MySQLError
		if errors.As(err, &me) {
			return result{Err: me.Number}, nil
		}
		return r, err
	}
	if !query {
		res, err := c.ExecContext(ctx, q, args...)
		if err != nil {
			return fail(err)
		}
		r.Affected, _ = res.RowsAffected()
		r.InsertID, _ = res.LastInsertId()
		return r, nil
	}
	rows, err := c.QueryContext(ctx, q, args...)
	if err != nil {
		return fail(err)
	}
	defer rows.Close()
	cts, err := rows.ColumnTypes()
	if err != nil {
		return r, err
	}
	r.Cols = []string{}
	for _, ct := range cts {
		r.Cols = append(r.Cols, ct.Name()+":"+ct.DatabaseTypeName())
	}
	r.Rows = [][]string{}
	for rows.Next() {
		vals := make([]sql.RawBytes, len(cts))
		ptrs := make([]any, len(cts))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return r, err
		}
		row := make([]string, len(vals))
		for i, v := range vals {
			if v == nil {
				row[i] = "NULL"
			} else {
				row[i] = "'" + string(v) + "'"
			}
		}
		r.Rows = append(r.Rows, row)
	}
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	return r, nil
}

// fastPathPair returns two sessions of db: with and without the fast path.
func fastPathPair(t *testing.T, db *sql.DB) (fast, slow *sql.Conn) {
	fast, slow = conn(t, db), conn(t, db)
	xexec(t, fast, "SET certus_fast_path = 1")
	xexec(t, slow, "SET certus_fast_path = 0")
	return fast, slow
}

func fastPathStatements(t *testing.T, db *sql.DB) int64 {
	t.Helper()
	var name string
	var v int64
	if err := db.QueryRow("SHOW GLOBAL STATUS LIKE 'certus_fast_path_statements'").Scan(&name, &v); err != nil {
		t.Fatalf("certus_fast_path_statements: %v", err)
	}
	return v
}

const fastPathTable = `(
	id INT PRIMARY KEY,
	k INT NOT NULL,
	c CHAR(12) NOT NULL DEFAULT '',
	v VARCHAR(20) COLLATE utf8mb4_0900_ai_ci,
	n INT NULL,
	d DECIMAL(10,2) NOT NULL DEFAULT 0,
	u BIGINT UNSIGNED,
	KEY kk (k),
	UNIQUE KEY uu (u))`

var (
	fpStrings  = []string{"a", "A", "b", "aa", "", "ab", "B", "zz"}
	fpVStrings = []string{"x", "X", "y", "Y", "é", "e", "E", "xy"}
)

// fpRow returns random values for (id, k, c, v, n, d, u).
func fpRow(rng *rand.Rand, id int) []any {
	var v, n, u any
	if rng.IntN(5) > 0 {
		v = fpVStrings[rng.IntN(len(fpVStrings))]
	}
	if rng.IntN(4) > 0 {
		n = rng.IntN(7) - 3
	}
	if rng.IntN(3) > 0 {
		u = uint64(rng.IntN(1000))
	}
	d := fmt.Sprintf("%d.%02d", rng.IntN(100)-50, rng.IntN(100))
	return []any{id, rng.IntN(20), fpStrings[rng.IntN(len(fpStrings))], v, n, d, u}
}

// sqlLiteral renders v as SQL text.
func sqlLiteral(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case string:
		return "'" + strings.ReplaceAll(v, "'", "''") + "'"
	case []byte:
		return fmt.Sprintf("X'%X'", v)
	default:
		return fmt.Sprint(v)
	}
}

// fpStatement renders a statement with its arguments either as literals
// or as placeholders with args.
func fpStatement(rng *rand.Rand, parts []string, vals []any) (string, []any) {
	var b strings.Builder
	placeholders := rng.IntN(2) == 0
	var args []any
	for i, p := range parts {
		b.WriteString(p)
		if i < len(vals) {
			if placeholders {
				b.WriteString("?")
				args = append(args, vals[i])
			} else {
				b.WriteString(sqlLiteral(vals[i]))
			}
		}
	}
	return b.String(), args
}

// fpSelect builds a random SELECT of the shapes the fast path knows, and
// some near misses it must leave alone.
func fpSelect(rng *rand.Rand, table string) (string, []any) {
	cols := []string{"id", "k", "c", "v", "n", "d", "u"}
	var parts []string
	var vals []any
	head := "SELECT "
	distinct := rng.IntN(5) == 0
	var sel []string
	agg := ""
	switch r := rng.IntN(10); {
	case r == 0:
		head += "* "
		sel = cols
		distinct = false
	case r <= 2:
		fns := []string{"SUM", "COUNT", "MIN", "MAX", "AVG"}
		fn := fns[rng.IntN(len(fns))]
		arg := cols[rng.IntN(len(cols))]
		if fn == "COUNT" && rng.IntN(2) == 0 {
			arg = "*"
		}
		agg = fn + "(" + arg + ")"
		if rng.IntN(2) == 0 {
			agg = strings.ToLower(agg)
		}
		head += agg + " "
		distinct = false
	default:
		perm := rng.Perm(len(cols))[:1+rng.IntN(3)]
		for _, i := range perm {
			sel = append(sel, cols[i])
		}
		if distinct {
			head += "DISTINCT "
		}
		head += strings.Join(sel, ", ") + " "
	}
	head += "FROM " + table + " WHERE "
	keys := []string{"id", "k", "u"}
	key := keys[rng.IntN(len(keys))]
	arg := func() any {
		switch rng.IntN(20) {
		case 0:
			return -rng.IntN(5)
		case 1:
			return strconv.Itoa(rng.IntN(300)) // a string key: left to the general path
		}
		if key == "k" {
			return rng.IntN(22)
		}
		return rng.IntN(310)
	}
	switch rng.IntN(3) {
	case 0:
		parts = append(parts, head+key+" = ")
		vals = append(vals, arg())
	case 1:
		n := 1 + rng.IntN(5)
		parts = append(parts, head+key+" IN (")
		for i := 0; i < n; i++ {
			vals = append(vals, arg())
			if i < n-1 {
				parts = append(parts, ", ")
			}
		}
		parts = append(parts, ")")
	default:
		lo := arg()
		hi := any(rng.IntN(320))
		if li, ok := lo.(int); ok && rng.IntN(4) > 0 {
			hi = li + rng.IntN(60)
		}
		parts = append(parts, head+key+" BETWEEN ", " AND ")
		vals = append(vals, lo, hi)
	}
	if len(parts) == len(vals) {
		parts = append(parts, "")
	}
	if agg == "" && rng.IntN(3) > 0 {
		ob := cols[rng.IntN(len(cols))]
		if distinct {
			ob = sel[rng.IntN(len(sel))]
		}
		parts[len(parts)-1] += " ORDER BY " + ob + []string{"", " ASC", " DESC"}[rng.IntN(3)]
	}
	if agg == "" && rng.IntN(3) == 0 {
		parts[len(parts)-1] += " LIMIT "
		vals = append(vals, rng.IntN(8))
		parts = append(parts, "")
	}
	return fpStatement(rng, parts, vals)
}

// fpLoad fills tables with the same random rows.
func fpLoad(t *testing.T, rng *rand.Rand, db *sql.DB, tables ...string) {
	for id := 1; id <= 300; id++ {
		if rng.IntN(3) == 0 {
			continue
		}
		row := fpRow(rng, id)
		for _, tb := range tables {
			// a duplicate u just skips the row in every table alike
			_ = tryExec(db, "INSERT INTO "+tb+" (id, k, c, v, n, d, u) VALUES (?, ?, ?, ?, ?, ?, ?)", row...)
		}
	}
}

// TestFastPathSelectDifferential compares random SELECTs with and without
// the fast path.
func TestFastPathSelectDifferential(t *testing.T) {
	seed := fastPathSeed(t)
	t.Logf("seed %d (rerun with CERTUS_FASTPATH_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	_, db := startNode(t, "fp", "fp")
	mustExec(t, db, "CREATE TABLE t "+fastPathTable)
	fpLoad(t, rng, db, "t")
	fast, slow := fastPathPair(t, db)
	ctx := context.Background()
	before := fastPathStatements(t, db)
	n := 1500
	if testing.Short() {
		n = 400
	}
	tables := []string{"t", "fp.t", "`t`"}
	for i := 0; i < n; i++ {
		q, args := fpSelect(rng, tables[rng.IntN(len(tables))])
		want, err := runStmt(ctx, slow, true, q, args...)
		if err != nil {
			t.Fatalf("%s %v: %v", q, args, err)
		}
		// twice: the first run of a shape teaches the fast path its columns
		for run := 0; run < 2; run++ {
			got, err := runStmt(ctx, fast, true, q, args...)
			if err != nil {
				t.Fatalf("%s %v: %v", q, args, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d: %s %v (run %d)\nfast path: %v\ngeneral:   %v", seed, q, args, run, got, want)
			}
		}
	}
	took := fastPathStatements(t, db) - before
	t.Logf("%d statements, %d answered by the fast path", 2*n, took)
	if took < int64(n/2) {
		t.Fatalf("the fast path answered only %d of %d statements; the test no longer exercises it", took, 2*n)
	}
}

// TestFastPathWriteDifferential applies the same random writes to two
// equal tables, one through the fast path and one without, in autocommit
// and in explicit transactions, and compares every answer and, regularly,
// the tables.
func TestFastPathWriteDifferential(t *testing.T) {
	seed := fastPathSeed(t)
	t.Logf("seed %d (rerun with CERTUS_FASTPATH_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	_, db := startNode(t, "fpw", "fpw")
	mustExec(t, db, "CREATE TABLE tf "+fastPathTable)
	mustExec(t, db, "CREATE TABLE ts "+fastPathTable)
	fpLoad(t, rng, db, "tf", "ts")
	fast, slow := fastPathPair(t, db)
	before := fastPathStatements(t, db)
	compare := func(when string) { fpTablesEqual(t, seed, fast, slow, "tf", "ts", when) }
	n := 1500
	if testing.Short() {
		n = 400
	}
	inTxn := false
	for i := 0; i < n; i++ {
		if rng.IntN(40) == 0 {
			inTxn = fpTxn(t, rng, fast, slow, inTxn)
		}
		parts, vals := fpWrite(rng)
		q, args := fpStatement(rng, parts, vals)
		got, want := fpBoth(t, fast, slow, q, args, "tf", "ts")
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d: %s %v\nfast path: %v\ngeneral:   %v", seed, q, args, got, want)
		}
		if i%100 == 0 {
			compare(fmt.Sprintf("after statement %d (%s)", i, q))
		}
	}
	if inTxn {
		xexec(t, fast, "COMMIT")
		xexec(t, slow, "COMMIT")
	}
	compare("at the end")
	took := fastPathStatements(t, db) - before
	t.Logf("%d writes, %d answered by the fast path", n, took)
	if took < int64(n/4) {
		t.Fatalf("the fast path answered only %d of %d writes; the test no longer exercises it", took, n)
	}
}

// TestFastPathAutoIncrementDifferential runs random INSERTs into an
// AUTO_INCREMENT table on both paths: the column omitted (bulk loads and
// dumps without ids), NULL, 0 or explicit, one row or several, inside
// transactions or not, and requires equal answers (affected rows, last
// insert id) and equal tables, generated ids included. No insert fails:
// the values a failed multi-row insert consumes may differ (MySQL allows
// the gaps, and InnoDB reserves a whole simple insert's values up front,
// as the fast path does).
func TestFastPathAutoIncrementDifferential(t *testing.T) {
	seed := fastPathSeed(t)
	t.Logf("seed %d (rerun with CERTUS_FASTPATH_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	_, db := startNode(t, "fpa", "fpa")
	const def = "(id BIGINT AUTO_INCREMENT PRIMARY KEY, k INT NOT NULL DEFAULT 7, c VARCHAR(8), KEY kc (c))"
	mustExec(t, db, "CREATE TABLE af "+def)
	mustExec(t, db, "CREATE TABLE as_ "+def)
	fast, slow := fastPathPair(t, db)
	before := fastPathStatements(t, db)
	n := 600
	if testing.Short() {
		n = 200
	}
	explicit := int64(100000) // explicit ids climb far above the generated ones
	inTxn := false
	var history []string
	for i := 0; i < n; i++ {
		rows := 1 + rng.IntN(3)
		var q string
		var args []any
		switch rng.IntN(4) {
		case 0: // the AUTO_INCREMENT column omitted
			q = "INSERT INTO {t} (k, c) VALUES " + strings.Repeat("(?, ?), ", rows-1) + "(?, ?)"
			for j := 0; j < rows; j++ {
				args = append(args, rng.IntN(100), fmt.Sprint(rng.IntN(400)))
			}
		case 1: // omitted, with the default of k
			q = "INSERT INTO {t} (c) VALUES " + strings.Repeat("(?), ", rows-1) + "(?)"
			for j := 0; j < rows; j++ {
				args = append(args, fmt.Sprint(rng.IntN(400)))
			}
		default: // given: NULL, 0 or a value above every id so far
			q = "INSERT INTO {t} (id, k, c) VALUES " + strings.Repeat("(?, ?, ?), ", rows-1) + "(?, ?, ?)"
			for j := 0; j < rows; j++ {
				var id any = []any{nil, 0}[rng.IntN(2)]
				if rng.IntN(3) == 0 {
					explicit += 10000 + int64(rng.IntN(5)) // beyond what was generated since
					id = explicit
				}
				args = append(args, id, rng.IntN(100), fmt.Sprint(rng.IntN(400)))
			}
		}
		if rng.IntN(30) == 0 {
			inTxn = fpTxn(t, rng, fast, slow, inTxn)
		}
		got, want := fpBoth(t, fast, slow, q, args, "af", "as_")
		history = append(history, fmt.Sprintf("%s %v -> %v / %v (txn %v)", q, args, got, want, inTxn))
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d: %s %v\nfast path: %v\ngeneral:   %v\nlast statements:\n%s", seed, q, args, got, want, strings.Join(history[max(0, len(history)-8):], "\n"))
		}
		if lf, ls := qInt(t, fast, "SELECT LAST_INSERT_ID()"), qInt(t, slow, "SELECT LAST_INSERT_ID()"); lf != ls {
			t.Fatalf("seed %d: after %s %v LAST_INSERT_ID() is %d on the fast path, %d on the general", seed, q, args, lf, ls)
		}
	}
	if inTxn {
		xexec(t, fast, "COMMIT")
		xexec(t, slow, "COMMIT")
	}
	rows := fpTablesEqual(t, seed, fast, slow, "af", "as_", "at the end")
	took := fastPathStatements(t, db) - before
	t.Logf("%d inserts, %d answered by the fast path, %d rows", n, took, rows)
	if took < int64(n/4) {
		t.Fatalf("the fast path answered only %d of %d inserts", took, n)
	}
}

// fpBoth runs q ({t} standing for the table) with args on the fast path
// session against table ft and on the general one against st.
func fpBoth(t *testing.T, fast, slow *sql.Conn, q string, args []any, ft, st string) (got, want result) {
	t.Helper()
	ctx := context.Background()
	got, err := runStmt(ctx, fast, false, strings.ReplaceAll(q, "{t}", ft), args...)
	if err != nil {
		t.Fatalf("%s %v: %v", q, args, err)
	}
	want, err = runStmt(ctx, slow, false, strings.ReplaceAll(q, "{t}", st), args...)
	if err != nil {
		t.Fatalf("%s %v: %v", q, args, err)
	}
	return got, want
}

// fpTxn begins a transaction on both sessions, or ends the open one with
// COMMIT or ROLLBACK; it returns whether one is open.
func fpTxn(t *testing.T, rng *rand.Rand, fast, slow *sql.Conn, inTxn bool) bool {
	end := "BEGIN"
	if inTxn {
		end = []string{"COMMIT", "ROLLBACK"}[rng.IntN(2)]
	}
	xexec(t, fast, end)
	xexec(t, slow, end)
	return !inTxn
}

// fpTablesEqual fails t, showing the first differing row, unless table ft
// as the fast path session reads it equals st as the general one does; it
// returns the number of rows.
func fpTablesEqual(t *testing.T, seed uint64, fast, slow *sql.Conn, ft, st, when string) int {
	t.Helper()
	ctx := context.Background()
	a, err := runStmt(ctx, fast, true, "SELECT * FROM "+ft+" ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	b, err := runStmt(ctx, slow, true, "SELECT * FROM "+st+" ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(a.Rows) || i < len(b.Rows); i++ {
		var ra, rb []string
		if i < len(a.Rows) {
			ra = a.Rows[i]
		}
		if i < len(b.Rows) {
			rb = b.Rows[i]
		}
		if !reflect.DeepEqual(ra, rb) {
			t.Fatalf("seed %d: tables differ %s, first at row %d\nfast path: %v\ngeneral:   %v", seed, when, i, ra, rb)
		}
	}
	return len(a.Rows)
}

// fpWrite returns a random write ({t} stands for the table) as text parts
// around its argument values.
func fpWrite(rng *rand.Rand) ([]string, []any) {
	id := rng.IntN(320)
	switch rng.IntN(7) {
	case 0:
		return []string{"UPDATE {t} SET k = k + ", " WHERE id = ", ""}, []any{rng.IntN(5) - 2, id}
	case 1:
		return []string{"UPDATE {t} SET c = ", ", n = ", " WHERE id = ", ""}, []any{fpStrings[rng.IntN(len(fpStrings))], rng.IntN(9) - 4, id}
	case 2:
		v := any(fpVStrings[rng.IntN(len(fpVStrings))])
		if rng.IntN(4) == 0 {
			// raw bytes: valid UTF-8, or not (an error in strict mode)
			v = [][]byte{[]byte("é"), {0xff, 0xfe}, {'a', 0xc3}}[rng.IntN(3)]
		}
		return []string{"UPDATE {t} SET v = ", " WHERE u = ", ""}, []any{v, rng.IntN(1000)}
	case 3:
		return []string{"DELETE FROM {t} WHERE id = ", ""}, []any{id}
	case 4:
		return []string{"UPDATE {t} SET u = ", " WHERE id = ", ""}, []any{rng.IntN(1000), id}
	default:
		verb := "INSERT"
		if rng.IntN(4) == 0 {
			verb = "REPLACE"
		}
		row := fpRow(rng, id)
		if rng.IntN(10) == 0 {
			row[1] = nil // NOT NULL column: an error on both paths
		}
		if rng.IntN(10) == 0 {
			row[2] = "much too long for char 12"
		}
		return []string{verb + " INTO {t} (id, k, c, v, n, d, u) VALUES (", ", ", ", ", ", ", ", ", ", ", ", ", ")"}, row
	}
}

// TestFastPathPrivileges runs the fast path's statement shapes as users
// with different grants, on sessions with and without the fast path, and
// requires equal answers: the fast path serves application users (not
// only root), and a user lacking a privilege gets go-mysql-server's error,
// also right after a REVOKE.
func TestFastPathPrivileges(t *testing.T) {
	n, root := startNode(t, "fpp", "fpp")
	mustExec(t, root, "CREATE TABLE t "+fastPathTable)
	mustExec(t, root, "CREATE TABLE other (id INT PRIMARY KEY)")
	for id := 1; id <= 20; id++ {
		mustExec(t, root, "INSERT INTO t (id, k, c) VALUES (?, ?, 'x')", id, id%5)
	}
	grants := map[string][]string{
		"app":   {"GRANT SELECT, INSERT, UPDATE, DELETE ON fpp.* TO app"},
		"tbl":   {"GRANT SELECT, INSERT, UPDATE, DELETE ON fpp.t TO tbl"},
		"ro":    {"GRANT SELECT ON fpp.t TO ro"},
		"role":  {"GRANT reader TO role"},
		"upd":   {"GRANT UPDATE ON fpp.t TO upd"},
		"other": {"GRANT ALL ON fpp.other TO other"},
	}
	users := []string{"app", "tbl", "ro", "role", "upd", "other"}
	mustExec(t, root, "CREATE ROLE reader")
	mustExec(t, root, "GRANT SELECT ON fpp.t TO reader")
	for _, u := range users {
		mustExec(t, root, "CREATE USER "+u+" IDENTIFIED BY 'pw'")
		for _, g := range grants[u] {
			mustExec(t, root, g)
		}
	}
	session := func(u string, fast bool) *sql.Conn {
		db, err := sql.Open("mysql", u+":pw@tcp("+n.SQLAddr+")/fpp?interpolateParams=false&timeout=5s")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		c := conn(t, db)
		xexec(t, c, fmt.Sprintf("SET certus_fast_path = %t", fast))
		return c
	}
	type stmt struct {
		query bool
		q     string
		args  func(run int) []any // run 0: fast path session, 1: general
	}
	none := func(int) []any { return nil }
	fresh := func(base int) func(int) []any {
		return func(run int) []any { return []any{base + run, 7} }
	}
	stmts := []stmt{
		{true, "SELECT id, k, c FROM t WHERE id = ?", func(int) []any { return []any{3} }},
		{true, "SELECT id, k, c FROM t WHERE id = 4", none},
		{true, "SELECT id, k FROM t WHERE id BETWEEN ? AND ? ORDER BY id", func(int) []any { return []any{2, 6} }},
		{true, "SELECT id FROM t WHERE id IN (1, 5, 9)", none},
		{false, "UPDATE t SET k = k + 0 WHERE id = ?", func(int) []any { return []any{2} }},
		{false, "UPDATE t SET c = 'x' WHERE id = 5", none},
		{false, "DELETE FROM t WHERE id = ?", func(int) []any { return []any{999} }},
		{false, "INSERT INTO t (id, k) VALUES (?, ?)", fresh(1000)},
		{false, "REPLACE INTO t (id, k) VALUES (?, ?)", fresh(2000)},
		{false, "BEGIN", none},
		{true, "SELECT id, k FROM t WHERE id = ?", func(int) []any { return []any{6} }},
		{false, "COMMIT", none},
		{true, "SELECT id FROM other WHERE id = ?", func(int) []any { return []any{1} }},
	}
	ctx := context.Background()
	check := func(u string, fast, slow *sql.Conn, when string) {
		t.Helper()
		for i, st := range stmts {
			var res [2]result
			for run, c := range []*sql.Conn{fast, slow} {
				// the first run of a SELECT shape teaches the fast path
				// its columns: run each twice
				for rep := 0; rep < 2; rep++ {
					r, err := runStmt(ctx, c, st.query, st.q, st.args(run)...)
					if err != nil {
						t.Fatalf("user %s %s: %s: %v", u, when, st.q, err)
					}
					res[run] = r
				}
			}
			if !reflect.DeepEqual(res[0], res[1]) {
				t.Fatalf("user %s %s: statement %d %s\nfast path: %v\ngeneral:   %v", u, when, i, st.q, res[0], res[1])
			}
		}
	}
	for _, u := range users {
		before := fastPathStatements(t, root)
		check(u, session(u, true), session(u, false), "")
		took := fastPathStatements(t, root) - before
		t.Logf("user %s: %d statements on the fast path", u, took)
		if (u == "app" || u == "tbl") && took < int64(len(stmts)) {
			t.Fatalf("user %s holds every privilege its statements need, but the fast path took only %d", u, took)
		}
	}
	// a REVOKE reaches sessions that are already open
	fast, slow := session("tbl", true), session("tbl", false)
	check("tbl", fast, slow, "before REVOKE")
	mustExec(t, root, "REVOKE SELECT ON fpp.t FROM tbl")
	check("tbl", fast, slow, "after REVOKE")
	r, err := runStmt(ctx, fast, true, "SELECT id FROM t WHERE id = ?", 3)
	if err != nil || r.Err == 0 {
		t.Fatalf("SELECT after REVOKE SELECT: %v %v, want an access error", r, err)
	}
	// so does a DROP USER
	fast, slow = session("app", true), session("app", false)
	mustExec(t, root, "DROP USER app")
	check("app", fast, slow, "after DROP USER")
}
