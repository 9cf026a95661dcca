package codec

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/shopspring/decimal"
)

// Row encoding. A stored row is
//
//	version byte (rowVersion) | uvarint count | count × (uvarint column id | tag | payload)
//
// Column ids are stable per table (they survive ADD/DROP COLUMN), so a row
// written under an older schema decodes under a newer one: columns it lacks
// read as NULL, columns that were dropped are skipped.

const rowVersion = 1

// Row value tags.
const (
	tNull byte = iota
	tInt8
	tInt16
	tInt32
	tInt64
	tUint8
	tUint16
	tUint32
	tUint64
	tFloat32
	tFloat64
	tDecimal
	tString
	tBytes
	tTime
	tTimespan
	tJSON
	tGeometry
	tInt
	tUint
)

// ErrCorruptRow is returned when stored row bytes cannot be decoded.
var ErrCorruptRow = errors.New("codec: corrupt row encoding")

// ErrUnsupportedValue is returned when a value's Go type has no row encoding.
var ErrUnsupportedValue = errors.New("codec: unsupported value type")

// AppendRow appends the encoding of vals, whose column ids are ids, to dst.
// Values of virtual (generated, not stored) columns must be passed as nil by
// the caller if they should not be stored.
func AppendRow(ctx context.Context, dst []byte, ids []uint32, vals []any) ([]byte, error) {
	if len(ids) != len(vals) {
		return nil, fmt.Errorf("codec: %d column ids for %d values", len(ids), len(vals))
	}
	dst = append(dst, rowVersion)
	dst = binary.AppendUvarint(dst, uint64(len(vals)))
	var err error
	for i, v := range vals {
		dst = binary.AppendUvarint(dst, uint64(ids[i]))
		dst, err = appendValue(ctx, dst, v)
		if err != nil {
			return nil, err
		}
	}
	return dst, nil
}

func appendValue(ctx context.Context, dst []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(dst, tNull), nil
	case int8:
		return binary.AppendVarint(append(dst, tInt8), int64(x)), nil
	case int16:
		return binary.AppendVarint(append(dst, tInt16), int64(x)), nil
	case int32:
		return binary.AppendVarint(append(dst, tInt32), int64(x)), nil
	case int64:
		return binary.AppendVarint(append(dst, tInt64), x), nil
	case int:
		return binary.AppendVarint(append(dst, tInt), int64(x)), nil
	case uint8:
		return binary.AppendUvarint(append(dst, tUint8), uint64(x)), nil
	case uint16:
		return binary.AppendUvarint(append(dst, tUint16), uint64(x)), nil
	case uint32:
		return binary.AppendUvarint(append(dst, tUint32), uint64(x)), nil
	case uint64:
		return binary.AppendUvarint(append(dst, tUint64), x), nil
	case uint:
		return binary.AppendUvarint(append(dst, tUint), uint64(x)), nil
	case float32:
		return binary.LittleEndian.AppendUint32(append(dst, tFloat32), math.Float32bits(x)), nil
	case float64:
		return binary.LittleEndian.AppendUint64(append(dst, tFloat64), math.Float64bits(x)), nil
	case decimal.Decimal:
		return appendBytes(append(dst, tDecimal), []byte(decimalText(x))), nil
	case string:
		return appendBytes(append(dst, tString), []byte(x)), nil
	case []byte:
		return appendBytes(append(dst, tBytes), x), nil
	case time.Time:
		dst = append(dst, tTime)
		dst = binary.AppendVarint(dst, x.Unix())
		return binary.AppendUvarint(dst, uint64(x.Nanosecond())), nil
	case types.Timespan:
		return binary.AppendVarint(append(dst, tTimespan), int64(x)), nil
	case types.GeometryValue:
		return appendBytes(append(dst, tGeometry), x.Serialize()), nil
	case sql.JSONWrapper:
		// stored as MySQL prints JSON ({"a": 1, "b": [1, 2]}), since
		// reads pass the stored bytes through to the client; a document
		// read from storage keeps its bytes
		var b []byte
		var err error
		if _, stored := x.(types.JSONBytes); stored {
			b, err = types.MarshallJson(ctx, x)
		} else {
			b, err = types.JsonToMySqlBytes(ctx, x)
		}
		if err != nil {
			return nil, err
		}
		return appendBytes(append(dst, tJSON), b), nil
	case sql.AnyWrapper:
		u, err := x.UnwrapAny(ctx)
		if err != nil {
			return nil, err
		}
		return appendValue(ctx, dst, u)
	default:
		return nil, fmt.Errorf("%w: %T", ErrUnsupportedValue, v)
	}
}

