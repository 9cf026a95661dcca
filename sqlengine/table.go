package sqlengine

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/certusdb/certus/sqlengine/internal/gmstable"
	"github.com/certusdb/certus/storage"
	"github.com/certusdb/certus/txn"
)

// Table is a table as one statement sees it. It re-reads its definition
// from the transaction's catalog, so a table object used across the
// transaction's own DDL (ALTER TABLE ... then a rewrite) sees the change.
type Table struct {
	p    *Provider
	def  *storage.TableDef
	info *storage.TableInfo
	sch  sql.Schema // every column
	proj []string   // projected columns (nil: all; see projection.go)
}

var (
	_ sql.Table                    = (*Table)(nil)
	_ sql.PrimaryKeyTable          = (*Table)(nil)
	_ sql.IndexAddressableTable    = (*Table)(nil)
	_ sql.InsertableTable          = (*Table)(nil)
	_ sql.UpdatableTable           = (*Table)(nil)
	_ sql.DeletableTable           = (*Table)(nil)
	_ sql.ReplaceableTable         = (*Table)(nil)
	_ sql.TruncateableTable        = (*Table)(nil)
	_ sql.AutoIncrementTable       = (*Table)(nil)
	_ sql.AutoIncrementGetter      = (*Table)(nil)
	_ sql.AlterableTable           = (*Table)(nil)
	_ sql.RewritableTable          = (*Table)(nil)
	_ sql.IndexAlterableTable      = (*Table)(nil)
	_ sql.CheckTable               = (*Table)(nil)
	_ sql.CheckAlterableTable      = (*Table)(nil)
	_ sql.CommentedTable           = (*Table)(nil)
	_ sql.CommentAlterableTable    = (*Table)(nil)
	_ sql.CollationAlterableTable  = (*Table)(nil)
	_ sql.PrimaryKeyAlterableTable = (*Table)(nil)
	_ sql.StatisticsTable          = (*Table)(nil)
	_ sql.TemporaryTable           = (*Table)(nil)
	_ sql.Databaseable             = (*Table)(nil)
)

func newTable(ctx *sql.Context, p *Provider, def *storage.TableDef) (*Table, error) {
	info, err := def.Info()
	if err != nil {
		return nil, err
	}
	return &Table{p: p, def: def, info: info, sch: tableSchema(ctx, def, info)}, nil
}

// refresh picks up the transaction's current definition of the table.
func (t *Table) refresh(ctx *sql.Context) error {
	def, ok := t.p.catalog(ctx).Table(t.def.ID)
	if !ok {
		return sql.ErrTableNotFound.New(t.def.Name)
	}
	if def == t.def {
		return nil
	}
	info, err := def.Info()
	if err != nil {
		return err
	}
	t.def, t.info, t.sch = def, info, tableSchema(ctx, def, info)
	return nil
}

// Name implements sql.Nameable.
func (t *Table) Name() string { return t.def.Name }

// Database implements sql.Databaseable.
func (t *Table) Database() string { return t.def.DB }

// String implements fmt.Stringer.
func (t *Table) String() string { return t.def.Name }

// Schema implements sql.Table: the projected columns.
func (t *Table) Schema(ctx *sql.Context) sql.Schema {
	sch := t.fullSchema(ctx)
	ords, err := t.projOrds()
	if err != nil || ords == nil {
		return sch
	}
	out := make(sql.Schema, len(ords))
	for i, o := range ords {
		out[i] = sch[o]
	}
	return out
}

// fullSchema is the schema of every column.
func (t *Table) fullSchema(ctx *sql.Context) sql.Schema {
	if ctx != nil {
		_ = t.refresh(ctx)
	}
	return t.sch
}

// PrimaryKeySchema implements sql.PrimaryKeyTable.
func (t *Table) PrimaryKeySchema(ctx *sql.Context) sql.PrimaryKeySchema {
	return sql.NewPrimaryKeySchema(t.fullSchema(ctx), t.info.PKOrds...)
}

// Collation implements sql.Table.
func (t *Table) Collation() sql.CollationID {
	if t.def.Collation == "" {
		return sql.Collation_Default
	}
	c, err := sql.ParseCollation("", t.def.Collation, false)
	if err != nil {
		return sql.Collation_Default
	}
	return c
}

