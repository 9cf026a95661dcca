package sqlengine

import (
	"fmt"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/certusdb/certus/sqlengine/temptable"
	"github.com/certusdb/certus/storage"
)

// Database is one database of the catalog.
type Database struct {
	p    *Provider
	name string
}

var (
	_ sql.Database                = (*Database)(nil)
	_ sql.TableCreator            = (*Database)(nil)
	_ sql.IndexedTableCreator     = (*Database)(nil)
	_ sql.TableDropper            = (*Database)(nil)
	_ sql.TableRenamer            = (*Database)(nil)
	_ sql.CollatedDatabase        = (*Database)(nil)
	_ sql.ViewDatabase            = (*Database)(nil)
	_ sql.TriggerDatabase         = (*Database)(nil)
	_ sql.StoredProcedureDatabase = (*Database)(nil)
	_ sql.TemporaryTableCreator   = (*Database)(nil)
	_ sql.TemporaryTableDatabase  = (*Database)(nil)
)

// Name implements sql.Nameable.
func (d *Database) Name() string { return d.name }

func (d *Database) def(ctx *sql.Context) (*storage.DatabaseDef, *storage.Catalog, error) {
	cat := d.p.catalog(ctx)
	def, ok := cat.Database(d.name)
	if !ok {
		return nil, nil, sql.ErrDatabaseNotFound.New(d.name)
	}
	return def, cat, nil
}

// temp returns the temporary tables of the statement's session (nil for a
// context without a session of ours).
func temp(ctx *sql.Context) *temptable.Store {
	if ctx == nil {
		return nil
	}
	if s, ok := ctx.Session.(*Session); ok {
		return &s.temp
	}
	return nil
}

// GetTableInsensitive implements sql.Database. A temporary table of the
// session hides a stored table of the same name.
func (d *Database) GetTableInsensitive(ctx *sql.Context, name string) (sql.Table, bool, error) {
	if t, ok := temp(ctx).Get(d.name, name); ok {
		return t, true, nil
	}
	cat := d.p.catalog(ctx)
	def, ok := cat.TableByName(d.name, name)
	if !ok {
		return nil, false, nil
	}
	t, err := newTable(ctx, d.p, def)
	if err != nil {
		return nil, false, err
	}
	return t, true, nil
}

// GetTableNames implements sql.Database.
func (d *Database) GetTableNames(ctx *sql.Context) ([]string, error) {
	var names []string
	for _, t := range d.p.catalog(ctx).Tables(d.name) {
		names = append(names, t.Name)
	}
	return names, nil
}

// CreateTable implements sql.TableCreator.
func (d *Database) CreateTable(ctx *sql.Context, name string, sch sql.PrimaryKeySchema, collation sql.CollationID, comment string) error {
	return d.createTable(ctx, name, sch, nil, collation, comment)
}

// CreateIndexedTable implements sql.IndexedTableCreator.
func (d *Database) CreateIndexedTable(ctx *sql.Context, name string, sch sql.PrimaryKeySchema, idx sql.IndexDef, collation sql.CollationID) error {
	return d.createTable(ctx, name, sch, &idx, collation, "")
}

func (d *Database) createTable(ctx *sql.Context, name string, sch sql.PrimaryKeySchema, idx *sql.IndexDef, collation sql.CollationID, comment string) error {
	t := d.p.txnFor(ctx)
	if _, _, err := d.def(ctx); err != nil {
		return err
	}
	if _, ok := t.Catalog().TableByName(d.name, name); ok {
		return sql.ErrTableAlreadyExists.New(name)
	}
	if idx != nil && idx.IsPrimary() {
		if err := noPrefix(idx.Columns); err != nil {
			return err
		}
	}
	def, err := newTableDef(newTableID(), d.name, name, sch, collation, comment)
	if err != nil {
		return err
	}
	if idx != nil && !idx.IsPrimary() {
		ix, err := indexDef(def, *idx)
		if err != nil {
			return err
		}
		def.Indexes = append(def.Indexes, ix)
		def.NextIndexID++
		if err := checkDef(def); err != nil {
			return err
		}
	}
	return t.SchemaChange(&storage.SchemaOp{Kind: storage.OpPutTable, Table: def, TableID: def.ID})
}

// CreateTemporaryTable implements sql.TemporaryTableCreator: the table
// lives in the session (see sqlengine/temptable).
func (d *Database) CreateTemporaryTable(ctx *sql.Context, name string, sch sql.PrimaryKeySchema, collation sql.CollationID) error {
	store := temp(ctx)
	if store == nil {
		return sql.ErrTemporaryTableNotSupported.New()
	}
	if _, _, err := d.def(ctx); err != nil {
		return err
	}
	if _, ok := store.Get(d.name, name); ok {
		return sql.ErrTableAlreadyExists.New(name)
	}
	t, err := temptable.New(store, d.name, name, sch, collation)
	if err != nil {
		return err
	}
	store.Add(t)
	return nil
}

