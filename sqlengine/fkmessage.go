package sqlengine

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
)

// fkViolationRe is go-mysql-server's text of 1451 and 1452.
var fkViolationRe = regexp.MustCompile("^cannot (add or update a child|delete or update a parent) row - Foreign key violation on fk: `(.+)`, table: `(.+)`, referenced table: `(.+)`, key: `.*`$")

// foreignKeyMessage gives 1451 and 1452 MySQL's text, which names the
// constraint with its definition: "Cannot add or update a child row: a
// foreign key constraint fails (`db`.`child`, CONSTRAINT `fk` FOREIGN KEY
// (`pid`) REFERENCES `parent` (`id`) ON DELETE CASCADE)". se is returned
// unchanged when the constraint cannot be found.
func foreignKeyMessage(ctx context.Context, s *Session, se *mysql.SQLError, query string) *mysql.SQLError {
	m := fkViolationRe.FindStringSubmatch(se.Message)
	if m == nil || s == nil || s.p == nil {
		return se
	}
	fkName, table := m[2], m[3]
	db := s.GetCurrentDatabase()
	for _, n := range qualifiedNames(query) {
		if strings.EqualFold(n[1], table) {
			db = n[0]
			break
		}
	}
	sctx := sql.NewContext(ctx, sql.WithSession(s))
	d, err := s.p.Database(sctx, db)
	if err != nil {
		return se
	}
	t, ok, err := d.GetTableInsensitive(sctx, table)
	if err != nil || !ok {
		return se
	}
	fkt, ok := t.(sql.ForeignKeyTable)
	if !ok {
		return se
	}
	fks, err := fkt.GetDeclaredForeignKeys(sctx)
	if err != nil {
		return se
	}
	for _, fk := range fks {
		if !strings.EqualFold(fk.Name, fkName) {
			continue
		}
		what := "Cannot add or update a child row"
		if strings.HasPrefix(m[1], "delete") {
			what = "Cannot delete or update a parent row"
		}
		parent := quoteName(fk.ParentTable)
		if fk.ParentDatabase != "" && !strings.EqualFold(fk.ParentDatabase, d.Name()) {
			parent = quoteName(fk.ParentDatabase) + "." + parent
		}
		def := fmt.Sprintf("(%s.%s, CONSTRAINT %s FOREIGN KEY (%s) REFERENCES %s (%s)%s%s)",
			quoteName(d.Name()), quoteName(t.Name()), quoteName(fk.Name), quoteNames(fk.Columns), parent,
			quoteNames(fk.ParentColumns), fkAction("DELETE", fk.OnDelete), fkAction("UPDATE", fk.OnUpdate))
		return mysql.NewSQLError(se.Number(), se.SQLState(), "%s: a foreign key constraint fails %s", what, def)
	}
	return se
}

// quoteNames quotes and joins identifiers.
func quoteNames(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = quoteName(n)
	}
	return strings.Join(q, ", ")
}

// fkAction is a foreign key's ON DELETE / ON UPDATE clause as MySQL
// prints it, empty for the default (RESTRICT).
func fkAction(on string, a sql.ForeignKeyReferentialAction) string {
	switch a {
	case sql.ForeignKeyReferentialAction_DefaultAction, sql.ForeignKeyReferentialAction_Restrict, "":
		return ""
	}
	return " ON " + on + " " + string(a)
}