// Comment implements sql.CommentedTable.
func (t *Table) Comment() string { return t.def.Comment }

// IsTemporary implements sql.TemporaryTable.
func (t *Table) IsTemporary() bool { return false }

// Partitions implements sql.Table.
func (t *Table) Partitions(*sql.Context) (sql.PartitionIter, error) {
	return gmstable.Partitions(), nil
}

// PartitionRows implements sql.Table: a full scan in primary key order.
func (t *Table) PartitionRows(ctx *sql.Context, _ sql.Partition) (sql.RowIter, error) {
	if err := t.refresh(ctx); err != nil {
		return nil, err
	}
	ords, err := t.projOrds()
	if err != nil {
		return nil, err
	}
	tx := t.p.txnFor(ctx)
	mode := readMode(ctx)
	opened := false
	return &rowIter{proj: ords, next: func() (*txn.RowIter, error) {
		if opened {
			return nil, nil
		}
		opened = true
		it, err := tx.Scan(ctx, t.info, nil, nil, false, mode)
		return it, engineErr(err)
	}}, nil
}

// rowIter adapts txn.RowIter to sql.RowIter. It opens its storage
// iterators at the first Next, not when created: go-mysql-server's
// TableRowIter.IsValueRowIter asks a table for a partition's rows and drops
// them unclosed when they are not value rows, so an iterator opened
// up front would leak (and cost a second pebble iterator per query).
type rowIter struct {
	it     *txn.RowIter
	filter sql.Expression // re-checks rows of inexact index ranges
	// next opens the storage iterator of the next key range; nil (and no
	// error) when there is none
	next func() (*txn.RowIter, error)
	proj []int // the projected columns (nil: all)
	rows int   // rows read, to check the statement's context now and then
}

// cancelCheckRows is how many rows a scan reads between two looks at its
// statement's context: a join re-scans its inner table for each outer row,
// so the check is in the scan, at its first row and then every so many.
const cancelCheckRows = 256

func (r *rowIter) Next(ctx *sql.Context) (sql.Row, error) {
	for {
		if r.it == nil {
			if r.next == nil {
				return nil, io.EOF
			}
			it, err := r.next()
			if err != nil {
				return nil, err
			}
			if it == nil {
				r.next = nil
				return nil, io.EOF
			}
			r.it = it
		}
		if r.rows++; r.rows%cancelCheckRows == 1 {
			if err := ctx.Err(); err != nil {
				return nil, err // KILL QUERY, max_execution_time or a client gone
			}
		}
		_, row, ok, err := r.it.Next()
		if err != nil {
			return nil, engineErr(err)
		}
		if !ok {
			r.it.Close()
			r.it = nil
			continue
		}
		if r.filter != nil {
			v, err := r.filter.Eval(ctx, row)
			if err != nil {
				return nil, err
			}
			if match, _ := v.(bool); !match {
				continue
			}
		}
		return project(row, r.proj), nil
	}
}

func (r *rowIter) Close(*sql.Context) error {
	if r.it != nil {
		err := r.it.Close()
		r.it = nil
		return err
	}
	return nil
}

// DataLength implements sql.StatisticsTable (an estimate).
func (t *Table) DataLength(ctx *sql.Context) (uint64, error) {
	n, _, err := t.RowCount(ctx)
	return n * 128, err
}

// RowCount implements sql.StatisticsTable. The count is estimated from
// the storage's size estimate, cached for a few seconds so costing stays
// cheap.
func (t *Table) RowCount(ctx *sql.Context) (uint64, bool, error) {
	return t.p.rowEstimate(t.def.ID, t.info)
}

// Inserter implements sql.InsertableTable.
func (t *Table) Inserter(ctx *sql.Context) sql.RowInserter { return t.editor(ctx) }

// Updater implements sql.UpdatableTable.
func (t *Table) Updater(ctx *sql.Context) sql.RowUpdater { return t.editor(ctx) }

// Deleter implements sql.DeletableTable.
func (t *Table) Deleter(ctx *sql.Context) sql.RowDeleter { return t.editor(ctx) }

// Replacer implements sql.ReplaceableTable.
func (t *Table) Replacer(ctx *sql.Context) sql.RowReplacer { return t.editor(ctx) }

