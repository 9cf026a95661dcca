package temptable

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/google/btree"

	"github.com/certusdb/certus/internal/codec"
	"github.com/certusdb/certus/sqlengine/internal/gmstable"
	"github.com/certusdb/certus/txn"
)

// Table is one temporary table of a session (see tempstore.go). Only
// the session's goroutine uses it.
type Table struct {
	store   *Store
	db      string
	name    string
	sch     sql.PrimaryKeySchema
	coll    sql.CollationID
	pkCols  []codec.KeyColumn // by sch.PkOrdinals; nil: no primary key
	rowIDs  []uint32          // column ids for a keyless row's encoding
	indexes []*tempIndex      // secondary indexes
	checks  []sql.CheckDefinition

	d        *tempData
	seq      uint64 // keyless tables: the last row's sequence number
	autoOrd  int    // the AUTO_INCREMENT column, or -1
	autoNext uint64 // the next AUTO_INCREMENT value

	// stmtDepth counts the editors inside a statement and stmtData is
	// the data the statement started from (taken at its first write).
	stmtDepth int
	stmtData  *tempData
	// txnData is the data transaction txnGen started from.
	txnGen  uint64
	txnData *tempData
	// dropped is set once DROP TABLE removed the table.
	dropped bool
}

// tempIndex is a secondary index of a temporary table. A unique one keeps
// its keys in tempData.unique; others only keep their definition (a
// temporary table is scanned, never looked up by index).
type tempIndex struct {
	def  sql.IndexDef
	ords []int
	cols []codec.KeyColumn
}

// tempRow is a row under a key: in tempData.rows the primary key (keyless
// tables: the row's sequence number), in a unique index its index key,
// in byRow the row's encoding and sequence number. pk is the row's key in
// tempData.rows.
type tempRow struct {
	key []byte
	pk  []byte
	row sql.Row
}

func lessTempRow(a, b tempRow) bool { return bytes.Compare(a.key, b.key) < 0 }

// tempData is one version of a temporary table's rows.
type tempData struct {
	rows   *btree.BTreeG[tempRow]
	byRow  *btree.BTreeG[tempRow]                // keyless tables: to find a row by its values
	unique map[*tempIndex]*btree.BTreeG[tempRow] // the unique indexes' keys
	bytes  int64                                 // estimated memory of the rows
}

const tempDegree = 16

func newTempTree() *btree.BTreeG[tempRow] { return btree.NewG(tempDegree, lessTempRow) }

// clone returns a copy-on-write copy of d.
func (d *tempData) clone() *tempData {
	c := &tempData{rows: d.rows.Clone(), bytes: d.bytes}
	if d.byRow != nil {
		c.byRow = d.byRow.Clone()
	}
	if len(d.unique) > 0 {
		c.unique = make(map[*tempIndex]*btree.BTreeG[tempRow], len(d.unique))
		for ix, tree := range d.unique {
			c.unique[ix] = tree.Clone()
		}
	}
	return c
}

var (
	_ sql.Table               = (*Table)(nil)
	_ sql.PrimaryKeyTable     = (*Table)(nil)
	_ sql.TemporaryTable      = (*Table)(nil)
	_ sql.Databaseable        = (*Table)(nil)
	_ sql.InsertableTable     = (*Table)(nil)
	_ sql.UpdatableTable      = (*Table)(nil)
	_ sql.DeletableTable      = (*Table)(nil)
	_ sql.ReplaceableTable    = (*Table)(nil)
	_ sql.TruncateableTable   = (*Table)(nil)
	_ sql.AutoIncrementTable  = (*Table)(nil)
	_ sql.IndexAlterableTable = (*Table)(nil)
	_ sql.CheckTable          = (*Table)(nil)
	_ sql.CheckAlterableTable = (*Table)(nil)
	_ sql.StatisticsTable     = (*Table)(nil)
	_ sql.TableEditor         = (*Table)(nil)
	_ sql.AutoIncrementSetter = (*Table)(nil)
)

