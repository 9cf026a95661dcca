package sqlengine

import (
	"fmt"
	"strings"
	"sync"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/planbuilder"
	"github.com/dolthub/go-mysql-server/sql/transform"

	"github.com/certusdb/certus/storage"
)

// schemaCache keeps the resolved go-mysql-server schema of each table
// definition. Definitions are immutable, so the pointer is the key.
var schemaCache sync.Map // *storage.TableDef -> sql.Schema

// tableSchema returns def's schema with column defaults, generated columns
// and ON UPDATE expressions resolved.
func tableSchema(ctx *sql.Context, def *storage.TableDef, info *storage.TableInfo) sql.Schema {
	if s, ok := schemaCache.Load(def); ok {
		return s.(sql.Schema)
	}
	sch := make(sql.Schema, len(def.Columns))
	pk := map[uint32]bool{}
	for _, id := range def.PK {
		pk[id] = true
	}
	for i, c := range def.Columns {
		col := &sql.Column{
			Name:           c.Name,
			Type:           info.Types[i],
			Source:         def.Name,
			DatabaseSource: def.DB,
			Comment:        c.Comment,
			Extra:          c.Extra,
			PrimaryKey:     pk[c.ID],
			Nullable:       c.Nullable,
			AutoIncrement:  c.AutoIncrement,
			Virtual:        c.Virtual,
			Hidden:         c.Hidden,
			HiddenSystem:   c.HiddenSystem,
		}
		if c.HasDefault {
			col.Default = sql.NewUnresolvedColumnDefaultValue(c.Default)
		}
		if c.Generated != "" {
			col.Generated = sql.NewUnresolvedColumnDefaultValue(c.Generated)
		}
		if c.OnUpdate != "" {
			col.OnUpdate = sql.NewUnresolvedColumnDefaultValue(c.OnUpdate)
		}
		sch[i] = col
	}
	if ctx == nil {
		ctx = sql.NewEmptyContext()
	}
	b := planbuilder.NewBuilderForColumnDefaultResolution(ctx, sql.EngineOverrides{})
	resolved := resolveDefaults(b, def, sch)
	schemaCache.Store(def, resolved)
	return resolved
}

// resolveDefaults resolves default expressions; a definition that does not
// resolve (it should not happen) keeps the unresolved text rather than fail
// every read of the table.
func resolveDefaults(b *planbuilder.Builder, def *storage.TableDef, sch sql.Schema) (out sql.Schema) {
	defer func() {
		if r := recover(); r != nil {
			out = sch
		}
	}()
	out = b.ResolveSchemaDefaults(def.DB, def.Name, sch)
	for _, c := range out {
		c.Default = unqualified(c.Default)
		if c.HiddenSystem {
			c.Generated = unqualified(c.Generated)
		}
	}
	return out
}

// unqualified strips the table name from the columns an expression refers
// to, as go-mysql-server does when it creates a column default or a
// functional index: they print, and are stored, as written in a table
// definition ((c1 * 10), not (t.c1 * 10)).
func unqualified(d *sql.ColumnDefaultValue) *sql.ColumnDefaultValue {
	if d == nil || d.Expr == nil {
		return d
	}
	e, same, err := transform.Expr(sql.NewEmptyContext(), d.Expr, func(_ *sql.Context, e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
		if gf, ok := e.(*expression.GetField); ok {
			return gf.WithTable(""), transform.NewTree, nil
		}
		return e, transform.SameTree, nil
	})
	if err != nil || same {
		return d
	}
	n := *d
	n.Expr = e
	return &n
}

// columnDef converts a go-mysql-server column to a stored column.
func columnDef(col *sql.Column, id uint32) storage.ColumnDef {
	c := storage.ColumnDef{
		ID:            id,
		Name:          col.Name,
		Type:          typeString(col.Type),
		Nullable:      col.Nullable,
		AutoIncrement: col.AutoIncrement,
		Comment:       col.Comment,
		Extra:         col.Extra,
		Virtual:       col.Virtual,
		Hidden:        col.Hidden,
		HiddenSystem:  col.HiddenSystem,
	}
	if col.Default != nil {
		c.HasDefault = true
		c.Default = col.Default.String()
	}
	if col.Generated != nil {
		c.Generated = col.Generated.String()
	}
	if col.OnUpdate != nil {
		c.OnUpdate = col.OnUpdate.String()
	}
	return c
}

