package storage

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/planbuilder"

	"github.com/certusdb/certus/internal/codec"
)

// Catalog is an immutable snapshot of all schema objects at one position.
// A schema operation produces a new Catalog; readers keep the one their read
// view was taken with.
type Catalog struct {
	// Seqno is the position at which this catalog took effect.
	Seqno      uint64
	dbs        map[string]*DatabaseDef // by lower-case name
	tables     map[uint64]*TableDef
	privileges []byte
}

func newCatalog() *Catalog {
	return &Catalog{dbs: map[string]*DatabaseDef{}, tables: map[uint64]*TableDef{}}
}

// clone returns a shallow copy that may be modified.
func (c *Catalog) clone() *Catalog {
	n := &Catalog{Seqno: c.Seqno, dbs: make(map[string]*DatabaseDef, len(c.dbs)), tables: make(map[uint64]*TableDef, len(c.tables)), privileges: c.privileges}
	for k, v := range c.dbs {
		n.dbs[k] = v
	}
	for k, v := range c.tables {
		n.tables[k] = v
	}
	return n
}

// Privileges returns the serialized users and grants (nil if none were
// ever stored).
func (c *Catalog) Privileges() []byte { return c.privileges }

// Database returns the database named name (case-insensitive).
func (c *Catalog) Database(name string) (*DatabaseDef, bool) {
	d, ok := c.dbs[strings.ToLower(name)]
	return d, ok
}