// New returns an empty temporary table db.name of schema sch.
func New(store *Store, db, name string, sch sql.PrimaryKeySchema, coll sql.CollationID) (*Table, error) {
	cols := sch.Schema.Copy()
	for _, c := range cols {
		c.Source, c.DatabaseSource = name, db
	}
	t := &Table{store: store, db: db, name: name, sch: sql.NewPrimaryKeySchema(cols, sch.PkOrdinals...), coll: coll,
		autoOrd: -1, autoNext: 1}
	for i, c := range cols {
		if c.AutoIncrement {
			t.autoOrd = i
		}
		t.rowIDs = append(t.rowIDs, uint32(i))
	}
	for _, o := range t.sch.PkOrdinals {
		kc := codec.KeyColumnFor(cols[o].Type, 0)
		if kc.Kind == codec.KindUnsupported {
			return nil, sql.ErrInvalidBlobTextKey.New(cols[o].Name)
		}
		t.pkCols = append(t.pkCols, kc)
	}
	t.d = t.newData()
	return t, nil
}

// newData returns empty data with the table's indexes.
func (t *Table) newData() *tempData {
	d := &tempData{rows: newTempTree()}
	if t.pkCols == nil {
		d.byRow = newTempTree()
	}
	for _, ix := range t.indexes {
		if ix.def.IsUnique() {
			if d.unique == nil {
				d.unique = map[*tempIndex]*btree.BTreeG[tempRow]{}
			}
			d.unique[ix] = newTempTree()
		}
	}
	return d
}

// Name implements sql.Nameable.
func (t *Table) Name() string { return t.name }

// String implements fmt.Stringer.
func (t *Table) String() string { return t.name }

// Database implements sql.Databaseable.
func (t *Table) Database() string { return t.db }

// Schema implements sql.Table.
func (t *Table) Schema(*sql.Context) sql.Schema { return t.sch.Schema }

// PrimaryKeySchema implements sql.PrimaryKeyTable.
func (t *Table) PrimaryKeySchema(*sql.Context) sql.PrimaryKeySchema { return t.sch }

// Collation implements sql.Table.
func (t *Table) Collation() sql.CollationID { return t.coll }

// IsTemporary implements sql.TemporaryTable.
func (t *Table) IsTemporary() bool { return true }

// Partitions implements sql.Table.
func (t *Table) Partitions(*sql.Context) (sql.PartitionIter, error) {
	return gmstable.Partitions(), nil
}

// PartitionRows implements sql.Table: the rows in primary key order (a
// table without one: in insertion order), as of the call, so a statement
// that writes the table while it reads it (INSERT ... SELECT) reads what
// was there before.
func (t *Table) PartitionRows(*sql.Context, sql.Partition) (sql.RowIter, error) {
	rows := make([]sql.Row, 0, t.d.rows.Len())
	t.d.rows.Ascend(func(r tempRow) bool {
		rows = append(rows, r.row.Copy())
		return true
	})
	return sql.RowsToRowIter(rows...), nil
}

// RowCount implements sql.StatisticsTable.
func (t *Table) RowCount(*sql.Context) (uint64, bool, error) {
	return uint64(t.d.rows.Len()), true, nil
}

// DataLength implements sql.StatisticsTable.
func (t *Table) DataLength(*sql.Context) (uint64, error) { return uint64(t.d.bytes), nil }

// Inserter implements sql.InsertableTable.
func (t *Table) Inserter(*sql.Context) sql.RowInserter { return t }

// Updater implements sql.UpdatableTable.
func (t *Table) Updater(*sql.Context) sql.RowUpdater { return t }

// Deleter implements sql.DeletableTable.
func (t *Table) Deleter(*sql.Context) sql.RowDeleter { return t }

// Replacer implements sql.ReplaceableTable.
func (t *Table) Replacer(*sql.Context) sql.RowReplacer { return t }

// StatementBegin implements sql.EditOpenerCloser.
func (t *Table) StatementBegin(*sql.Context) { t.stmtDepth++ }

// DiscardChanges implements sql.EditOpenerCloser: the statement's changes
// are undone.
func (t *Table) DiscardChanges(*sql.Context, error) error {
	if t.stmtData != nil {
		t.d = t.stmtData
	}
	t.endStatement()
	return nil
}

// StatementComplete implements sql.EditOpenerCloser.
func (t *Table) StatementComplete(*sql.Context) error {
	t.endStatement()
	return nil
}

func (t *Table) endStatement() {
	if t.stmtDepth > 0 {
		t.stmtDepth--
	}
	if t.stmtDepth == 0 {
		t.stmtData = nil
	}
}

// Close implements sql.Closer.
func (t *Table) Close(*sql.Context) error { return nil }

// beginWrite keeps the data the transaction and the statement started
// from before their first change.
func (t *Table) beginWrite() {
	if t.txnGen != t.store.txnGen {
		t.txnData, t.txnGen = t.d.clone(), t.store.txnGen
	}
	if t.stmtDepth > 0 && t.stmtData == nil {
		t.stmtData = t.d.clone()
	}
}

