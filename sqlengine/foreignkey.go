package sqlengine

import (
	"sort"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/plan"

	"github.com/certusdb/certus/storage"
)

// Foreign keys. The definitions live in the child table's definition and
// replicate with it; go-mysql-server enforces them through the tables'
// foreign key editors. Its reference checks (does the parent row exist?)
// read the parent rows with txn.Reference: a shared lock on this node and,
// in the write-set, a certification key on each parent row, so a parent
// deleted or changed concurrently on another node fails one of the two
// transactions, as Galera's shared keys do.

var _ sql.ForeignKeyTable = (*Table)(nil)

// refuseSetDefault refuses a foreign key with the SET DEFAULT action,
// which MySQL parses but InnoDB does not support. go-mysql-server refuses
// it while planning only under its own parser type, which Certus wraps
// (rewritingParser); the exec builder asks here instead.
func refuseSetDefault(n sql.Node) error {
	var fks []*sql.ForeignKeyConstraint
	switch n := n.(type) {
	case *plan.CreateTable:
		fks = n.ForeignKeys()
	case *plan.CreateForeignKey:
		fks = append(fks, n.FkDef)
	}
	for _, fk := range fks {
		if fk != nil && (fk.OnDelete == sql.ForeignKeyReferentialAction_SetDefault || fk.OnUpdate == sql.ForeignKeyReferentialAction_SetDefault) {
			return sql.ErrForeignKeySetDefault.New()
		}
	}
	return nil
}

// CreateIndexForForeignKey implements sql.ForeignKeyTable.
func (t *Table) CreateIndexForForeignKey(ctx *sql.Context, idx sql.IndexDef) error {
	return t.CreateIndex(ctx, idx)
}