// typeString is the stored text of a column type, which must parse back
// to the same type. go-mysql-server's String() leaves out a collation
// equal to the server's default, which parses back as "unspecified" (an
// ENUM then shows CHARACTER SET and COLLATE in SHOW CREATE TABLE, a CHAR
// key no longer matches a foreign key's), and a spatial column's SRID.
func typeString(typ sql.Type) string {
	s := typ.String()
	if tc, ok := typ.(sql.TypeWithCollation); ok {
		s = tc.StringWithTableCollation(sql.Collation_Unspecified)
	}
	if sc, ok := typ.(sql.SpatialColumnType); ok {
		if srid, defined := sc.GetSpatialTypeSRID(); defined {
			s += fmt.Sprintf(" SRID %d", srid)
		}
	}
	return s
}

// newTableDef builds a definition for CREATE TABLE.
func newTableDef(id uint64, db, name string, sch sql.PrimaryKeySchema, collation sql.CollationID, comment string) (*storage.TableDef, error) {
	def := &storage.TableDef{ID: id, DB: db, Name: name, Comment: comment, NextColumnID: 1, NextIndexID: 1}
	if collation != sql.Collation_Unspecified {
		def.Collation = collation.Name()
	}
	for _, col := range sch.Schema {
		def.Columns = append(def.Columns, columnDef(col, def.NextColumnID))
		def.NextColumnID++
	}
	for _, ord := range sch.PkOrdinals {
		def.PK = append(def.PK, def.Columns[ord].ID)
	}
	if err := checkDef(def); err != nil {
		return nil, err
	}
	return def, nil
}

// noPrefix refuses a primary key on column prefixes (PRIMARY KEY (c(10))):
// the key is always the whole value, and uniqueness of a prefix is not
// what it would enforce.
func noPrefix(cols []sql.IndexColumn) error {
	for _, c := range cols {
		if c.Length > 0 {
			return sql.ErrUnsupportedIndexPrefix.New(c.Name)
		}
	}
	return nil
}

// pkNotNull makes the primary key's columns NOT NULL, as MySQL does
// whatever the column definition says (ALTER TABLE ... MODIFY pk INT).
func pkNotNull(def *storage.TableDef) {
	for _, id := range def.PK {
		if c, _ := def.Column(id); c != nil {
			c.Nullable = false
		}
	}
}

// checkDef validates that a definition can be stored: every type parses
// back and every key column has a key encoding.
func checkDef(def *storage.TableDef) error {
	seen := map[string]bool{}
	for _, c := range def.Columns {
		l := strings.ToLower(c.Name)
		if seen[l] {
			return sql.ErrDuplicateColumn.New(c.Name)
		}
		seen[l] = true
	}
	_, err := def.Info()
	return err
}

// indexDef converts a go-mysql-server index definition, resolving column
// names against def.
func indexDef(def *storage.TableDef, idx sql.IndexDef) (storage.IndexDef, error) {
	out := storage.IndexDef{ID: def.NextIndexID, Name: idx.Name, Unique: idx.IsUnique(), Comment: idx.Comment}
	switch {
	case idx.IsFullText():
		out.Kind = "FULLTEXT"
	case idx.IsSpatial():
		out.Kind = "SPATIAL"
	case idx.IsVector():
		out.Kind = "VECTOR"
	}
	hasPrefix := false
	for _, ic := range idx.Columns {
		c, _ := def.ColumnByName(ic.Name)
		if c == nil {
			return out, sql.ErrKeyColumnDoesNotExist.New(ic.Name)
		}
		out.Columns = append(out.Columns, c.ID)
		out.Prefix = append(out.Prefix, uint16(ic.Length))
		if ic.Length > 0 {
			hasPrefix = true
		}
	}
	if !hasPrefix {
		out.Prefix = nil
	}
	return out, nil
}