func (t *Table) editor(ctx *sql.Context) *editor {
	_ = t.refresh(ctx)
	return &editor{t: t}
}

// Truncate implements sql.TruncateableTable.
func (t *Table) Truncate(ctx *sql.Context) (int, error) {
	if err := t.refresh(ctx); err != nil {
		return 0, err
	}
	n, err := t.p.txnFor(ctx).Truncate(ctx, t.info)
	if err == nil {
		t.p.mgr.ResetAutoIncrement(t.def.ID)
	}
	return n, err
}

// GetChecks implements sql.CheckTable.
func (t *Table) GetChecks(ctx *sql.Context) ([]sql.CheckDefinition, error) {
	_ = t.refresh(ctx)
	out := make([]sql.CheckDefinition, len(t.def.Checks))
	for i, c := range t.def.Checks {
		out[i] = sql.CheckDefinition{Name: c.Name, CheckExpression: c.Expr, Enforced: c.Enforced}
	}
	return out, nil
}

// alter records a new definition of the table, built by fn from a copy of
// the current one, plus extra schema operations. also lists other tables
// the change concerns (a foreign key's parent).
func (t *Table) alter(ctx *sql.Context, fn func(def *storage.TableDef) ([]*storage.SchemaOp, error), also ...uint64) error {
	if err := t.refresh(ctx); err != nil {
		return err
	}
	n := t.def.Clone()
	extra, err := fn(n)
	if err != nil {
		return err
	}
	pkNotNull(n)
	if err := checkDef(n); err != nil {
		return err
	}
	tx := t.p.txnFor(ctx)
	if err := tx.SchemaChange(&storage.SchemaOp{Kind: storage.OpPutTable, Table: n, TableID: n.ID}, append([]uint64{n.ID}, also...)...); err != nil {
		return err
	}
	for _, op := range extra {
		if err := tx.SchemaChange(op, n.ID); err != nil {
			return err
		}
	}
	return t.refresh(ctx)
}

// CreateCheck implements sql.CheckAlterableTable.
// An unnamed check gets MySQL's name for it, <table>_chk_<n>.
func (t *Table) CreateCheck(ctx *sql.Context, check *sql.CheckDefinition) error {
	return t.alter(ctx, func(def *storage.TableDef) ([]*storage.SchemaOp, error) {
		name := check.Name
		for n := 1; name == ""; n++ {
			name = fmt.Sprintf("%s_chk_%d", def.Name, n)
			if checkNamed(def, name) {
				name = ""
			}
		}
		if checkNamed(def, name) {
			return nil, fmt.Errorf("Duplicate check constraint name '%s'", name)
		}
		def.Checks = append(def.Checks, storage.CheckDef{Name: name, Expr: check.CheckExpression, Enforced: check.Enforced})
		return nil, nil
	})
}

// checkNamed reports whether def has a check constraint named name.
func checkNamed(def *storage.TableDef, name string) bool {
	for _, c := range def.Checks {
		if strings.EqualFold(c.Name, name) {
			return true
		}
	}
	return false
}

// DropCheck implements sql.CheckAlterableTable.
func (t *Table) DropCheck(ctx *sql.Context, name string) error {
	return t.alter(ctx, func(def *storage.TableDef) ([]*storage.SchemaOp, error) {
		for i, c := range def.Checks {
			if strings.EqualFold(c.Name, name) {
				def.Checks = append(def.Checks[:i], def.Checks[i+1:]...)
				return nil, nil
			}
		}
		return nil, sql.ErrUnknownConstraint.New(name)
	})
}

// ModifyComment implements sql.CommentAlterableTable.
func (t *Table) ModifyComment(ctx *sql.Context, comment string) error {
	return t.alter(ctx, func(def *storage.TableDef) ([]*storage.SchemaOp, error) {
		def.Comment = comment
		return nil, nil
	})
}

// ModifyStoredCollation implements sql.CollationAlterableTable.
func (t *Table) ModifyStoredCollation(ctx *sql.Context, collation sql.CollationID) error {
	return fmt.Errorf("converting a table's stored character set is not supported")
}

