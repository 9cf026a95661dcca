package sqlengine

import (
	"fmt"
	"sort"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/information_schema"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
)

// Status and system variables as tables: performance_schema.global_status,
// session_status, global_variables and session_variables (MySQL 5.7 and
// later) and their information_schema twins GLOBAL_STATUS, SESSION_STATUS,
// GLOBAL_VARIABLES and SESSION_VARIABLES (MariaDB, MySQL 5.6), which
// go-mysql-server lacks. Monitoring tools read these rather than SHOW
// STATUS: ProxySQL's Galera monitor, mysqld_exporter, clustercheck scripts
// (SELECT VARIABLE_VALUE FROM ... WHERE VARIABLE_NAME = 'wsrep_local_state').

// perfSchemaName is the performance_schema database (only these tables).
const perfSchemaName = "performance_schema"

// varTable is one of those tables.
type varTable struct {
	name string
	// upper: names in capitals, as MariaDB's information_schema shows them
	upper bool
	// status: status variables, else system variables; global: the
	// global values, else the session's (with the global ones it lacks)
	status, global bool
}

var _ sql.Table = (*varTable)(nil)

// varTables returns the four tables of one schema. upper: the
// information_schema ones, whose variable names are in capitals as
// MariaDB shows them.
func varTables(upper bool) []*varTable {
	return []*varTable{
		{name: "global_status", upper: upper, status: true, global: true},
		{name: "session_status", upper: upper, status: true},
		{name: "global_variables", upper: upper, global: true},
		{name: "session_variables", upper: upper},
	}
}

// infoSchema is go-mysql-server's information_schema with its VIEWS
// replaced and the four tables (installed per engine, so other engines in the process, such as
// the compatibility suite's reference harness, keep theirs as built).
type infoSchema struct {
	sql.Database
	tables []*varTable
	// views replaces go-mysql-server's VIEWS (infoviews.go)
	views sql.Table
}

func withVarTables(db sql.Database) sql.Database {
	return infoSchema{Database: db, tables: varTables(true), views: newViewsTable()}
}

// GetTableInsensitive implements sql.Database.
func (d infoSchema) GetTableInsensitive(ctx *sql.Context, name string) (sql.Table, bool, error) {
	if strings.EqualFold(name, information_schema.ViewsTableName) {
		return d.views, true, nil
	}
	for _, t := range d.tables {
		if strings.EqualFold(t.name, name) {
			return t, true, nil
		}
	}
	return d.Database.GetTableInsensitive(ctx, name)
}

// GetTableNames implements sql.Database.
func (d infoSchema) GetTableNames(ctx *sql.Context) ([]string, error) {
	names, err := d.Database.GetTableNames(ctx)
	if err != nil {
		return nil, err
	}
	for _, t := range d.tables {
		names = append(names, t.name)
	}
	return names, nil
}

// Name implements sql.Nameable.
func (t *varTable) Name() string { return t.name }

// String implements fmt.Stringer.
func (t *varTable) String() string { return t.name }

// Schema implements sql.Table.
func (t *varTable) Schema(*sql.Context) sql.Schema {
	return sql.Schema{
		{Name: "VARIABLE_NAME", Type: types.MustCreateString(sqltypes.VarChar, 64, sql.Collation_utf8mb4_0900_ai_ci), Source: t.name},
		{Name: "VARIABLE_VALUE", Type: types.MustCreateString(sqltypes.VarChar, 1024, sql.Collation_utf8mb4_0900_ai_ci), Source: t.name, Nullable: true},
	}
}

// Collation implements sql.Table.
func (t *varTable) Collation() sql.CollationID { return sql.Collation_utf8mb4_0900_ai_ci }

// Partitions implements sql.Table: one partition.
func (t *varTable) Partitions(*sql.Context) (sql.PartitionIter, error) {
	return sql.PartitionsToPartitionIter(varPartition{}), nil
}