// writable refuses writes to a dropped table (an editor opened before a
// DROP in the same statement).
func (t *Table) writable() error {
	if t.dropped {
		return sql.ErrTableNotFound.New(t.name)
	}
	return nil
}

// Insert implements sql.RowInserter.
func (t *Table) Insert(ctx *sql.Context, row sql.Row) error {
	if err := t.writable(); err != nil {
		return err
	}
	row = row.Copy()
	size := tempRowBytes(row)
	if err := t.fits(ctx, size); err != nil {
		return err
	}
	var pk []byte
	if t.pkCols != nil {
		var err error
		if pk, err = t.pkKey(row); err != nil {
			return err
		}
		if e, ok := t.d.rows.Get(tempRow{key: pk}); ok {
			return t.dupErr("PRIMARY", true, t.sch.PkOrdinals, row, e.row)
		}
	}
	if err := t.checkUnique(row, nil); err != nil {
		return err
	}
	t.beginWrite()
	if pk == nil {
		t.seq++
		pk = binary.BigEndian.AppendUint64(nil, t.seq)
	}
	return t.put(ctx, pk, row, size)
}

// Update implements sql.RowUpdater.
func (t *Table) Update(ctx *sql.Context, old, new sql.Row) error {
	if err := t.writable(); err != nil {
		return err
	}
	new = new.Copy()
	oldPK, ok, err := t.find(ctx, old)
	if err != nil || !ok {
		return err
	}
	newPK := oldPK
	if t.pkCols != nil {
		if newPK, err = t.pkKey(new); err != nil {
			return err
		}
		if !bytes.Equal(newPK, oldPK) {
			if e, ok := t.d.rows.Get(tempRow{key: newPK}); ok {
				return t.dupErr("PRIMARY", true, t.sch.PkOrdinals, new, e.row)
			}
		}
	}
	if err := t.checkUnique(new, oldPK); err != nil {
		return err
	}
	size := tempRowBytes(new)
	if err := t.fits(ctx, size-tempRowBytes(old)); err != nil {
		return err
	}
	t.beginWrite()
	t.remove(ctx, oldPK)
	return t.put(ctx, newPK, new, size)
}

// Delete implements sql.RowDeleter.
func (t *Table) Delete(ctx *sql.Context, row sql.Row) error {
	if err := t.writable(); err != nil {
		return err
	}
	pk, ok, err := t.find(ctx, row)
	if err != nil || !ok {
		return err
	}
	t.beginWrite()
	t.remove(ctx, pk)
	return nil
}

// Truncate implements sql.TruncateableTable; like MySQL it restarts the
// AUTO_INCREMENT counter.
func (t *Table) Truncate(*sql.Context) (int, error) {
	if err := t.writable(); err != nil {
		return 0, err
	}
	n := t.d.rows.Len()
	t.beginWrite()
	t.d = t.newData()
	t.autoNext = 1
	return n, nil
}

// put adds row under pk with its index entries.
func (t *Table) put(ctx *sql.Context, pk []byte, row sql.Row, size int64) error {
	t.d.rows.ReplaceOrInsert(tempRow{key: pk, pk: pk, row: row})
	if t.d.byRow != nil {
		enc, err := codec.AppendRow(ctx, nil, t.rowIDs, row)
		if err != nil {
			return err
		}
		t.d.byRow.ReplaceOrInsert(tempRow{key: append(enc, pk...), pk: pk, row: row})
	}
	for _, ix := range t.indexes {
		if tree := t.d.unique[ix]; tree != nil {
			if k, ok := ix.key(row); ok {
				tree.ReplaceOrInsert(tempRow{key: k, pk: pk, row: row})
			}
		}
	}
	t.d.bytes += size
	return nil
}

// remove deletes the row under pk with its index entries.
func (t *Table) remove(ctx *sql.Context, pk []byte) {
	e, ok := t.d.rows.Delete(tempRow{key: pk})
	if !ok {
		return
	}
	if t.d.byRow != nil {
		if enc, err := codec.AppendRow(ctx, nil, t.rowIDs, e.row); err == nil {
			t.d.byRow.Delete(tempRow{key: append(enc, pk...)})
		}
	}
	for _, ix := range t.indexes {
		if tree := t.d.unique[ix]; tree != nil {
			if k, ok := ix.key(e.row); ok {
				tree.Delete(tempRow{key: k})
			}
		}
	}
	t.d.bytes -= tempRowBytes(e.row)
}