// ModifyDefaultCollation implements sql.CollationAlterableTable.
func (t *Table) ModifyDefaultCollation(ctx *sql.Context, collation sql.CollationID) error {
	return t.alter(ctx, func(def *storage.TableDef) ([]*storage.SchemaOp, error) {
		def.Collation = collation.Name()
		return nil, nil
	})
}

// insertColumn places c in def.Columns according to order.
func insertColumn(def *storage.TableDef, c storage.ColumnDef, order *sql.ColumnOrder) error {
	pos := len(def.Columns)
	if order != nil {
		if order.First {
			pos = 0
		} else if order.AfterColumn != "" {
			_, i := def.ColumnByName(order.AfterColumn)
			if i < 0 {
				return sql.ErrTableColumnNotFound.New(def.Name, order.AfterColumn)
			}
			pos = i + 1
		}
	}
	def.Columns = append(def.Columns, storage.ColumnDef{})
	copy(def.Columns[pos+1:], def.Columns[pos:])
	def.Columns[pos] = c
	return nil
}

// AddColumn implements sql.AlterableTable (columns that need no rewrite).
func (t *Table) AddColumn(ctx *sql.Context, column *sql.Column, order *sql.ColumnOrder) error {
	return t.alter(ctx, func(def *storage.TableDef) ([]*storage.SchemaOp, error) {
		if c, _ := def.ColumnByName(column.Name); c != nil {
			return nil, sql.ErrDuplicateColumn.New(column.Name)
		}
		c := columnDef(column, def.NextColumnID)
		def.NextColumnID++
		if err := insertColumn(def, c, order); err != nil {
			return nil, err
		}
		if column.PrimaryKey {
			def.PK = append(def.PK, c.ID)
		}
		return nil, nil
	})
}

// DropColumn implements sql.AlterableTable. Stored rows keep the dropped
// value until rewritten; it is skipped when they are read. As in MySQL the
// column leaves every index it is part of: an index left without columns
// is dropped, another is rebuilt (under a new id) without it.
func (t *Table) DropColumn(ctx *sql.Context, name string) error {
	return t.alter(ctx, func(def *storage.TableDef) ([]*storage.SchemaOp, error) {
		c, i := def.ColumnByName(name)
		if c == nil {
			return nil, sql.ErrTableColumnNotFound.New(def.Name, name)
		}
		id := c.ID // c points into def.Columns, which changes below
		if slices.Contains(def.PK, id) {
			return nil, fmt.Errorf("cannot drop column %s: it is part of the primary key", name)
		}
		def.Columns = append(def.Columns[:i], def.Columns[i+1:]...)
		var ops []*storage.SchemaOp
		kept := def.Indexes[:0]
		for _, ix := range def.Indexes {
			at := slices.Index(ix.Columns, id)
			if at < 0 {
				kept = append(kept, ix)
				continue
			}
			ops = append(ops, &storage.SchemaOp{Kind: storage.OpDropIndexData, TableID: def.ID, IndexID: ix.ID})
			if len(ix.Columns) == 1 {
				continue
			}
			ix.Columns = slices.Delete(slices.Clone(ix.Columns), at, at+1)
			if ix.Prefix != nil {
				ix.Prefix = slices.Delete(slices.Clone(ix.Prefix), at, at+1)
			}
			ix.ID = def.NextIndexID
			def.NextIndexID++
			kept = append(kept, ix)
			ops = append(ops, &storage.SchemaOp{Kind: storage.OpBuildIndex, TableID: def.ID, IndexID: ix.ID})
		}
		def.Indexes = kept
		return ops, nil
	})
}

// ModifyColumn implements sql.AlterableTable for changes that keep the
// stored values valid (rename, default, comment, nullability); type changes
// go through RewriteInserter.
func (t *Table) ModifyColumn(ctx *sql.Context, name string, column *sql.Column, order *sql.ColumnOrder) error {
	if err := t.refresh(ctx); err != nil {
		return err
	}
	if old, ord := t.def.ColumnByName(name); old != nil && column.AutoIncrement && !old.AutoIncrement {
		if err := t.startAutoIncrement(ctx, ord); err != nil {
			return err
		}
	}
	return t.alter(ctx, func(def *storage.TableDef) ([]*storage.SchemaOp, error) {
		old, i := def.ColumnByName(name)
		if old == nil {
			return nil, sql.ErrTableColumnNotFound.New(def.Name, name)
		}
		c := columnDef(column, old.ID)
		def.Columns = append(def.Columns[:i], def.Columns[i+1:]...)
		if order == nil || (!order.First && order.AfterColumn == "") {
			order = nil
			def.Columns = append(def.Columns, storage.ColumnDef{})
			copy(def.Columns[i+1:], def.Columns[i:])
			def.Columns[i] = c
			return nil, nil
		}
		return nil, insertColumn(def, c, order)
	})
}