// GetAllTemporaryTables implements sql.TemporaryTableDatabase.
func (d *Database) GetAllTemporaryTables(ctx *sql.Context) ([]sql.Table, error) {
	var out []sql.Table
	if store := temp(ctx); store != nil {
		out = store.InDatabase(d.name)
	}
	return out, nil
}

// DropTable implements sql.TableDropper; a temporary table of the session
// goes first, as in MySQL.
func (d *Database) DropTable(ctx *sql.Context, name string) error {
	if temp(ctx).Drop(d.name, name) {
		return nil
	}
	t := d.p.txnFor(ctx)
	def, ok := t.Catalog().TableByName(d.name, name)
	if !ok {
		return sql.ErrTableNotFound.New(name)
	}
	return t.SchemaChange(&storage.SchemaOp{Kind: storage.OpDropTable, TableID: def.ID}, def.ID)
}

// RenameTable implements sql.TableRenamer.
func (d *Database) RenameTable(ctx *sql.Context, oldName, newName string) error {
	if store := temp(ctx); store != nil {
		if _, ok := store.Get(d.name, oldName); ok {
			return store.Rename(d.name, oldName, newName)
		}
	}
	t := d.p.txnFor(ctx)
	def, ok := t.Catalog().TableByName(d.name, oldName)
	if !ok {
		return sql.ErrTableNotFound.New(oldName)
	}
	if other, ok := t.Catalog().TableByName(d.name, newName); ok && other.ID != def.ID {
		return sql.ErrTableAlreadyExists.New(newName)
	}
	n := def.Clone()
	n.Name = newName
	return t.SchemaChange(&storage.SchemaOp{Kind: storage.OpPutTable, Table: n, TableID: n.ID}, n.ID)
}

// GetCollation implements sql.CollatedDatabase.
func (d *Database) GetCollation(ctx *sql.Context) sql.CollationID {
	def, _, err := d.def(ctx)
	if err != nil || def.Collation == "" {
		return sql.Collation_Default
	}
	c, err := sql.ParseCollation("", def.Collation, false)
	if err != nil {
		return sql.Collation_Default
	}
	return c
}

// SetCollation implements sql.CollatedDatabase.
func (d *Database) SetCollation(ctx *sql.Context, collation sql.CollationID) error {
	return d.changeDef(ctx, func(def *storage.DatabaseDef) error {
		def.Collation = collation.Name()
		return nil
	})
}

// changeDef applies fn to a copy of the database definition and records it.
func (d *Database) changeDef(ctx *sql.Context, fn func(def *storage.DatabaseDef) error) error {
	t := d.p.txnFor(ctx)
	def, ok := t.Catalog().Database(d.name)
	if !ok {
		return sql.ErrDatabaseNotFound.New(d.name)
	}
	n := *def
	n.Views = append([]storage.ViewDef(nil), def.Views...)
	n.Triggers = append([]storage.NamedStatement(nil), def.Triggers...)
	n.Routines = append([]storage.NamedStatement(nil), def.Routines...)
	n.Events = append([]storage.NamedStatement(nil), def.Events...)
	if err := fn(&n); err != nil {
		return err
	}
	return t.SchemaChange(&storage.SchemaOp{Kind: storage.OpPutDatabase, Database: &n})
}

// CreateView implements sql.ViewDatabase.
func (d *Database) CreateView(ctx *sql.Context, name string, selectStatement, createViewStmt string) error {
	return d.changeDef(ctx, func(def *storage.DatabaseDef) error {
		for _, v := range def.Views {
			if strings.EqualFold(v.Name, name) {
				return sql.ErrExistingView.New(d.name, name)
			}
		}
		def.Views = append(def.Views, storage.ViewDef{Name: name, Select: selectStatement, CreateStmt: createViewStmt,
			SQLMode: sql.LoadSqlMode(ctx).String()})
		return nil
	})
}

// DropView implements sql.ViewDatabase.
func (d *Database) DropView(ctx *sql.Context, name string) error {
	return d.changeDef(ctx, func(def *storage.DatabaseDef) error {
		for i, v := range def.Views {
			if strings.EqualFold(v.Name, name) {
				def.Views = append(def.Views[:i], def.Views[i+1:]...)
				return nil
			}
		}
		return sql.ErrViewDoesNotExist.New(d.name, name)
	})
}

// GetViewDefinition implements sql.ViewDatabase.
func (d *Database) GetViewDefinition(ctx *sql.Context, name string) (sql.ViewDefinition, bool, error) {
	def, _, err := d.def(ctx)
	if err != nil {
		return sql.ViewDefinition{}, false, err
	}
	for _, v := range def.Views {
		if strings.EqualFold(v.Name, name) {
			return viewDefinition(v), true, nil
		}
	}
	return sql.ViewDefinition{}, false, nil
}