// find returns the key of the stored row equal to row: by primary key, or
// in a keyless table the first row with the same values.
func (t *Table) find(ctx *sql.Context, row sql.Row) ([]byte, bool, error) {
	if t.pkCols != nil {
		pk, err := t.pkKey(row)
		if err != nil {
			return nil, false, err
		}
		_, ok := t.d.rows.Get(tempRow{key: pk})
		return pk, ok, nil
	}
	enc, err := codec.AppendRow(ctx, nil, t.rowIDs, row)
	if err != nil {
		return nil, false, err
	}
	var pk []byte
	t.d.byRow.AscendGreaterOrEqual(tempRow{key: enc}, func(r tempRow) bool {
		if len(r.key) == len(enc)+8 && bytes.HasPrefix(r.key, enc) {
			pk = r.pk
		}
		return false
	})
	return pk, pk != nil, nil
}

// pkKey encodes row's primary key.
func (t *Table) pkKey(row sql.Row) ([]byte, error) {
	var k []byte
	var err error
	for i, o := range t.sch.PkOrdinals {
		if k, err = t.pkCols[i].AppendKey(k, row[o]); err != nil {
			return nil, err
		}
	}
	return k, nil
}

// checkUnique refuses row when a unique index holds its key for another
// row than the one under self (the row an UPDATE replaces; nil for none).
func (t *Table) checkUnique(row sql.Row, self []byte) error {
	for _, ix := range t.indexes {
		tree := t.d.unique[ix]
		if tree == nil {
			continue
		}
		k, ok := ix.key(row)
		if !ok {
			continue
		}
		if e, found := tree.Get(tempRow{key: k}); found && !bytes.Equal(e.pk, self) {
			return t.dupErr(ix.def.Name, false, ix.ords, row, e.row)
		}
	}
	return nil
}

// dupErr is MySQL's duplicate key error (1062) for the index's values in
// row, carrying the stored row it collides with for ON DUPLICATE KEY
// UPDATE.
func (t *Table) dupErr(index string, isPK bool, ords []int, row, existing sql.Row) error {
	vals := make([]string, len(ords))
	for i, o := range ords {
		vals[i] = fmt.Sprint(row[o])
	}
	return gmstable.DupErr(&txn.DuplicateKeyError{Table: t.name, Index: index, IsPK: isPK, Key: strings.Join(vals, "-"), Existing: existing})
}

// fits refuses a change that grows the table's data past
// max_heap_table_size (MySQL's limit for in-memory tables), with MySQL's
// "table is full" (1114).
func (t *Table) fits(ctx *sql.Context, grow int64) error {
	if grow <= 0 {
		return nil
	}
	limit := int64(DefaultMaxBytes)
	if v, err := ctx.GetSessionVariable(ctx, "max_heap_table_size"); err == nil {
		if u, ok := v.(uint64); ok {
			limit = int64(min(u, 1<<62))
		}
	}
	if t.d.bytes+grow > limit {
		return mysql.NewSQLError(mysql.ERRecordFileFull, "HY000", "The table '%s' is full", t.name)
	}
	return nil
}

// DefaultMaxBytes is Certus's default max_heap_table_size, the most
// memory one temporary table's rows may take. MySQL's 16 MiB is meant for
// MEMORY tables; a temporary table on MySQL is an InnoDB table, so Certus
// allows more by default.
const DefaultMaxBytes = 256 << 20

// tempRowBytes estimates the memory row takes in a temporary table.
func tempRowBytes(row sql.Row) int64 {
	n := int64(64 + 16*len(row))
	for _, v := range row {
		switch x := v.(type) {
		case string:
			n += int64(len(x))
		case []byte:
			n += int64(len(x))
		case types.JSONDocument:
			n += 64
		}
	}
	return n
}

// key encodes row's values in the index; ok is false when one is NULL
// (a unique index allows any number of those).
func (ix *tempIndex) key(row sql.Row) (k []byte, ok bool) {
	for i, o := range ix.ords {
		if row[o] == nil {
			return nil, false
		}
		var err error
		if k, err = ix.cols[i].AppendKey(k, row[o]); err != nil {
			return nil, false
		}
	}
	return k, true
}

