package sqlengine

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/analyzer/analyzererrors"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"
)

// maxRowSize is MySQL's limit on the size of a row's columns.
const maxRowSize = 65535

var _ sql.SchemaValidator = (*Database)(nil)

// ValidateSchema implements sql.SchemaValidator: CREATE and ALTER TABLE
// refuse a row larger than MySQL allows, so a schema that works on Certus
// also works on MySQL.
func (d *Database) ValidateSchema(sch sql.Schema) error {
	if n := rowSize(sch); n > maxRowSize {
		return analyzererrors.ErrInvalidRowLength.New(maxRowSize, n)
	}
	return nil
}

// rowSize is a row's size as MySQL counts it against maxRowSize: each
// column's storage requirement (TEXT and BLOB values count their length
// and a pointer only) plus a bit per nullable column.
func rowSize(sch sql.Schema) int64 {
	var size, nullable int64
	for _, c := range sch {
		if c.Virtual {
			continue
		}
		if c.Nullable {
			nullable++
		}
		size += columnSize(c.Type)
	}
	return size + (nullable+7)/8
}

// columnSize is a column type's storage requirement in a row (MySQL's
// "Data Type Storage Requirements").
func columnSize(t sql.Type) int64 {
	switch t.Type() {
	case sqltypes.Int8, sqltypes.Uint8, sqltypes.Year:
		return 1
	case sqltypes.Int16, sqltypes.Uint16:
		return 2
	case sqltypes.Int24, sqltypes.Uint24, sqltypes.Date:
		return 3
	case sqltypes.Int32, sqltypes.Uint32, sqltypes.Float32:
		return 4
	case sqltypes.Int64, sqltypes.Uint64, sqltypes.Float64:
		return 8
	case sqltypes.Time:
		return 3 + fractionSize(t)
	case sqltypes.Datetime:
		return 5 + fractionSize(t)
	case sqltypes.Timestamp:
		return 4 + fractionSize(t)
	case sqltypes.Bit:
		if b, ok := t.(types.BitType); ok {
			return (int64(b.NumberOfBits()) + 7) / 8
		}
	case sqltypes.Decimal:
		if d, ok := t.(sql.DecimalType); ok {
			return decimalSize(int(d.Precision())-int(d.Scale())) + decimalSize(int(d.Scale()))
		}
	case sqltypes.Enum:
		if e, ok := t.(sql.EnumType); ok && e.NumberOfElements() > 255 {
			return 2
		}
		return 1
	case sqltypes.Set:
		if s, ok := t.(sql.SetType); ok {
			if n := (int64(s.NumberOfElements()) + 7) / 8; n <= 4 {
				return n
			}
		}
		return 8
	case sqltypes.Char, sqltypes.Binary:
		if s, ok := t.(sql.StringType); ok {
			return s.MaxByteLength()
		}
	case sqltypes.VarChar, sqltypes.VarBinary:
		if s, ok := t.(sql.StringType); ok {
			return s.MaxByteLength() + min(lengthBytes(s.MaxByteLength()), 2)
		}
	case sqltypes.Text, sqltypes.Blob:
		if s, ok := t.(sql.StringType); ok {
			return lengthBytes(s.MaxByteLength()) + 8
		}
	case sqltypes.TypeJSON, sqltypes.Geometry:
		return 4 + 8
	}
	if v, ok := t.(types.VectorType); ok {
		return 4 * int64(v.Dimensions)
	}
	return 8
}

// fractionSize is the storage of a temporal type's fractional seconds.
func fractionSize(t sql.Type) int64 {
	if d, ok := t.(sql.DatetimeType); ok {
		return (int64(d.Precision()) + 1) / 2
	}
	return 0
}

// decimalSize is the storage of n decimal digits: 4 bytes per 9 digits,
// and 1 to 4 bytes for the rest.
func decimalSize(n int) int64 {
	rest := [...]int64{0, 1, 1, 2, 2, 3, 3, 4, 4, 4}
	return int64(n/9)*4 + rest[n%9]
}

// lengthBytes is the size of the length of a TEXT or BLOB of at most n
// bytes.
func lengthBytes(n int64) int64 {
	switch {
	case n <= 255:
		return 1
	case n <= 65535:
		return 2
	case n <= 16777215:
		return 3
	}
	return 4
}
