package sqlengine

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/vitess/go/mysql"
)

// truncatesTable refuses TRUNCATE TABLE of anything but a table, as MySQL
// does (1146): go-mysql-server resolves the name as it would in a query and
// truncates the first table under what it finds, so TRUNCATE of a view
// emptied the view's base table.
func truncatesTable(ctx *sql.Context, n *plan.Truncate) error {
	switch n.Child.(type) {
	case *plan.ResolvedTable, *plan.IndexedTableAccess:
		return nil
	}
	name := ""
	if nn, ok := n.Child.(sql.Nameable); ok {
		name = nn.Name()
	}
	db := n.DatabaseName()
	if db == "" {
		db = ctx.GetCurrentDatabase()
	}
	return mysql.NewSQLError(mysql.ERNoSuchTable, "42S02", "Table '%s.%s' doesn't exist", db, name)
}