// CreateIndex implements sql.IndexAlterableTable. A unique index is built
// from the rows at once and refuses duplicates; other indexes are kept as
// definitions only.
func (t *Table) CreateIndex(ctx *sql.Context, def sql.IndexDef) error {
	if def.IsPrimary() {
		return sql.ErrUnsupportedFeature.New("adding a primary key to a temporary table")
	}
	for _, ix := range t.indexes {
		if strings.EqualFold(ix.def.Name, def.Name) {
			return sql.ErrDuplicateKey.New(def.Name)
		}
	}
	ix := &tempIndex{def: def}
	for _, ic := range def.Columns {
		o := t.sch.Schema.IndexOfColName(ic.Name)
		if o < 0 {
			return sql.ErrKeyColumnDoesNotExist.New(ic.Name)
		}
		kc := codec.KeyColumnFor(t.sch.Schema[o].Type, int(ic.Length))
		if kc.Kind == codec.KindUnsupported && def.IsUnique() {
			return sql.ErrInvalidBlobTextKey.New(ic.Name)
		}
		ix.ords, ix.cols = append(ix.ords, o), append(ix.cols, kc)
	}
	if def.IsUnique() {
		tree := newTempTree()
		var dup error
		t.d.rows.Ascend(func(r tempRow) bool {
			k, ok := ix.key(r.row)
			if !ok {
				return true
			}
			if e, found := tree.Get(tempRow{key: k}); found {
				dup = t.dupErr(def.Name, false, ix.ords, r.row, e.row)
				return false
			}
			tree.ReplaceOrInsert(tempRow{key: k, pk: r.pk, row: r.row})
			return true
		})
		if dup != nil {
			return dup
		}
		if t.d.unique == nil {
			t.d.unique = map[*tempIndex]*btree.BTreeG[tempRow]{}
		}
		t.d.unique[ix] = tree
	}
	t.indexes = append(t.indexes, ix)
	t.resetHistory()
	return nil
}

// DropIndex implements sql.IndexAlterableTable.
func (t *Table) DropIndex(ctx *sql.Context, name string) error {
	for i, ix := range t.indexes {
		if strings.EqualFold(ix.def.Name, name) {
			t.indexes = append(t.indexes[:i], t.indexes[i+1:]...)
			delete(t.d.unique, ix)
			t.resetHistory()
			return nil
		}
	}
	return sql.ErrIndexNotFound.New(name)
}

// RenameIndex implements sql.IndexAlterableTable.
func (t *Table) RenameIndex(ctx *sql.Context, from, to string) error {
	for _, ix := range t.indexes {
		if strings.EqualFold(ix.def.Name, to) {
			return sql.ErrDuplicateKey.New(to)
		}
	}
	for _, ix := range t.indexes {
		if strings.EqualFold(ix.def.Name, from) {
			ix.def.Name = to
			return nil
		}
	}
	return sql.ErrIndexNotFound.New(from)
}

// GetChecks implements sql.CheckTable.
func (t *Table) GetChecks(*sql.Context) ([]sql.CheckDefinition, error) { return t.checks, nil }

// CreateCheck implements sql.CheckAlterableTable; an unnamed check gets
// MySQL's name for it, <table>_chk_<n>.
func (t *Table) CreateCheck(_ *sql.Context, check *sql.CheckDefinition) error {
	c := *check
	for n := 1; c.Name == ""; n++ {
		c.Name = fmt.Sprintf("%s_chk_%d", t.name, n)
		if t.checkNamed(c.Name) {
			c.Name = ""
		}
	}
	if t.checkNamed(c.Name) {
		return fmt.Errorf("Duplicate check constraint name '%s'", c.Name)
	}
	t.checks = append(t.checks, c)
	return nil
}

func (t *Table) checkNamed(name string) bool {
	for _, c := range t.checks {
		if strings.EqualFold(c.Name, name) {
			return true
		}
	}
	return false
}

// DropCheck implements sql.CheckAlterableTable.
func (t *Table) DropCheck(_ *sql.Context, name string) error {
	for i, c := range t.checks {
		if strings.EqualFold(c.Name, name) {
			t.checks = append(t.checks[:i], t.checks[i+1:]...)
			return nil
		}
	}
	return sql.ErrUnknownConstraint.New(name)
}

// PeekNextAutoIncrementValue implements sql.AutoIncrementGetter.
func (t *Table) PeekNextAutoIncrementValue(*sql.Context) (uint64, error) { return t.autoNext, nil }