// PartitionRows implements sql.Table.
func (t *varTable) PartitionRows(ctx *sql.Context, _ sql.Partition) (sql.RowIter, error) {
	vals := t.values(ctx)
	rows := make([]sql.Row, 0, len(vals))
	for k, v := range vals {
		if t.upper {
			k = strings.ToUpper(k)
		}
		rows = append(rows, sql.Row{k, varText(v)})
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i][0].(string) < rows[j][0].(string) })
	return sql.RowsToRowIter(rows...), nil
}

// values returns the variables by name, as SHOW [GLOBAL] STATUS and SHOW
// [GLOBAL] VARIABLES see them.
func (t *varTable) values(ctx *sql.Context) map[string]any {
	out := map[string]any{}
	switch {
	case t.status:
		for k, v := range sql.StatusVariables.NewGlobalMap() {
			out[k] = v.Value()
		}
		if !t.global && ctx.Session != nil {
			for k, v := range ctx.Session.GetAllStatusVariables(ctx) {
				out[k] = v.Value()
			}
		}
	case t.global:
		out = sql.SystemVariables.GetAllGlobalVariables()
	case ctx.Session != nil:
		out = ctx.Session.GetAllSessionVariables()
	}
	return out
}

// varText is a variable's value as text; booleans are ON or OFF, as SHOW
// VARIABLES shows them.
func varText(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case int8:
		switch x {
		case 0:
			return "OFF"
		case 1:
			return "ON"
		}
	case string:
		return x
	}
	return fmt.Sprint(v)
}

// varPartition is a varTable's only partition.
type varPartition struct{}

// Key implements sql.Partition.
func (varPartition) Key() []byte { return []byte("vars") }

// errSystemDatabase is MySQL's answer to dropping performance_schema.
func errSystemDatabase(ctx *sql.Context, name string) error {
	user, host := "", ""
	if ctx.Session != nil {
		user, host = ctx.Session.Client().User, ctx.Session.Client().Address
	}
	return mysql.NewSQLError(mysql.ERDBAccessDenied, "42000", "Access denied for user '%s'@'%s' to database '%s'", user, host, name)
}

// perfSchema is the performance_schema database.
type perfSchema struct {
	tables []*varTable
}

var _ sql.Database = (*perfSchema)(nil)

func newPerfSchema() *perfSchema { return &perfSchema{tables: varTables(false)} }

// Name implements sql.Nameable.
func (d *perfSchema) Name() string { return perfSchemaName }

// GetTableInsensitive implements sql.Database.
func (d *perfSchema) GetTableInsensitive(_ *sql.Context, name string) (sql.Table, bool, error) {
	for _, t := range d.tables {
		if strings.EqualFold(t.name, name) {
			return t, true, nil
		}
	}
	return nil, false, nil
}

// GetTableNames implements sql.Database.
func (d *perfSchema) GetTableNames(*sql.Context) ([]string, error) {
	names := make([]string, len(d.tables))
	for i, t := range d.tables {
		names[i] = t.name
	}
	return names, nil
}

var _ sql.ViewDatabase = (*perfSchema)(nil)

// CreateView implements sql.ViewDatabase: performance_schema holds no views.
func (d *perfSchema) CreateView(ctx *sql.Context, _, _, _ string) error {
	return errSystemDatabase(ctx, perfSchemaName)
}

// DropView implements sql.ViewDatabase.
func (d *perfSchema) DropView(_ *sql.Context, name string) error {
	return sql.ErrViewDoesNotExist.New(perfSchemaName, name)
}

// GetViewDefinition implements sql.ViewDatabase.
func (d *perfSchema) GetViewDefinition(*sql.Context, string) (sql.ViewDefinition, bool, error) {
	return sql.ViewDefinition{}, false, nil
}

// AllViews implements sql.ViewDatabase.
func (d *perfSchema) AllViews(*sql.Context) ([]sql.ViewDefinition, error) { return nil, nil }