// AllViews implements sql.ViewDatabase.
func (d *Database) AllViews(ctx *sql.Context) ([]sql.ViewDefinition, error) {
	def, _, err := d.def(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]sql.ViewDefinition, len(def.Views))
	for i, v := range def.Views {
		out[i] = viewDefinition(v)
	}
	return out, nil
}

func viewDefinition(v storage.ViewDef) sql.ViewDefinition {
	return sql.ViewDefinition{Name: v.Name, TextDefinition: v.Select, CreateViewStatement: v.CreateStmt, SqlMode: v.SQLMode}
}

// GetTriggers implements sql.TriggerDatabase.
func (d *Database) GetTriggers(ctx *sql.Context) ([]sql.TriggerDefinition, error) {
	def, _, err := d.def(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]sql.TriggerDefinition, len(def.Triggers))
	for i, t := range def.Triggers {
		out[i] = sql.TriggerDefinition{Name: t.Name, CreateStatement: t.CreateStmt, CreatedAt: time.Unix(0, t.CreatedAt).UTC(), SqlMode: t.SQLMode}
	}
	return out, nil
}

// CreateTrigger implements sql.TriggerDatabase.
func (d *Database) CreateTrigger(ctx *sql.Context, td sql.TriggerDefinition) error {
	return d.changeDef(ctx, func(def *storage.DatabaseDef) error {
		for _, t := range def.Triggers {
			if strings.EqualFold(t.Name, td.Name) {
				return fmt.Errorf("Trigger already exists")
			}
		}
		def.Triggers = append(def.Triggers, storage.NamedStatement{Name: td.Name, CreateStmt: td.CreateStatement, SQLMode: td.SqlMode, CreatedAt: td.CreatedAt.UnixNano()})
		return nil
	})
}

// DropTrigger implements sql.TriggerDatabase.
func (d *Database) DropTrigger(ctx *sql.Context, name string) error {
	return d.changeDef(ctx, func(def *storage.DatabaseDef) error {
		for i, t := range def.Triggers {
			if strings.EqualFold(t.Name, name) {
				def.Triggers = append(def.Triggers[:i], def.Triggers[i+1:]...)
				return nil
			}
		}
		return sql.ErrTriggerDoesNotExist.New(name)
	})
}

// GetStoredProcedure implements sql.StoredProcedureDatabase.
func (d *Database) GetStoredProcedure(ctx *sql.Context, name string) (sql.StoredProcedureDetails, bool, error) {
	def, _, err := d.def(ctx)
	if err != nil {
		return sql.StoredProcedureDetails{}, false, err
	}
	for _, r := range def.Routines {
		if strings.EqualFold(r.Name, name) {
			return routineDetails(r), true, nil
		}
	}
	return sql.StoredProcedureDetails{}, false, nil
}

func routineDetails(r storage.NamedStatement) sql.StoredProcedureDetails {
	return sql.StoredProcedureDetails{Name: r.Name, CreateStatement: r.CreateStmt, SqlMode: r.SQLMode,
		CreatedAt: time.Unix(0, r.CreatedAt).UTC(), ModifiedAt: time.Unix(0, r.ModifiedAt).UTC()}
}

// GetStoredProcedures implements sql.StoredProcedureDatabase.
func (d *Database) GetStoredProcedures(ctx *sql.Context) ([]sql.StoredProcedureDetails, error) {
	def, _, err := d.def(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]sql.StoredProcedureDetails, len(def.Routines))
	for i, r := range def.Routines {
		out[i] = routineDetails(r)
	}
	return out, nil
}

// SaveStoredProcedure implements sql.StoredProcedureDatabase.
func (d *Database) SaveStoredProcedure(ctx *sql.Context, spd sql.StoredProcedureDetails) error {
	return d.changeDef(ctx, func(def *storage.DatabaseDef) error {
		for _, r := range def.Routines {
			if strings.EqualFold(r.Name, spd.Name) {
				return sql.ErrStoredProcedureAlreadyExists.New(spd.Name)
			}
		}
		def.Routines = append(def.Routines, storage.NamedStatement{Name: spd.Name, CreateStmt: spd.CreateStatement,
			SQLMode: spd.SqlMode, CreatedAt: spd.CreatedAt.UnixNano(), ModifiedAt: spd.ModifiedAt.UnixNano()})
		return nil
	})
}

// DropStoredProcedure implements sql.StoredProcedureDatabase.
func (d *Database) DropStoredProcedure(ctx *sql.Context, name string) error {
	return d.changeDef(ctx, func(def *storage.DatabaseDef) error {
		for i, r := range def.Routines {
			if strings.EqualFold(r.Name, name) {
				def.Routines = append(def.Routines[:i], def.Routines[i+1:]...)
				return nil
			}
		}
		return sql.ErrStoredProcedureDoesNotExist.New(name)
	})
}