// GetNextAutoIncrementValue implements sql.AutoIncrementTable, as
// Table.GetNextAutoIncrementValue does with the session's own counter.
func (t *Table) GetNextAutoIncrementValue(ctx *sql.Context, insertVal interface{}) (uint64, error) {
	if insertVal == nil {
		inc, off := gmstable.AutoIncrementStep(ctx, ctx.Session)
		v := txn.StepAutoIncrement(t.autoNext, inc, off)
		t.autoNext = txn.AfterAutoIncrement(v)
		return v, nil
	}
	var typ sql.Type
	if t.autoOrd >= 0 {
		typ = t.sch.Schema[t.autoOrd].Type
	}
	explicit := gmstable.ExplicitAutoIncrement(ctx, typ, insertVal)
	if explicit == 0 {
		return 0, nil
	}
	if explicit >= t.autoNext {
		t.autoNext = txn.AfterAutoIncrement(explicit)
	}
	return explicit, nil
}

// AutoIncrementSetter implements sql.AutoIncrementTable.
func (t *Table) AutoIncrementSetter(*sql.Context) sql.AutoIncrementSetter { return t }

// SetAutoIncrementValue implements sql.AutoIncrementSetter.
func (t *Table) SetAutoIncrementValue(_ *sql.Context, v uint64) error {
	t.autoNext = v
	return nil
}

// AcquireAutoIncrementLock implements sql.AutoIncrementSetter; only the
// session uses the table.
func (t *Table) AcquireAutoIncrementLock(*sql.Context) (func(), error) { return func() {}, nil }

// tempIndexInfo is a temporary table's index as go-mysql-server lists it
// (SHOW CREATE TABLE, SHOW INDEX). It supports no lookups: the table is
// always scanned.
type tempIndexInfo struct {
	t      *Table
	id     string
	ords   []int
	unique bool
	prefix []uint16
	remark string
}

var (
	_ sql.IndexAddressableTable = (*Table)(nil)
	_ sql.Index                 = (*tempIndexInfo)(nil)
)

// GetIndexes implements sql.IndexAddressable: the primary key, then the
// secondary indexes in the order they were created.
func (t *Table) GetIndexes(*sql.Context) ([]sql.Index, error) {
	var out []sql.Index
	if t.pkCols != nil {
		out = append(out, &tempIndexInfo{t: t, id: "PRIMARY", ords: t.sch.PkOrdinals, unique: true})
	}
	for _, ix := range t.indexes {
		info := &tempIndexInfo{t: t, id: ix.def.Name, ords: ix.ords, unique: ix.def.IsUnique(), remark: ix.def.Comment}
		if slices.ContainsFunc(ix.def.Columns, func(c sql.IndexColumn) bool { return c.Length > 0 }) {
			for _, c := range ix.def.Columns {
				info.prefix = append(info.prefix, uint16(c.Length))
			}
		}
		out = append(out, info)
	}
	return out, nil
}

// IndexedAccess implements sql.IndexAddressable; no index supports a
// lookup (CanSupport), so it is never asked for one.
func (t *Table) IndexedAccess(*sql.Context, sql.IndexLookup) sql.IndexedTable { return nil }

// PreciseMatch implements sql.IndexAddressable.
func (t *Table) PreciseMatch() bool { return false }

// ID implements sql.Index.
func (i *tempIndexInfo) ID() string { return i.id }

// Database implements sql.Index.
func (i *tempIndexInfo) Database() string { return i.t.db }

// Table implements sql.Index.
func (i *tempIndexInfo) Table() string { return i.t.name }

// Expressions implements sql.Index.
func (i *tempIndexInfo) Expressions() []string {
	out := make([]string, len(i.ords))
	for k, o := range i.ords {
		out[k] = i.t.name + "." + i.t.sch.Schema[o].Name
	}
	return out
}

// ColumnExpressionTypes implements sql.Index.
func (i *tempIndexInfo) ColumnExpressionTypes(*sql.Context) []sql.ColumnExpressionType {
	out := make([]sql.ColumnExpressionType, len(i.ords))
	for k, o := range i.ords {
		out[k] = sql.ColumnExpressionType{Expression: i.t.name + "." + i.t.sch.Schema[o].Name, Type: i.t.sch.Schema[o].Type}
	}
	return out
}

// IsUnique implements sql.Index.
func (i *tempIndexInfo) IsUnique() bool { return i.unique }

// IsSpatial implements sql.Index.
func (i *tempIndexInfo) IsSpatial() bool { return false }

// IsFullText implements sql.Index.
func (i *tempIndexInfo) IsFullText() bool { return false }

// IsVector implements sql.Index.
func (i *tempIndexInfo) IsVector() bool { return false }

