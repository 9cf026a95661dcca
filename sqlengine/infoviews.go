package sqlengine

import (
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/information_schema"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/planbuilder"
)

// information_schema.VIEWS lists the views a user may see: those it has
// SHOW VIEW on (globally, on the database or on the view). go-mysql-server
// read each view's CREATE VIEW through the planner with the user's own
// privileges, which asked for CREATE VIEW: a user with SELECT and SHOW
// VIEW, as a backup account has, saw no view, and mysqldump of a database
// with views failed (`Got error: 0: "" when trying to save the result of
// SHOW CREATE TABLE in ds_view`). The definitions are read here without
// that check; the rows are go-mysql-server's.

// newViewsTable is information_schema.VIEWS read by viewsRows.
func newViewsTable() *information_schema.InformationSchemaTable {
	t := information_schema.NewViewsTable()
	t.Reader = viewsRows
	return t
}

// viewsRows are the rows of information_schema.VIEWS.
func viewsRows(ctx *sql.Context, cat sql.Catalog) (sql.RowIter, error) {
	privs, _ := ctx.GetPrivilegeSet()
	if privs == nil {
		return sql.RowsToRowIter(), nil
	}
	dbs, err := information_schema.AllDatabasesWithNames(ctx, cat, false)
	if err != nil {
		return nil, err
	}
	var rows []sql.Row
	for _, db := range dbs {
		dbPrivs := privs.Database(db.Database.Name())
		views, err := information_schema.ViewsInDatabase(ctx, db.Database)
		if err != nil {
			return nil, err
		}
		collation := plan.GetDatabaseCollation(ctx, db.Database)
		for _, v := range views {
			if !privs.Has(sql.PrivilegeType_ShowView) && !dbPrivs.Has(sql.PrivilegeType_ShowView) &&
				!dbPrivs.Table(v.Name).Has(sql.PrivilegeType_ShowView) {
				continue
			}
			b := planbuilder.New(ctx, cat, nil)
			b.DisableAuth()
			b.SetParserOptions(sql.NewSqlModeFromString(v.SqlMode).ParserOptions())
			node, _, _, _, err := b.Parse(v.CreateViewStatement, nil, false)
			if err != nil {
				continue // a view whose tables are gone
			}
			cv, ok := node.(*plan.CreateView)
			if !ok {
				continue
			}
			checkOpt, updatable, security := cv.CheckOpt, "YES", cv.Security
			if checkOpt == "" {
				checkOpt = "NONE"
			}
			if !plan.GetIsUpdatableFromCreateView(ctx, cv) {
				updatable = "NO"
			}
			if security == "" {
				security = "DEFINER"
			}
			definer := strings.ReplaceAll(cv.Definer, "`", "") // `u`@`h` is u@h
			rows = append(rows, sql.Row{db.CatalogName, db.SchemaName, v.Name, cv.Definition.TextDefinition,
				checkOpt, updatable, definer, security,
				collation.CharacterSet().String(), collation.String()})
		}
	}
	return sql.RowsToRowIter(rows...), nil
}