func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

// RowLayout maps stored column ids to positions in a schema.
type RowLayout struct {
	// pos[id] is the schema position of column id, or -1.
	pos []int
	n   int
}

// NewRowLayout builds the layout for a schema whose columns have the given
// ids, in schema order.
func NewRowLayout(ids []uint32) *RowLayout {
	maxID := uint32(0)
	for _, id := range ids {
		if id > maxID {
			maxID = id
		}
	}
	l := &RowLayout{pos: make([]int, maxID+1), n: len(ids)}
	for i := range l.pos {
		l.pos[i] = -1
	}
	for i, id := range ids {
		l.pos[id] = i
	}
	return l
}

// Width is the number of columns of the schema.
func (l *RowLayout) Width() int { return l.n }

// DecodeRow decodes data into a row of the layout's width. Columns missing
// from data are left nil.
func (l *RowLayout) DecodeRow(data []byte) (sql.Row, error) {
	row := make(sql.Row, l.n)
	if err := l.DecodeSome(data, row, nil); err != nil {
		return nil, err
	}
	return row, nil
}

// DecodeSome decodes data into row, which must have the layout's width:
// only the columns whose position want marks (all when want is nil); the
// others stay nil and cost no allocation. The whole value is still checked
// for shape.
func (l *RowLayout) DecodeSome(data []byte, row sql.Row, want []bool) error {
	return l.DecodeSomeIn(data, row, want, nil)
}

// DecodeSomeIn is DecodeSome with strings, byte strings and integers
// taken from a (see Arena); nil allocates each.
func (l *RowLayout) DecodeSomeIn(data []byte, row sql.Row, want []bool, a *Arena) error {
	if len(data) < 1 || data[0] != rowVersion {
		return ErrCorruptRow
	}
	data = data[1:]
	count, n := binary.Uvarint(data)
	if n <= 0 {
		return ErrCorruptRow
	}
	data = data[n:]
	for i := uint64(0); i < count; i++ {
		id, n := binary.Uvarint(data)
		if n <= 0 {
			return ErrCorruptRow
		}
		data = data[n:]
		p := -1
		if id < uint64(len(l.pos)) {
			p = l.pos[id]
		}
		if p < 0 || (want != nil && (p >= len(want) || !want[p])) {
			rest, err := skipValue(data)
			if err != nil {
				return err
			}
			data = rest
			continue
		}
		v, rest, err := decodeValue(data, a)
		if err != nil {
			return err
		}
		data = rest
		row[p] = v
	}
	if len(data) != 0 {
		return ErrCorruptRow
	}
	return nil
}

// skipValue returns what follows the encoded value at the start of data,
// without building length-prefixed values.
func skipValue(data []byte) ([]byte, error) {
	if len(data) > 0 {
		switch data[0] {
		case tDecimal, tString, tBytes, tJSON, tGeometry:
			l, n := binary.Uvarint(data[1:])
			if n <= 0 || l > uint64(len(data)-1-n) {
				return nil, ErrCorruptRow
			}
			return data[1+n+int(l):], nil
		case tInt8, tInt16, tInt32, tInt64, tInt, tTimespan, tUint8, tUint16, tUint32, tUint64, tUint:
			// a varint either way (decoding would box the number)
			if _, n := binary.Uvarint(data[1:]); n > 0 {
				return data[1+n:], nil
			}
			return nil, ErrCorruptRow
		}
	}
	_, rest, err := decodeValue(data, nil)
	return rest, err
}