// Comment implements sql.Index.
func (i *tempIndexInfo) Comment() string { return i.remark }

// IndexType implements sql.Index.
func (i *tempIndexInfo) IndexType() string { return "BTREE" }

// IsGenerated implements sql.Index.
func (i *tempIndexInfo) IsGenerated() bool { return false }

// CanSupport implements sql.Index: never (see tempIndexInfo).
func (i *tempIndexInfo) CanSupport(*sql.Context, ...sql.Range) bool { return false }

// CanSupportOrderBy implements sql.Index.
func (i *tempIndexInfo) CanSupportOrderBy(sql.Expression) bool { return false }

// PrefixLengths implements sql.Index.
func (i *tempIndexInfo) PrefixLengths() []uint16 { return i.prefix }

var (
	_ sql.AlterableTable  = (*Table)(nil)
	_ sql.RewritableTable = (*Table)(nil)
)

// ShouldRewriteTable implements sql.RewritableTable: go-mysql-server
// rewrites the rows (with defaults, conversions and AUTO_INCREMENT values)
// for every column change; the table is rebuilt from them (tempRewriter).
func (t *Table) ShouldRewriteTable(*sql.Context, sql.PrimaryKeySchema, sql.PrimaryKeySchema, *sql.Column, *sql.Column) bool {
	return true
}

// RewriteInserter implements sql.RewritableTable.
func (t *Table) RewriteInserter(ctx *sql.Context, oldSchema, newSchema sql.PrimaryKeySchema, oldColumn, newColumn *sql.Column, idxCols []sql.IndexColumn) (sql.RowInserter, error) {
	if oldColumn == nil && newColumn == nil && gmstable.SameSchema(oldSchema, newSchema) {
		return gmstable.DiscardInserter{}, nil // an index build: CreateIndex builds it
	}
	w := &tempRewriter{t: t, sch: newSchema}
	if oldColumn != nil {
		w.rename = map[string]string{strings.ToLower(oldColumn.Name): ""}
		if newColumn != nil {
			w.rename[strings.ToLower(oldColumn.Name)] = newColumn.Name
		}
	}
	return w, nil
}

// tempRewriter collects the rows of a rewrite; Close rebuilds the table
// from them under the new schema.
type tempRewriter struct {
	t         *Table
	sch       sql.PrimaryKeySchema
	rename    map[string]string
	rows      []sql.Row
	discarded bool
}

func (w *tempRewriter) Insert(_ *sql.Context, row sql.Row) error {
	w.rows = append(w.rows, row.Copy())
	return nil
}

func (w *tempRewriter) StatementBegin(*sql.Context) {}

func (w *tempRewriter) DiscardChanges(*sql.Context, error) error {
	w.discarded, w.rows = true, nil
	return nil
}

func (w *tempRewriter) StatementComplete(*sql.Context) error { return nil }

func (w *tempRewriter) Close(ctx *sql.Context) error {
	if w.discarded {
		return nil
	}
	return w.t.rebuild(ctx, w.sch, w.rename, w.rows)
}

// AddColumn implements sql.AlterableTable.
func (t *Table) AddColumn(ctx *sql.Context, column *sql.Column, order *sql.ColumnOrder) error {
	cols := t.sch.Schema.Copy()
	at, err := columnPosition(cols, order)
	if err != nil {
		return err
	}
	c := column.Copy()
	cols = slices.Insert(cols, at, c)
	return t.reshape(ctx, cols, nil, func(row sql.Row) (sql.Row, error) {
		return slices.Insert(row.Copy(), at, nil), nil
	})
}

// DropColumn implements sql.AlterableTable.
func (t *Table) DropColumn(ctx *sql.Context, name string) error {
	at := t.sch.Schema.IndexOfColName(name)
	if at < 0 {
		return sql.ErrTableColumnNotFound.New(t.name, name)
	}
	if t.sch.Schema[at].PrimaryKey {
		return sql.ErrUnsupportedFeature.New("dropping a primary key column of a temporary table")
	}
	cols := slices.Delete(t.sch.Schema.Copy(), at, at+1)
	return t.reshape(ctx, cols, map[string]string{strings.ToLower(name): ""}, func(row sql.Row) (sql.Row, error) {
		return slices.Delete(row.Copy(), at, at+1), nil
	})
}

