package sqlengine

import (
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// A value given for a generated column is refused in strict mode, as in
// MySQL and MariaDB (3105 / 1906). Outside strict mode MariaDB ignores it
// with warning 1906, and its mysqldump (Debian's mysqldump) relies on that:
// its INSERTs list every column's value, generated ones included, under
// SQL_MODE='NO_AUTO_VALUE_ON_ZERO'. go-mysql-server refused them whatever
// the mode, so such a dump could not be restored. dropGeneratedValues
// leaves those columns out of the INSERT outside strict mode, with MariaDB's
// warning (go-mysql-server fails a DEFAULT for a generated column named
// in the column list, so the columns go rather than get DEFAULT).

// erGeneratedValueIgnored is MariaDB's ER_WARNING_NON_DEFAULT_VALUE_FOR_GENERATED_COLUMN.
const erGeneratedValueIgnored = 1906

// dropGeneratedValues leaves the generated columns out of ins, values and
// all, when the session is not in strict mode. Its warnings wait in the
// session until the INSERT runs (go-mysql-server clears the warnings
// after planning).
func (p *Provider) dropGeneratedValues(ctx *sql.Context, ins *ast.Insert) {
	var rows ast.Values
	switch r := ins.Rows.(type) {
	case ast.Values:
		rows = r
	case *ast.AliasedValues:
		rows = r.Values
	default:
		return
	}
	s, ok := ctx.Session.(*Session)
	if !ok || len(rows) == 0 || sql.LoadSqlMode(ctx).Strict() {
		return
	}
	db := ins.Table.DbQualifier.String()
	if db == "" {
		db = ctx.GetCurrentDatabase()
	}
	def, ok := p.catalog(ctx).TableByName(db, ins.Table.Name.String())
	if !ok {
		return
	}
	generated := map[string]bool{}
	cols := ins.Columns
	for _, c := range def.Columns {
		if c.Generated != "" {
			generated[strings.ToLower(c.Name)] = true
		}
		if len(ins.Columns) == 0 && !c.Hidden && !c.HiddenSystem {
			cols = append(cols, ast.NewColIdent(c.Name))
		}
	}
	drop := make([]bool, len(cols))
	var kept ast.Columns
	for i, c := range cols {
		drop[i] = generated[strings.ToLower(c.String())]
		if !drop[i] {
			kept = append(kept, c)
		}
	}
	if len(kept) == len(cols) {
		return
	}
	for r, row := range rows {
		if len(row) != len(cols) {
			return // a wrong count: go-mysql-server's error
		}
		out := row[:0:0]
		for i, v := range row {
			if !drop[i] {
				out = append(out, v)
				continue
			}
			if _, isDefault := v.(*ast.Default); !isDefault {
				s.deferWarning(erGeneratedValueIgnored, fmt.Sprintf("The value specified for generated column '%s' in table '%s' has been ignored", cols[i].String(), def.Name))
			}
		}
		rows[r] = out
	}
	ins.Columns = kept
}