// GetDeclaredForeignKeys implements sql.ForeignKeyTable.
func (t *Table) GetDeclaredForeignKeys(ctx *sql.Context) ([]sql.ForeignKeyConstraint, error) {
	if err := t.refresh(ctx); err != nil {
		return nil, err
	}
	out := make([]sql.ForeignKeyConstraint, len(t.def.FKs))
	for i, fk := range t.def.FKs {
		out[i] = foreignKey(t.def, fk)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// GetReferencedForeignKeys implements sql.ForeignKeyTable: the foreign keys
// of every table whose parent is this one.
func (t *Table) GetReferencedForeignKeys(ctx *sql.Context) ([]sql.ForeignKeyConstraint, error) {
	if err := t.refresh(ctx); err != nil {
		return nil, err
	}
	var out []sql.ForeignKeyConstraint
	for _, child := range t.p.catalog(ctx).AllTables() {
		for _, fk := range child.FKs {
			if strings.EqualFold(fk.ParentDatabase, t.def.DB) && strings.EqualFold(fk.ParentTable, t.def.Name) {
				out = append(out, foreignKey(child, fk))
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Table != out[j].Table {
			return out[i].Table < out[j].Table
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// AddForeignKey implements sql.ForeignKeyTable. The parent table counts as
// changed too, so the constraint is ordered against concurrent DDL on it.
func (t *Table) AddForeignKey(ctx *sql.Context, fk sql.ForeignKeyConstraint) error {
	if err := t.refresh(ctx); err != nil {
		return err
	}
	if t.fkNameTaken(ctx, fk.Name, "") {
		return sql.ErrForeignKeyDuplicateName.New(fk.Name)
	}
	return t.alter(ctx, func(def *storage.TableDef) ([]*storage.SchemaOp, error) {
		def.FKs = append(def.FKs, fkDef(fk))
		return nil, nil
	}, t.parentIDs(ctx, fk)...)
}

// DropForeignKey implements sql.ForeignKeyTable.
func (t *Table) DropForeignKey(ctx *sql.Context, fkName, _, _ string) error {
	return t.alter(ctx, func(def *storage.TableDef) ([]*storage.SchemaOp, error) {
		for i, fk := range def.FKs {
			if strings.EqualFold(fk.Name, fkName) {
				def.FKs = append(def.FKs[:i], def.FKs[i+1:]...)
				return nil, nil
			}
		}
		return nil, sql.ErrForeignKeyNotFound.New(fkName, def.Name)
	})
}

// UpdateForeignKey implements sql.ForeignKeyTable (renamed tables or
// columns, a constraint becoming resolved).
func (t *Table) UpdateForeignKey(ctx *sql.Context, fkName string, fk sql.ForeignKeyConstraint) error {
	if err := t.refresh(ctx); err != nil {
		return err
	}
	if !strings.EqualFold(fkName, fk.Name) && t.fkNameTaken(ctx, fk.Name, fkName) {
		return sql.ErrForeignKeyDuplicateName.New(fk.Name)
	}
	return t.alter(ctx, func(def *storage.TableDef) ([]*storage.SchemaOp, error) {
		for i, old := range def.FKs {
			if strings.EqualFold(old.Name, fkName) {
				def.FKs[i] = fkDef(fk)
				return nil, nil
			}
		}
		return nil, sql.ErrForeignKeyNotFound.New(fkName, def.Name)
	}, t.parentIDs(ctx, fk)...)
}

// GetForeignKeyEditor implements sql.ForeignKeyTable.
func (t *Table) GetForeignKeyEditor(ctx *sql.Context) sql.ForeignKeyEditor {
	return &fkEditor{editor: t.editor(ctx)}
}

// fkNameTaken reports whether a table of the database other than the
// constraint being replaced (except) has a foreign key named name: like
// MySQL, names are unique within a database.
func (t *Table) fkNameTaken(ctx *sql.Context, name, except string) bool {
	for _, other := range t.p.catalog(ctx).Tables(t.def.DB) {
		for _, fk := range other.FKs {
			if strings.EqualFold(fk.Name, name) && !(other.ID == t.def.ID && strings.EqualFold(fk.Name, except)) {
				return true
			}
		}
	}
	return false
}

// parentIDs returns the id of fk's parent table when it exists and is not
// t itself.
func (t *Table) parentIDs(ctx *sql.Context, fk sql.ForeignKeyConstraint) []uint64 {
	parent, ok := t.p.catalog(ctx).TableByName(fk.ParentDatabase, fk.ParentTable)
	if !ok || parent.ID == t.def.ID {
		return nil
	}
	return []uint64{parent.ID}
}

func foreignKey(def *storage.TableDef, fk storage.FKDef) sql.ForeignKeyConstraint {
	return sql.ForeignKeyConstraint{
		Name:           fk.Name,
		Database:       def.DB,
		Table:          def.Name,
		Columns:        append([]string(nil), fk.Columns...),
		ParentDatabase: fk.ParentDatabase,
		ParentTable:    fk.ParentTable,
		ParentColumns:  append([]string(nil), fk.ParentColumns...),
		OnUpdate:       sql.ForeignKeyReferentialAction(fk.OnUpdate),
		OnDelete:       sql.ForeignKeyReferentialAction(fk.OnDelete),
		IsResolved:     fk.IsResolved,
	}
}

func fkDef(fk sql.ForeignKeyConstraint) storage.FKDef {
	return storage.FKDef{
		Name:           fk.Name,
		Columns:        append([]string(nil), fk.Columns...),
		ParentDatabase: fk.ParentDatabase,
		ParentTable:    fk.ParentTable,
		ParentColumns:  append([]string(nil), fk.ParentColumns...),
		OnUpdate:       string(fk.OnUpdate),
		OnDelete:       string(fk.OnDelete),
		IsResolved:     fk.IsResolved,
	}
}

// fkEditor is the editor go-mysql-server's foreign key handling writes
// through, addressable by index for its lookups of parent and child rows.
type fkEditor struct {
	*editor
}

var _ sql.ForeignKeyEditor = (*fkEditor)(nil)

// IndexedAccess implements sql.IndexAddressable: lookups that read the
// rows the statement changed so far.
func (e *fkEditor) IndexedAccess(ctx *sql.Context, lookup sql.IndexLookup) sql.IndexedTable {
	return &IndexedTable{Table: e.t, lookup: lookup, live: true}
}

// GetIndexes implements sql.IndexAddressable.
func (e *fkEditor) GetIndexes(ctx *sql.Context) ([]sql.Index, error) { return e.t.GetIndexes(ctx) }

// PreciseMatch implements sql.IndexAddressable.
func (e *fkEditor) PreciseMatch() bool { return e.t.PreciseMatch() }
