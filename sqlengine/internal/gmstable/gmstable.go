// Package gmstable holds what Certus's go-mysql-server tables share: the
// stored tables of sqlengine and the session's temporary tables
// (sqlengine/temptable) scan one partition, report duplicate keys and
// count AUTO_INCREMENT values alike.
package gmstable

import (
	"errors"
	"io"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/certusdb/certus/sqlengine/internal/sqlvalue"
	"github.com/certusdb/certus/storage"
	"github.com/certusdb/certus/txn"
)

// SinglePartition is the one partition of a table.
type SinglePartition struct{}

// Key implements sql.Partition.
func (SinglePartition) Key() []byte { return []byte("all") }

// Partitions returns the partitions of a table: SinglePartition.
func Partitions() sql.PartitionIter { return &partitionIter{} }

type partitionIter struct{ done bool }

func (p *partitionIter) Next(*sql.Context) (sql.Partition, error) {
	if p.done {
		return nil, io.EOF
	}
	p.done = true
	return SinglePartition{}, nil
}

func (p *partitionIter) Close(*sql.Context) error { return nil }

// SameSchema reports whether two schemas have the same columns (names and
// types) and primary key.
func SameSchema(a, b sql.PrimaryKeySchema) bool {
	if len(a.Schema) != len(b.Schema) || len(a.PkOrdinals) != len(b.PkOrdinals) {
		return false
	}
	for i := range a.Schema {
		if !strings.EqualFold(a.Schema[i].Name, b.Schema[i].Name) || !a.Schema[i].Type.Equals(b.Schema[i].Type) {
			return false
		}
	}
	for i := range a.PkOrdinals {
		if a.PkOrdinals[i] != b.PkOrdinals[i] {
			return false
		}
	}
	return true
}

// DiscardInserter accepts rows and drops them: the inserter of a table
// rewrite that leaves the rows as they are (an index change).
type DiscardInserter struct{}

func (DiscardInserter) Insert(*sql.Context, sql.Row) error       { return nil }
func (DiscardInserter) StatementBegin(*sql.Context)              {}
func (DiscardInserter) DiscardChanges(*sql.Context, error) error { return nil }
func (DiscardInserter) StatementComplete(*sql.Context) error     { return nil }
func (DiscardInserter) Close(*sql.Context) error                 { return nil }

// DupErr converts a duplicate key from txn to go-mysql-server's error, which
// INSERT IGNORE and ON DUPLICATE KEY UPDATE recognise.
func DupErr(err error) error {
	var d *txn.DuplicateKeyError
	if errors.As(err, &d) {
		return sql.NewUniqueKeyErr(d.Error(), d.IsPK, d.Existing)
	}
	var sd *storage.DuplicateKeyError
	if errors.As(err, &sd) {
		return sql.NewUniqueKeyErr(sd.Error(), false, sd.Row)
	}
	return err
}

// AutoIncrementStep is the session's auto_increment_increment and
// auto_increment_offset.
func AutoIncrementStep(ctx *sql.Context, s sql.Session) (increment, offset uint64) {
	get := func(name string) uint64 {
		v, err := s.GetSessionVariable(ctx, name)
		if err != nil {
			return 1
		}
		if n, ok := sqlvalue.AsInt(v); ok && n > 0 {
			return uint64(n)
		}
		return 1
	}
	return get("auto_increment_increment"), get("auto_increment_offset")
}

// ExplicitAutoIncrement is the value insertVal gives an AUTO_INCREMENT
// column of type typ (nil: not known), or 0 for one the counter must not
// pass: not positive, or no value of the column (out of range: the insert
// fails, and like MySQL the counter stays).
func ExplicitAutoIncrement(ctx *sql.Context, typ sql.Type, insertVal interface{}) uint64 {
	if typ != nil {
		v, inRange, err := typ.Convert(ctx, insertVal)
		if err != nil || inRange != sql.InRange {
			return 0
		}
		insertVal = v
	}
	explicit, _ := AutoIncrementArg(ctx, insertVal)
	return explicit
}

// AutoIncrementArg is a positive AUTO_INCREMENT column value as uint64 (0
// for other values).
func AutoIncrementArg(ctx *sql.Context, v interface{}) (uint64, error) {
	if v == nil {
		return 0, nil
	}
	switch x := v.(type) {
	case uint64:
		return x, nil
	case float32:
		return uint64(max(x, 0)), nil
	case float64:
		return uint64(max(x, 0)), nil
	}
	if i, ok := sqlvalue.AsInt(v); ok && i > 0 {
		return uint64(i), nil
	}
	return 0, nil
}
