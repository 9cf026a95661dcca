package storage

import (
	"encoding/json"
	"fmt"

	"github.com/certusdb/certus/writeset"
)

// SchemaOpKind names a schema operation.
type SchemaOpKind string

// Schema operations. They travel in write-sets (writeset.OpSchema) and are
// applied in order, before the write-set's row operations, on every node.
const (
	// OpPutDatabase creates or replaces a database definition (views,
	// triggers and routines included; the table map is maintained by table
	// operations and kept as stored).
	OpPutDatabase SchemaOpKind = "put_db"
	// OpDropDatabase removes a database and all its tables' data.
	OpDropDatabase SchemaOpKind = "drop_db"
	// OpPutTable creates or replaces a table definition and registers its
	// name in its database (a rename is a put under the new name).
	OpPutTable SchemaOpKind = "put_table"
	// OpDropTable removes a table, its name and all its data.
	OpDropTable SchemaOpKind = "drop_table"
	// OpTruncate deletes all rows and index entries of a table and resets
	// its AUTO_INCREMENT counter.
	OpTruncate SchemaOpKind = "truncate"
	// OpBuildIndex builds an index's entries from the table's rows as they
	// are at this position; a unique index over duplicate values fails the
	// whole write-set on every node alike.
	OpBuildIndex SchemaOpKind = "build_index"
	// OpDropIndexData deletes an index's entries.
	OpDropIndexData SchemaOpKind = "drop_index_data"
	// OpPutPrivileges replaces the serialized users and grants.
	OpPutPrivileges SchemaOpKind = "put_privileges"
)

// SchemaOp is one schema operation.
type SchemaOp struct {
	Kind     SchemaOpKind `json:"kind"`
	Database *DatabaseDef `json:"db,omitempty"`
	Table    *TableDef    `json:"table,omitempty"`
	Name     string       `json:"name,omitempty"`
	TableID  uint64       `json:"table_id,omitempty"`
	IndexID  uint32       `json:"index_id,omitempty"`
	Data     []byte       `json:"data,omitempty"`
}

// WriteSetOp wraps the schema operation as a write-set operation.
func (op *SchemaOp) WriteSetOp() writeset.Op {
	return writeset.Op{Kind: writeset.OpSchema, TableID: op.TableID, Payload: marshalJSON(op)}
}

// DecodeSchemaOp parses a write-set schema payload.
func DecodeSchemaOp(payload []byte) (*SchemaOp, error) {
	var op SchemaOp
	if err := json.Unmarshal(payload, &op); err != nil {
		return nil, fmt.Errorf("storage: corrupt schema operation: %w", err)
	}
	return &op, nil
}

// ApplyTo returns the catalog that results from applying op to c, without
// touching data. It is used both by Apply and by transactions that see
// their own uncommitted DDL.
func (op *SchemaOp) ApplyTo(c *Catalog, seqno uint64) (*Catalog, error) {
	n := c.clone()
	switch op.Kind {
	case OpPutDatabase:
		d := op.Database.clone()
		if old, ok := n.dbs[lower(d.Name)]; ok {
			d.Tables = old.clone().Tables
		} else {
			d.Tables = map[string]uint64{}
		}
		n.dbs[lower(d.Name)] = d
	case OpDropDatabase:
		d, ok := n.dbs[lower(op.Name)]
		if !ok {
			return nil, fmt.Errorf("storage: drop of unknown database %q", op.Name)
		}
		for _, id := range d.Tables {
			delete(n.tables, id)
		}
		delete(n.dbs, lower(op.Name))
	case OpPutTable:
		t := op.Table.Clone()
		t.SchemaSeqno = seqno
		d, ok := n.dbs[lower(t.DB)]
		if !ok {
			return nil, fmt.Errorf("storage: table %q in unknown database %q", t.Name, t.DB)
		}
		d = d.clone()
		if old, ok := n.tables[t.ID]; ok {
			if od, ok := n.dbs[lower(old.DB)]; ok && lower(old.DB) != lower(t.DB) {
				od = od.clone()
				delete(od.Tables, lower(old.Name))
				n.dbs[lower(old.DB)] = od
			}
			delete(d.Tables, lower(old.Name))
		}
		if other, ok := d.Tables[lower(t.Name)]; ok && other != t.ID {
			return nil, fmt.Errorf("storage: table %s.%s already exists", t.DB, t.Name)
		}
		d.Tables[lower(t.Name)] = t.ID
		n.dbs[lower(t.DB)] = d
		n.tables[t.ID] = t
	case OpDropTable:
		t, ok := n.tables[op.TableID]
		if !ok {
			return nil, fmt.Errorf("storage: drop of unknown table %d", op.TableID)
		}
		if d, ok := n.dbs[lower(t.DB)]; ok {
			d = d.clone()
			delete(d.Tables, lower(t.Name))
			n.dbs[lower(t.DB)] = d
		}
		delete(n.tables, op.TableID)
	case OpPutPrivileges:
		n.privileges = append([]byte(nil), op.Data...)
	case OpTruncate, OpBuildIndex, OpDropIndexData:
		if _, ok := n.tables[op.TableID]; !ok {
			return nil, fmt.Errorf("storage: %s of unknown table %d", op.Kind, op.TableID)
		}
		if op.Kind == OpTruncate {
			// the definition is unchanged, but the table's schema position
			// moves so that concurrent writers fail certification
			t := n.tables[op.TableID].Clone()
			t.SchemaSeqno = seqno
			n.tables[op.TableID] = t
		}
	default:
		return nil, fmt.Errorf("storage: unknown schema operation %q", op.Kind)
	}
	n.Seqno = seqno
	return n, nil
}
