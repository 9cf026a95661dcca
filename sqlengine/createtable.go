package sqlengine

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// schemaFormatter writes SHOW CREATE TABLE as MySQL 8.0 does where
// go-mysql-server's formatter differs: a nullable column without a default
// says DEFAULT NULL (`a` int DEFAULT NULL), except a TEXT or BLOB column,
// an AUTO_INCREMENT or a generated one. Schema tools that compare
// SHOW CREATE TABLE with the statements they keep (and mysqldump's output
// read back into MySQL) then see the same text.
type schemaFormatter struct {
	sql.MySqlSchemaFormatter
}

// GenerateCreateTableColumnDefinition implements sql.SchemaFormatter.
func (f *schemaFormatter) GenerateCreateTableColumnDefinition(col *sql.Column, colDefault, onUpdate string, tableCollation sql.CollationID) string {
	if col.Nullable && col.Default == nil && col.Generated == nil && !col.AutoIncrement && !types.IsTextBlob(col.Type) {
		c := *col
		c.Default = &sql.ColumnDefaultValue{Literal: true}
		return f.MySqlSchemaFormatter.GenerateCreateTableColumnDefinition(&c, "NULL", onUpdate, tableCollation)
	}
	return f.MySqlSchemaFormatter.GenerateCreateTableColumnDefinition(col, colDefault, onUpdate, tableCollation)
}