// decodeValue decodes the value at the start of data, taking strings, byte
// strings, int32s and int64s from a when it is not nil.
func decodeValue(data []byte, a *Arena) (any, []byte, error) {
	if len(data) == 0 {
		return nil, nil, ErrCorruptRow
	}
	tag := data[0]
	data = data[1:]
	switch tag {
	case tNull:
		return nil, data, nil
	case tInt8, tInt16, tInt32, tInt64, tInt, tTimespan:
		x, n := binary.Varint(data)
		if n <= 0 {
			return nil, nil, ErrCorruptRow
		}
		data = data[n:]
		switch tag {
		case tInt8:
			return int8(x), data, nil
		case tInt16:
			return int16(x), data, nil
		case tInt32:
			if a != nil {
				return a.Int32(int32(x)), data, nil
			}
			return int32(x), data, nil
		case tInt:
			return int(x), data, nil
		case tTimespan:
			return types.Timespan(x), data, nil
		}
		if a != nil {
			return a.Int64(x), data, nil
		}
		return x, data, nil
	case tUint8, tUint16, tUint32, tUint64, tUint:
		x, n := binary.Uvarint(data)
		if n <= 0 {
			return nil, nil, ErrCorruptRow
		}
		data = data[n:]
		switch tag {
		case tUint8:
			return uint8(x), data, nil
		case tUint16:
			return uint16(x), data, nil
		case tUint32:
			return uint32(x), data, nil
		case tUint:
			return uint(x), data, nil
		}
		return x, data, nil
	case tFloat32:
		if len(data) < 4 {
			return nil, nil, ErrCorruptRow
		}
		return math.Float32frombits(binary.LittleEndian.Uint32(data)), data[4:], nil
	case tFloat64:
		if len(data) < 8 {
			return nil, nil, ErrCorruptRow
		}
		return math.Float64frombits(binary.LittleEndian.Uint64(data)), data[8:], nil
	case tTime:
		sec, n := binary.Varint(data)
		if n <= 0 {
			return nil, nil, ErrCorruptRow
		}
		data = data[n:]
		nsec, n := binary.Uvarint(data)
		if n <= 0 || nsec >= 1e9 {
			return nil, nil, ErrCorruptRow
		}
		return time.Unix(sec, int64(nsec)).UTC(), data[n:], nil
	case tDecimal, tString, tBytes, tJSON, tGeometry:
		l, n := binary.Uvarint(data)
		if n <= 0 || l > uint64(len(data)-n) {
			return nil, nil, ErrCorruptRow
		}
		b := data[n : n+int(l)]
		data = data[n+int(l):]
		switch tag {
		case tDecimal:
			d, err := decimal.NewFromString(string(b))
			if err != nil {
				return nil, nil, ErrCorruptRow
			}
			return d, data, nil
		case tString:
			if a != nil {
				return a.String(b), data, nil
			}
			return string(b), data, nil
		case tBytes:
			if a != nil && len(b) > 0 {
				return a.Bytes(b), data, nil
			}
			return append([]byte{}, b...), data, nil
		case tJSON:
			return types.NewLazyJSONDocument(append([]byte{}, b...)), data, nil
		default:
			g, _, err := types.GeometryType{}.Convert(context.Background(), append([]byte{}, b...))
			if err != nil {
				return nil, nil, ErrCorruptRow
			}
			return g, data, nil
		}
	}
	return nil, nil, ErrCorruptRow
}

// decimalText is d's text with its scale: String() drops trailing zeros,
// and a DECIMAL(18,16) value 2.5633000000000370 would read back as
// 2.563300000000037 (which CONCAT and CAST then show).
func decimalText(d decimal.Decimal) string {
	if d.Exponent() < 0 {
		return d.StringFixed(-d.Exponent())
	}
	return d.String()
}
