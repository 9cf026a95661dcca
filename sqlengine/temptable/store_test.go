package temptable

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// TestStore runs testdata/store: a session's temporary tables through
// statements, transactions and savepoints. Tables have two INT columns, a
// and b; rows are written "a b".
//
//	create name=T [pk] [unique-b]   a table (primary key a; unique index on b)
//	insert name=T / delete name=T   one row per input line; a statement of its own
//	update name=T                   lines "a b -> a b"
//	fail-statement name=T           the input's inserts, then the statement fails
//	rows name=T                     the table's rows
//	begin / commit / rollback / savepoint name=S / rollback-to name=S / release name=S
//	drop name=T / rename name=T to=U
func TestStore(t *testing.T) {
	ctx := sql.NewEmptyContext()
	var s *Store
	datadriven.RunTest(t, "testdata/store", func(t *testing.T, d *datadriven.TestData) string {
		if s == nil || d.Cmd == "reset" {
			s = &Store{}
			if d.Cmd == "reset" {
				return ""
			}
		}
		arg := func(name string) string {
			var v string
			if d.HasArg(name) {
				d.ScanArgs(t, name, &v)
			}
			return v
		}
		table := func() *Table {
			tb, ok := s.Get("db", arg("name"))
			if !ok {
				t.Fatalf("no table %s", arg("name"))
			}
			return tb
		}
		var out strings.Builder
		// statement runs one statement's row changes on tb, as
		// go-mysql-server's editors do.
		statement := func(tb *Table, fail bool, change func(sql.Row, sql.Row) error) {
			tb.StatementBegin(ctx)
			var err error
			for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
				from, to, _ := strings.Cut(line, "->")
				if err = change(parseRow(t, from), parseRow(t, to)); err != nil {
					fmt.Fprintf(&out, "%s: %v\n", strings.TrimSpace(line), err)
					break
				}
			}
			if err != nil || fail {
				_ = tb.DiscardChanges(ctx, err)
			} else {
				_ = tb.StatementComplete(ctx)
			}
		}
		switch d.Cmd {
		case "create":
			cols := sql.Schema{
				{Name: "a", Type: types.Int32, Nullable: !d.HasArg("pk"), PrimaryKey: d.HasArg("pk")},
				{Name: "b", Type: types.Int32, Nullable: true},
			}
			var pk []int
			if d.HasArg("pk") {
				pk = []int{0}
			}
			tb, err := New(s, "db", arg("name"), sql.NewPrimaryKeySchema(cols, pk...), sql.Collation_Default)
			if err != nil {
				return err.Error()
			}
			s.Add(tb)
			if d.HasArg("unique-b") {
				err := tb.CreateIndex(ctx, sql.IndexDef{Name: "ub", Constraint: sql.IndexConstraint_Unique, Columns: []sql.IndexColumn{{Name: "b"}}})
				if err != nil {
					return err.Error()
				}
			}
		case "insert", "fail-statement":
			tb := table()
			statement(tb, d.Cmd == "fail-statement", func(r, _ sql.Row) error { return tb.Insert(ctx, r) })
		case "update":
			tb := table()
			statement(tb, false, func(from, to sql.Row) error { return tb.Update(ctx, from, to) })
		case "delete":
			tb := table()
			statement(tb, false, func(r, _ sql.Row) error { return tb.Delete(ctx, r) })
		case "rows":
			iter, err := table().PartitionRows(ctx, nil)
			if err != nil {
				return err.Error()
			}
			for {
				r, err := iter.Next(ctx)
				if err == io.EOF {
					break
				}
				vals := make([]string, len(r))
				for i, v := range r {
					vals[i] = fmt.Sprint(v)
					if v == nil {
						vals[i] = "NULL"
					}
				}
				fmt.Fprintln(&out, strings.Join(vals, " "))
			}
			if out.Len() == 0 {
				return "(empty)\n"
			}
		case "begin":
			s.BeginTransaction()
		case "commit":
			s.Commit()
		case "rollback":
			s.Rollback()
		case "savepoint":
			s.Savepoint(arg("name"))
		case "rollback-to":
			if !s.RollbackTo(arg("name")) {
				return "no such savepoint\n"
			}
		case "release":
			s.Release(arg("name"))
		case "drop":
			return fmt.Sprintf("dropped %v\n", s.Drop("db", arg("name")))
		case "rename":
			if err := s.Rename("db", arg("name"), arg("to")); err != nil {
				return err.Error() + "\n"
			}
		default:
			t.Fatalf("unknown command %s", d.Cmd)
		}
		return out.String()
	})
}

// parseRow reads "a b" (either may be NULL).
func parseRow(t *testing.T, s string) sql.Row {
	var row sql.Row
	for _, f := range strings.Fields(s) {
		if f == "NULL" {
			row = append(row, nil)
			continue
		}
		v, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("row %q: %v", s, err)
		}
		row = append(row, int32(v))
	}
	return row
}