// Databases returns all databases sorted by name.
func (c *Catalog) Databases() []*DatabaseDef {
	out := make([]*DatabaseDef, 0, len(c.dbs))
	for _, d := range c.dbs {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Table returns the table with the given id.
func (c *Catalog) Table(id uint64) (*TableDef, bool) {
	t, ok := c.tables[id]
	return t, ok
}

// TableByName finds a table by database and table name (case-insensitive).
func (c *Catalog) TableByName(db, name string) (*TableDef, bool) {
	d, ok := c.Database(db)
	if !ok {
		return nil, false
	}
	id, ok := d.Tables[strings.ToLower(name)]
	if !ok {
		return nil, false
	}
	return c.Table(id)
}

// Tables returns the tables of database db sorted by name.
func (c *Catalog) Tables(db string) []*TableDef {
	d, ok := c.Database(db)
	if !ok {
		return nil
	}
	out := make([]*TableDef, 0, len(d.Tables))
	for _, id := range d.Tables {
		if t, ok := c.tables[id]; ok {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// AllTables returns every table, ordered by id.
func (c *Catalog) AllTables() []*TableDef {
	out := make([]*TableDef, 0, len(c.tables))
	for _, t := range c.tables {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// DatabaseDef is a database and the names of its objects.
type DatabaseDef struct {
	Name      string            `json:"name"`
	Collation string            `json:"collation,omitempty"`
	Tables    map[string]uint64 `json:"tables"` // lower-case name -> table id
	Views     []ViewDef         `json:"views,omitempty"`
	Triggers  []NamedStatement  `json:"triggers,omitempty"`
	Routines  []NamedStatement  `json:"routines,omitempty"`
	Events    []NamedStatement  `json:"events,omitempty"`
}

// ViewDef is a stored view and the SQL mode it was defined under (its
// text is parsed under that mode).
type ViewDef struct {
	Name       string `json:"name"`
	Select     string `json:"select"`
	CreateStmt string `json:"create"`
	SQLMode    string `json:"sql_mode,omitempty"`
}

// NamedStatement is a stored trigger, routine or event: its CREATE
// statement and the SQL mode it was defined under.
type NamedStatement struct {
	Name       string `json:"name"`
	CreateStmt string `json:"create"`
	SQLMode    string `json:"sql_mode,omitempty"`
	CreatedAt  int64  `json:"created_at,omitempty"`
	ModifiedAt int64  `json:"modified_at,omitempty"`
}

func (d *DatabaseDef) clone() *DatabaseDef {
	n := *d
	n.Tables = make(map[string]uint64, len(d.Tables))
	for k, v := range d.Tables {
		n.Tables[k] = v
	}
	n.Views = append([]ViewDef(nil), d.Views...)
	n.Triggers = append([]NamedStatement(nil), d.Triggers...)
	n.Routines = append([]NamedStatement(nil), d.Routines...)
	n.Events = append([]NamedStatement(nil), d.Events...)
	return &n
}

// TableDef is a table's definition. Column and index ids are stable for the
// life of the table; a changed index is dropped and re-created with a new id.
type TableDef struct {
	ID        uint64      `json:"id"`
	DB        string      `json:"db"`
	Name      string      `json:"name"`
	Columns   []ColumnDef `json:"columns"`
	PK        []uint32    `json:"pk,omitempty"` // column ids of the primary key, in key order
	Indexes   []IndexDef  `json:"indexes,omitempty"`
	Checks    []CheckDef  `json:"checks,omitempty"`
	FKs       []FKDef     `json:"fks,omitempty"`
	Collation string      `json:"collation,omitempty"`
	Comment   string      `json:"comment,omitempty"`
	// NextColumnID and NextIndexID allocate ids for new columns and indexes.
	NextColumnID uint32 `json:"next_column_id"`
	NextIndexID  uint32 `json:"next_index_id"`
	// SchemaSeqno is the position of the last schema change of this table.
	SchemaSeqno uint64 `json:"schema_seqno"`

	once sync.Once
	info *TableInfo
	err  error
}

// ColumnDef is one column. Type and default expressions are SQL text.
type ColumnDef struct {
	ID            uint32 `json:"id"`
	Name          string `json:"name"`
	Type          string `json:"type"`
	Nullable      bool   `json:"nullable,omitempty"`
	Default       string `json:"default,omitempty"`
	HasDefault    bool   `json:"has_default,omitempty"`
	Generated     string `json:"generated,omitempty"`
	OnUpdate      string `json:"on_update,omitempty"`
	Virtual       bool   `json:"virtual,omitempty"`
	AutoIncrement bool   `json:"auto_increment,omitempty"`
	Comment       string `json:"comment,omitempty"`
	Extra         string `json:"extra,omitempty"`
	Hidden        bool   `json:"hidden,omitempty"`
	// HiddenSystem marks the generated column of a functional index key
	// part (INDEX ((expr))), which only the index uses.
	HiddenSystem bool `json:"hidden_system,omitempty"`
}

// IndexDef is a secondary index.
type IndexDef struct {
	ID      uint32   `json:"id"`
	Name    string   `json:"name"`
	Columns []uint32 `json:"columns"`
	Prefix  []uint16 `json:"prefix,omitempty"`
	Unique  bool     `json:"unique,omitempty"`
	Comment string   `json:"comment,omitempty"`
	// Kind is "" for a B-tree index, or "FULLTEXT"/"SPATIAL" (stored but not
	// used for lookups).
	Kind string `json:"kind,omitempty"`
}

// CheckDef is a CHECK constraint.
type CheckDef struct {
	Name     string `json:"name"`
	Expr     string `json:"expr"`
	Enforced bool   `json:"enforced"`
}

// FKDef is a foreign key constraint, stored as declared.
type FKDef struct {
	Name           string   `json:"name"`
	Columns        []string `json:"columns"`
	ParentDatabase string   `json:"parent_db"`
	ParentTable    string   `json:"parent_table"`
	ParentColumns  []string `json:"parent_columns"`
	OnUpdate       string   `json:"on_update"`
	OnDelete       string   `json:"on_delete"`
	IsResolved     bool     `json:"resolved"`
}

// Clone returns a deep copy that may be modified. The copy's derived
// TableInfo is recomputed on first use.
func (t *TableDef) Clone() *TableDef {
	n := &TableDef{
		ID: t.ID, DB: t.DB, Name: t.Name, Collation: t.Collation, Comment: t.Comment,
		NextColumnID: t.NextColumnID, NextIndexID: t.NextIndexID, SchemaSeqno: t.SchemaSeqno,
	}
	n.Columns = append([]ColumnDef(nil), t.Columns...)
	n.PK = append([]uint32(nil), t.PK...)
	n.Indexes = make([]IndexDef, len(t.Indexes))
	for i, ix := range t.Indexes {
		ix.Columns = append([]uint32(nil), ix.Columns...)
		ix.Prefix = append([]uint16(nil), ix.Prefix...)
		n.Indexes[i] = ix
	}
	n.Checks = append([]CheckDef(nil), t.Checks...)
	n.FKs = append([]FKDef(nil), t.FKs...)
	return n
}

// Column returns the column with the given id.
func (t *TableDef) Column(id uint32) (*ColumnDef, int) {
	for i := range t.Columns {
		if t.Columns[i].ID == id {
			return &t.Columns[i], i
		}
	}
	return nil, -1
}

// ColumnByName returns the column with the given name (case-insensitive).
func (t *TableDef) ColumnByName(name string) (*ColumnDef, int) {
	for i := range t.Columns {
		if strings.EqualFold(t.Columns[i].Name, name) {
			return &t.Columns[i], i
		}
	}
	return nil, -1
}

// Index returns the index with the given name (case-insensitive).
func (t *TableDef) Index(name string) (*IndexDef, int) {
	for i := range t.Indexes {
		if strings.EqualFold(t.Indexes[i].Name, name) {
			return &t.Indexes[i], i
		}
	}
	return nil, -1
}

// Keyless reports whether the table has no primary key; its rows are keyed
// by a hash of their contents and stored with a duplicate count.
func (t *TableDef) Keyless() bool { return len(t.PK) == 0 }

// Info returns the table's derived encoding information, computed once.
func (t *TableDef) Info() (*TableInfo, error) {
	t.once.Do(func() { t.info, t.err = newTableInfo(t) })
	return t.info, t.err
}

// TableInfo is derived from a TableDef: parsed types, the row layout and
// the key encodings of the primary key and each index.
type TableInfo struct {
	Def     *TableDef
	Types   []sql.Type
	ColIDs  []uint32
	Layout  *codec.RowLayout
	PKOrds  []int
	PKCols  []codec.KeyColumn
	Indexes []IndexInfo
	AutoInc int // ordinal of the AUTO_INCREMENT column, or -1
	// applyCols marks the columns applying a row change reads: those of
	// usable secondary indexes and the AUTO_INCREMENT column.
	applyCols []bool
	prefix    []byte
	rowsLo    []byte
	rowsHi    []byte
}

// IndexInfo is the derived key encoding of one secondary index.
type IndexInfo struct {
	Def    *IndexDef
	Ords   []int
	Cols   []codec.KeyColumn
	prefix []byte
	// Usable is false for FULLTEXT/SPATIAL indexes and indexes on types
	// that have no key encoding; such indexes keep no entries.
	Usable bool
}

func newTableInfo(t *TableDef) (*TableInfo, error) {
	info := &TableInfo{Def: t, AutoInc: -1}
	for i, c := range t.Columns {
		typ, err := planbuilder.ParseColumnTypeString(c.Type)
		if err != nil {
			return nil, fmt.Errorf("table %s.%s column %s: type %q: %w", t.DB, t.Name, c.Name, c.Type, err)
		}
		info.Types = append(info.Types, typ)
		info.ColIDs = append(info.ColIDs, c.ID)
		if c.AutoIncrement {
			info.AutoInc = i
		}
	}
	info.Layout = codec.NewRowLayout(info.ColIDs)
	for _, id := range t.PK {
		_, ord := t.Column(id)
		if ord < 0 {
			return nil, fmt.Errorf("table %s.%s: primary key column %d missing", t.DB, t.Name, id)
		}
		kc := codec.KeyColumnFor(info.Types[ord], 0)
		if kc.Kind == codec.KindUnsupported {
			return nil, fmt.Errorf("table %s.%s: column %s cannot be part of a primary key", t.DB, t.Name, t.Columns[ord].Name)
		}
		info.PKOrds = append(info.PKOrds, ord)
		info.PKCols = append(info.PKCols, kc)
	}
	info.prefix = TablePrefix(t.ID)
	info.rowsLo = RowPrefix(t.ID)
	info.rowsHi = codec.PrefixEnd(info.rowsLo)
	for i := range t.Indexes {
		ix := &t.Indexes[i]
		ii := IndexInfo{Def: ix, Usable: ix.Kind == "", prefix: IndexPrefix(t.ID, ix.ID)}
		for j, id := range ix.Columns {
			_, ord := t.Column(id)
			if ord < 0 {
				return nil, fmt.Errorf("table %s.%s index %s: column %d missing", t.DB, t.Name, ix.Name, id)
			}
			prefix := 0
			if j < len(ix.Prefix) {
				prefix = int(ix.Prefix[j])
			}
			kc := codec.KeyColumnFor(info.Types[ord], prefix)
			if kc.Kind == codec.KindUnsupported {
				ii.Usable = false
			}
			ii.Ords = append(ii.Ords, ord)
			ii.Cols = append(ii.Cols, kc)
		}
		info.Indexes = append(info.Indexes, ii)
	}
	info.applyCols = make([]bool, len(t.Columns))
	for _, ii := range info.Indexes {
		if ii.Usable {
			for _, o := range ii.Ords {
				info.applyCols[o] = true
			}
		}
	}
	if info.AutoInc >= 0 {
		info.applyCols[info.AutoInc] = true
	}
	return info, nil
}

// IndexByID returns the derived info of index id.
func (ti *TableInfo) IndexByID(id uint32) *IndexInfo {
	for i := range ti.Indexes {
		if ti.Indexes[i].Def.ID == id {
			return &ti.Indexes[i]
		}
	}
	return nil
}

func marshalJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("storage: marshal %T: %v", v, err)) // only plain structs are marshalled
	}
	return b
}

// KeyString is the value of the columns ords of row as MySQL's duplicate
// key message shows it: each as the client sees it ('2024-01-05', not a
// Go time), joined by "-".
func (ti *TableInfo) KeyString(ords []int, row sql.Row) string {
	var b strings.Builder
	ctx := sql.NewEmptyContext()
	for i, o := range ords {
		if i > 0 {
			b.WriteByte('-')
		}
		if o < len(ti.Types) && o < len(row) {
			if v, err := ti.Types[o].SQL(ctx, nil, row[o]); err == nil {
				b.WriteString(v.ToString())
				continue
			}
		}
		if o < len(row) {
			fmt.Fprint(&b, row[o])
		}
	}
	return b.String()
}