// ShouldRewriteTable implements sql.RewritableTable: rows are rewritten
// (and checked against the new definition) when a column's type or SRID,
// or the primary key changes.
func (t *Table) ShouldRewriteTable(ctx *sql.Context, oldSchema, newSchema sql.PrimaryKeySchema, oldColumn, newColumn *sql.Column) bool {
	if oldColumn != nil && newColumn != nil && (!oldColumn.Type.Equals(newColumn.Type) || srid(oldColumn.Type) != srid(newColumn.Type)) {
		return true
	}
	return !samePK(oldSchema, newSchema)
}

// srid is a spatial type's SRID, -1 when it has none: spatial types are
// Equal whatever their SRIDs, but stored values must be checked against a
// new one.
func srid(t sql.Type) int64 {
	if sc, ok := t.(sql.SpatialColumnType); ok {
		if id, defined := sc.GetSpatialTypeSRID(); defined {
			return int64(id)
		}
	}
	return -1
}

// RewriteInserter implements sql.RewritableTable. The rows are collected
// and, on Close, replace the table's contents under the new definition.
func (t *Table) RewriteInserter(ctx *sql.Context, oldSchema, newSchema sql.PrimaryKeySchema, oldColumn, newColumn *sql.Column, idxCols []sql.IndexColumn) (sql.RowInserter, error) {
	if err := t.refresh(ctx); err != nil {
		return nil, err
	}
	if len(newSchema.PkOrdinals) > 0 && !samePK(oldSchema, newSchema) {
		if err := noPrefix(idxCols); err != nil {
			return nil, err
		}
	}
	if len(oldSchema.PkOrdinals) > 0 && len(newSchema.PkOrdinals) == 0 {
		// an AUTO_INCREMENT column must stay the first column of a key
		if err := sql.ValidatePrimaryKeyDrop(ctx, t, oldSchema); err != nil {
			return nil, err
		}
	}
	if oldColumn == nil && newColumn == nil && len(idxCols) > 0 && gmstable.SameSchema(oldSchema, newSchema) {
		// A unique index build: the index is built and checked when the
		// write-set applies, on every node alike; nothing to rewrite.
		return &gmstable.DiscardInserter{}, nil
	}
	n := t.def.Clone()
	n.Columns = nil
	for _, col := range newSchema.Schema {
		var id uint32
		switch {
		case newColumn != nil && oldColumn != nil && strings.EqualFold(col.Name, newColumn.Name):
			if c, _ := t.def.ColumnByName(oldColumn.Name); c != nil {
				id = c.ID
			}
		default:
			if c, _ := t.def.ColumnByName(col.Name); c != nil && (newColumn == nil || oldColumn != nil || !strings.EqualFold(col.Name, newColumn.Name)) {
				id = c.ID
			}
		}
		if id == 0 {
			id = n.NextColumnID
			n.NextColumnID++
		}
		n.Columns = append(n.Columns, columnDef(col, id))
	}
	n.PK = nil
	for _, ord := range newSchema.PkOrdinals {
		n.PK = append(n.PK, n.Columns[ord].ID)
	}
	pkNotNull(n)
	kept := n.Indexes[:0]
	for _, ix := range n.Indexes {
		ok := true
		for _, cid := range ix.Columns {
			if c, _ := n.Column(cid); c == nil {
				ok = false
			}
		}
		if ok {
			kept = append(kept, ix)
		}
	}
	n.Indexes = kept
	if err := checkDef(n); err != nil {
		return nil, err
	}
	return &rewriteInserter{t: t, def: n}, nil
}

