package sqlengine

import (
	"context"
	"errors"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
	"github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/certusdb/certus/internal/sqllex"
)

// CHECKSUM TABLE, which go-mysql-server does not parse and Galera users
// run on every node to see that the nodes hold the same rows. The value is
// Certus's own (MySQL's is a CRC of its row format), the same on every
// node that holds the same rows: a sum of a hash of each row's values, so
// row order does not matter and duplicate rows count.

// checksumTables answers CHECKSUM TABLE t [, t ...] [QUICK | EXTENDED]
// with one row per table: its name and checksum, NULL for a table that
// does not exist (as MySQL). The rows are read by a SELECT the session
// runs, so its privileges, snapshot and wsrep_sync_wait apply.
// handled is false when query is not one such statement alone.
func (h *Handler) checksumTables(ctx context.Context, c *mysql.Conn, query string, out func(*sqltypes.Result) error) (handled bool, err error) {
	names, ok := checksumNames(query)
	if !ok {
		return false, nil
	}
	res := &sqltypes.Result{Fields: []*querypb.Field{
		{Name: "Table", Type: querypb.Type_VARCHAR, Charset: mysql.CharacterSetUtf8, ColumnLength: 64 * 4 * 2},
		{Name: "Checksum", Type: querypb.Type_INT64, Charset: mysql.CharacterSetBinary, ColumnLength: 21},
	}}
	for _, n := range names {
		db, name, err := h.qualified(c, n)
		if err != nil {
			return true, err
		}
		sum, found, err := h.tableChecksum(ctx, c, name)
		if err != nil {
			return true, err
		}
		v := sqltypes.NULL
		if found {
			v = sqltypes.NewInt64(int64(sum & (1<<63 - 1)))
		}
		res.Rows = append(res.Rows, []sqltypes.Value{sqltypes.NewVarChar(db + "." + n.Name.String()), v})
	}
	return true, out(res)
}

// checksumNames parses CHECKSUM TABLE t [, t ...] [QUICK | EXTENDED].
func checksumNames(query string) ([]sqlparser.TableName, bool) {
	return tableList(query, []string{"CHECKSUM"}, "QUICK", "EXTENDED")
}

// tableList parses a statement made of the words lead (the last optional
// when there are two, as in OPTIMIZE [LOCAL] TABLE), TABLE, a list of
// table names and one optional trailing option. ok is false for anything
// else, or when more statements follow.
func tableList(query string, lead []string, options ...string) (names []sqlparser.TableName, ok bool) {
	first, rest, err := sqlparser.SplitStatement(query)
	if err != nil || strings.TrimSpace(rest) != "" {
		return nil, false
	}
	lx := sqllex.NewScanner(first)
	w := lx.Word()
	if w != lead[0] {
		return nil, false
	}
	w = lx.Word()
	for _, optional := range lead[1:] {
		if w == optional {
			w = lx.Word()
		}
	}
	if w != "TABLE" {
		return nil, false
	}
	list := strings.TrimSpace(first[lx.Pos():])
	for _, opt := range options {
		if len(list) > len(opt) && strings.EqualFold(list[len(list)-len(opt):], opt) {
			list = strings.TrimSpace(list[:len(list)-len(opt)])
		}
	}
	// the table list is that of a SELECT ... FROM t1, t2
	st, err := sqlparser.Parse("SELECT 1 FROM " + list)
	if err != nil {
		return nil, false
	}
	sel, ok := st.(*sqlparser.Select)
	if !ok {
		return nil, false
	}
	for _, te := range sel.From {
		at, ok := te.(*sqlparser.AliasedTableExpr)
		if !ok || !at.As.IsEmpty() {
			return nil, false
		}
		tn, ok := at.Expr.(sqlparser.TableName)
		if !ok {
			return nil, false
		}
		names = append(names, tn)
	}
	return names, len(names) > 0
}

// qualified returns n's database (the session's current one when n names
// none) and n as a quoted, qualified name.
func (h *Handler) qualified(c *mysql.Conn, n sqlparser.TableName) (db, name string, err error) {
	db = n.DbQualifier.String()
	if s := h.session(c); db == "" && s != nil {
		db = s.GetCurrentDatabase()
	}
	if db == "" {
		return "", "", mysql.NewSQLError(mysql.ERNoDb, "3D000", "No database selected")
	}
	return db, sqlparser.String(sqlparser.TableName{Name: n.Name, DbQualifier: sqlparser.NewTableIdent(db)}), nil
}

// tableChecksum reads every row of table (a quoted, qualified name) and
// returns the sum of their hashes; found is false when it does not exist.
func (h *Handler) tableChecksum(ctx context.Context, c *mysql.Conn, table string) (sum uint64, found bool, err error) {
	var d xxhash.Digest
	var buf []byte
	err = h.inner.ComQuery(ctx, c, "SELECT * FROM "+table, func(r *sqltypes.Result, _ bool) error {
		for _, row := range r.Rows {
			buf = buf[:0]
			for _, v := range row {
				if v.IsNull() {
					buf = append(buf, 0)
					continue
				}
				b := v.Raw()
				buf = append(buf, 1, byte(len(b)>>24), byte(len(b)>>16), byte(len(b)>>8), byte(len(b)))
				buf = append(buf, b...)
			}
			d.Reset()
			_, _ = d.Write(buf)
			sum += d.Sum64()
		}
		return nil
	})
	if err != nil {
		var se *mysql.SQLError
		if errors.As(ToSQLError(err), &se) && se.Number() == mysql.ERNoSuchTable {
			return 0, false, nil
		}
		return 0, false, ToSQLError(err)
	}
	return sum, true, nil
}