// ModifyColumn implements sql.AlterableTable: the column is replaced (and
// moved, with order) and its values converted to the new type.
func (t *Table) ModifyColumn(ctx *sql.Context, name string, column *sql.Column, order *sql.ColumnOrder) error {
	from := t.sch.Schema.IndexOfColName(name)
	if from < 0 {
		return sql.ErrTableColumnNotFound.New(t.name, name)
	}
	cols := slices.Delete(t.sch.Schema.Copy(), from, from+1)
	to := from
	if order != nil {
		var err error
		if to, err = columnPosition(cols, order); err != nil {
			return err
		}
	}
	c := column.Copy()
	c.PrimaryKey = t.sch.Schema[from].PrimaryKey
	cols = slices.Insert(cols, to, c)
	return t.reshape(ctx, cols, map[string]string{strings.ToLower(name): column.Name}, func(row sql.Row) (sql.Row, error) {
		v, _, err := column.Type.Convert(ctx, row[from])
		if err != nil {
			return nil, err
		}
		out := slices.Delete(row.Copy(), from, from+1)
		return slices.Insert(out, to, v), nil
	})
}

// columnPosition is where order puts a column in cols (nil: at the end).
func columnPosition(cols sql.Schema, order *sql.ColumnOrder) (int, error) {
	switch {
	case order == nil:
		return len(cols), nil
	case order.First:
		return 0, nil
	case order.AfterColumn != "":
		i := cols.IndexOfColName(order.AfterColumn)
		if i < 0 {
			return 0, sql.ErrTableColumnNotFound.New("", order.AfterColumn)
		}
		return i + 1, nil
	}
	return len(cols), nil
}

// reshape rebuilds the table with columns cols, each row mapped by fn.
func (t *Table) reshape(ctx *sql.Context, cols sql.Schema, rename map[string]string, fn func(sql.Row) (sql.Row, error)) error {
	var pk []int // in the key's order, which may not be the columns'
	for _, o := range t.sch.PkOrdinals {
		name := t.sch.Schema[o].Name
		if to, ok := rename[strings.ToLower(name)]; ok && to != "" {
			name = to
		}
		pk = append(pk, cols.IndexOfColName(name))
	}
	rows := make([]sql.Row, 0, t.d.rows.Len())
	var err error
	t.d.rows.Ascend(func(r tempRow) bool {
		var row sql.Row
		if row, err = fn(r.row); err == nil {
			rows = append(rows, row)
		}
		return err == nil
	})
	if err != nil {
		return err
	}
	return t.rebuild(ctx, sql.NewPrimaryKeySchema(cols, pk...), rename, rows)
}

// rebuild replaces the table's schema with sch and its rows with rows. Its
// indexes keep their columns (renamed by rename, old lower-case name to
// new; "" for a dropped one, which leaves the index, and an index left
// without columns is dropped, as in MySQL) and its checks stay. A
// duplicate key under the new definition leaves the table as it was.
//
// Like DDL, the change is not undone by a later rollback (resetHistory).
func (t *Table) rebuild(ctx *sql.Context, sch sql.PrimaryKeySchema, rename map[string]string, rows []sql.Row) error {
	next, err := New(t.store, t.db, t.name, sch, t.coll)
	if err != nil {
		return err
	}
	next.checks, next.autoNext = t.checks, t.autoNext
	for _, ix := range t.indexes {
		def := ix.def
		def.Columns = nil
		for _, c := range ix.def.Columns {
			if to, ok := rename[strings.ToLower(c.Name)]; ok {
				if to == "" {
					continue
				}
				c.Name = to
			}
			def.Columns = append(def.Columns, c)
		}
		if len(def.Columns) == 0 {
			continue
		}
		if err := next.CreateIndex(ctx, def); err != nil {
			return err
		}
	}
	for _, row := range rows {
		if err := next.Insert(ctx, row); err != nil {
			return err
		}
	}
	t.sch, t.pkCols, t.rowIDs, t.indexes = next.sch, next.pkCols, next.rowIDs, next.indexes
	t.autoOrd, t.seq, t.d = next.autoOrd, next.seq, next.d
	t.resetHistory()
	return nil
}

// resetHistory makes the table's current data what its transaction, its
// statement and the savepoints return to: after DDL (an index added or
// dropped, a rebuild), the data kept from before no longer fits the
// definition, and like DDL the change is not undone.
func (t *Table) resetHistory() {
	t.txnData, t.txnGen = t.d.clone(), t.store.txnGen
	if t.stmtData != nil {
		t.stmtData = t.d.clone()
	}
	for _, sp := range t.store.savepoints {
		if _, ok := sp.data[t]; ok {
			sp.data[t] = t.d.clone()
		}
	}
}