// samePK reports whether two schemas have the same primary key columns.
func samePK(a, b sql.PrimaryKeySchema) bool {
	if len(a.PkOrdinals) != len(b.PkOrdinals) {
		return false
	}
	for i := range a.PkOrdinals {
		if !strings.EqualFold(a.Schema[a.PkOrdinals[i]].Name, b.Schema[b.PkOrdinals[i]].Name) {
			return false
		}
	}
	return true
}

// CreatePrimaryKey implements sql.PrimaryKeyAlterableTable; the work is
// done by the table rewrite go-mysql-server drives.
func (t *Table) CreatePrimaryKey(ctx *sql.Context, columns []sql.IndexColumn) error {
	if err := noPrefix(columns); err != nil {
		return err
	}
	return t.alter(ctx, func(def *storage.TableDef) ([]*storage.SchemaOp, error) {
		if len(def.PK) > 0 {
			return nil, sql.ErrMultiplePrimaryKeysDefined.New()
		}
		for _, ic := range columns {
			c, _ := def.ColumnByName(ic.Name)
			if c == nil {
				return nil, sql.ErrKeyColumnDoesNotExist.New(ic.Name)
			}
			def.PK = append(def.PK, c.ID)
		}
		return nil, nil
	})
}

// DropPrimaryKey implements sql.PrimaryKeyAlterableTable.
func (t *Table) DropPrimaryKey(ctx *sql.Context) error {
	if err := sql.ValidatePrimaryKeyDrop(ctx, t, t.PrimaryKeySchema(ctx)); err != nil {
		return err
	}
	return t.alter(ctx, func(def *storage.TableDef) ([]*storage.SchemaOp, error) {
		if len(def.PK) == 0 {
			return nil, sql.ErrCantDropFieldOrKey.New("PRIMARY")
		}
		def.PK = nil
		return nil, nil
	})
}

// CreateIndex implements sql.IndexAlterableTable. The index's entries are
// built when the write-set applies, from the rows at that seqno.
func (t *Table) CreateIndex(ctx *sql.Context, idx sql.IndexDef) error {
	if idx.IsPrimary() {
		return t.CreatePrimaryKey(ctx, idx.Columns)
	}
	return t.alter(ctx, func(def *storage.TableDef) ([]*storage.SchemaOp, error) {
		if idx.Name == "" {
			idx.Name = fmt.Sprintf("idx_%d", def.NextIndexID)
		}
		if ix, _ := def.Index(idx.Name); ix != nil {
			return nil, sql.ErrDuplicateKey.New(idx.Name)
		}
		ix, err := indexDef(def, idx)
		if err != nil {
			return nil, err
		}
		def.NextIndexID++
		def.Indexes = append(def.Indexes, ix)
		return []*storage.SchemaOp{{Kind: storage.OpBuildIndex, TableID: def.ID, IndexID: ix.ID}}, nil
	})
}

// DropIndex implements sql.IndexAlterableTable.
func (t *Table) DropIndex(ctx *sql.Context, name string) error {
	if strings.EqualFold(name, "PRIMARY") {
		return t.DropPrimaryKey(ctx)
	}
	return t.alter(ctx, func(def *storage.TableDef) ([]*storage.SchemaOp, error) {
		ix, i := def.Index(name)
		if ix == nil {
			// go-mysql-server's DROP INDEX IF EXISTS recognises this
			// kind; clients get 1091 (errors.go)
			return nil, sql.ErrIndexNotFound.New(name)
		}
		id := ix.ID
		def.Indexes = append(def.Indexes[:i], def.Indexes[i+1:]...)
		return []*storage.SchemaOp{{Kind: storage.OpDropIndexData, TableID: def.ID, IndexID: id}}, nil
	})
}

// RenameIndex implements sql.IndexAlterableTable.
func (t *Table) RenameIndex(ctx *sql.Context, from, to string) error {
	return t.alter(ctx, func(def *storage.TableDef) ([]*storage.SchemaOp, error) {
		ix, _ := def.Index(from)
		if ix == nil {
			return nil, sql.ErrCantDropFieldOrKey.New(from)
		}
		if other, _ := def.Index(to); other != nil && other != ix {
			return nil, sql.ErrDuplicateKey.New(to)
		}
		ix.Name = to
		return nil, nil
	})
}
