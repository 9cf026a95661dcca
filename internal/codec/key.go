// Package codec turns SQL values into bytes: an order-preserving key
// encoding for primary and secondary index keys, and a compact,
// self-describing row encoding for stored rows.
//
// Key encoding. Every encoded value starts with a tag byte: TagNull (0x01)
// for NULL, TagValue (0x02) for anything else, so NULL sorts before every
// value as it does in a MySQL index. The payload that follows depends on the
// column's Kind and is built so that bytes.Compare on two encodings agrees
// with go-mysql-server's Type.Compare on the two values. Every encoding is
// self-delimiting, so a tuple of values is the concatenation of their
// encodings and tuples compare column by column.
//
// Strings with a collation are encoded as the sequence of their runes'
// collation weights (the same weights go-mysql-server compares), so 'a' and
// 'A' are one key under a case-insensitive collation. Such a key cannot be
// decoded back to the string; rows always carry the original values.
package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"time"
	"unicode/utf8"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/shopspring/decimal"
)

// Tag bytes that start every encoded key value.
const (
	// TagNull marks a NULL value. It sorts before TagValue.
	TagNull byte = 0x01
	// TagValue marks a non-NULL value; the payload follows.
	TagValue byte = 0x02
)

// Kind is the key-encoding family of a column type.
type Kind uint8

// Key kinds. KindUnsupported columns cannot be part of a key.
const (
	KindUnsupported Kind = iota
	KindInt              // signed integers, YEAR
	KindUint             // unsigned integers, ENUM, SET, BIT
	KindFloat            // FLOAT, DOUBLE
	KindDecimal          // DECIMAL
	KindString           // character strings with a collation
	KindBytes            // binary strings
	KindTime             // DATE, DATETIME, TIMESTAMP
	KindTimespan         // TIME
)

// ErrUnsupportedKeyType is returned when a value of a type that cannot be
// part of an index key (JSON, geometry, ...) is encoded as a key.
var ErrUnsupportedKeyType = errors.New("codec: type cannot be used in an index key")

// ErrKeyValue is returned when a value does not match the Go type expected
// for its column's Kind.
var ErrKeyValue = errors.New("codec: value does not match the key column type")

// KeyColumn describes how one column is encoded in a key.
type KeyColumn struct {
	Kind Kind
	// Collation is used by KindString.
	Collation sql.CollationID
	// Prefix, when > 0, keeps only the first Prefix characters (KindString)
	// or bytes (KindBytes) of the value, as in INDEX (c(10)).
	Prefix int
}

// KeyColumnFor returns the key encoding for a column of type t.
func KeyColumnFor(t sql.Type, prefix int) KeyColumn {
	kc := KeyColumn{Prefix: prefix}
	switch {
	case types.IsBinaryType(t):
		kc.Kind = KindBytes
	case types.IsText(t):
		kc.Kind = KindString
		if st, ok := t.(sql.StringType); ok {
			kc.Collation = st.Collation()
		} else if ct, ok := t.(sql.TypeWithCollation); ok {
			kc.Collation = ct.Collation()
		}
		if kc.Collation.Sorter() == nil {
			kc.Kind = KindBytes
		}
	case types.IsEnum(t), types.IsSet(t), types.IsBit(t):
		kc.Kind = KindUint
	case types.IsYear(t):
		kc.Kind = KindInt
	case types.IsUnsigned(t):
		kc.Kind = KindUint
	case types.IsSigned(t):
		kc.Kind = KindInt
	case types.IsFloat(t):
		kc.Kind = KindFloat
	case types.IsDecimal(t):
		kc.Kind = KindDecimal
	case types.IsTime(t):
		kc.Kind = KindTime
	case types.IsTimespan(t):
		kc.Kind = KindTimespan
	default:
		kc.Kind = KindUnsupported
	}
	return kc
}

// AppendKey appends the order-preserving encoding of v to dst. v must
// already be of the column type's canonical Go type (the result of
// Type.Convert), or nil.
func (kc KeyColumn) AppendKey(dst []byte, v any) ([]byte, error) {
	if v == nil {
		return append(dst, TagNull), nil
	}
	dst = append(dst, TagValue)
	switch kc.Kind {
	case KindInt:
		i, ok := asInt64(v)
		if !ok {
			return nil, fmt.Errorf("%w: %T for an integer column", ErrKeyValue, v)
		}
		return binary.BigEndian.AppendUint64(dst, uint64(i)^(1<<63)), nil
	case KindUint:
		u, ok := asUint64(v)
		if !ok {
			return nil, fmt.Errorf("%w: %T for an unsigned column", ErrKeyValue, v)
		}
		return binary.BigEndian.AppendUint64(dst, u), nil
	case KindFloat:
		var f float64
		switch x := v.(type) {
		case float64:
			f = x
		case float32:
			f = float64(x)
		default:
			return nil, fmt.Errorf("%w: %T for a float column", ErrKeyValue, v)
		}
		return appendFloatKey(dst, f), nil
	case KindDecimal:
		d, ok := v.(decimal.Decimal)
		if !ok {
			return nil, fmt.Errorf("%w: %T for a decimal column", ErrKeyValue, v)
		}
		return appendDecimalKey(dst, d), nil
	case KindString:
		s, ok := v.(string)
		if !ok {
			if b, isBytes := v.([]byte); isBytes {
				s = string(b)
			} else {
				return nil, fmt.Errorf("%w: %T for a string column", ErrKeyValue, v)
			}
		}
		return appendCollatedKey(dst, s, kc.Collation, kc.Prefix)
	case KindBytes:
		var b []byte
		switch x := v.(type) {
		case []byte:
			b = x
		case string:
			b = []byte(x)
		default:
			return nil, fmt.Errorf("%w: %T for a binary column", ErrKeyValue, v)
		}
		if kc.Prefix > 0 && len(b) > kc.Prefix {
			b = b[:kc.Prefix]
		}
		return appendEscaped(dst, b), nil
	case KindTime:
		t, ok := v.(time.Time)
		if !ok {
			return nil, fmt.Errorf("%w: %T for a time column", ErrKeyValue, v)
		}
		dst = binary.BigEndian.AppendUint64(dst, uint64(t.Unix())^(1<<63))
		return binary.BigEndian.AppendUint32(dst, uint32(t.Nanosecond())), nil
	case KindTimespan:
		ts, ok := v.(types.Timespan)
		if !ok {
			return nil, fmt.Errorf("%w: %T for a TIME column", ErrKeyValue, v)
		}
		return binary.BigEndian.AppendUint64(dst, uint64(int64(ts))^(1<<63)), nil
	default:
		return nil, ErrUnsupportedKeyType
	}
}

func asInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case int:
		return int64(x), true
	}
	return 0, false
}

func asUint64(v any) (uint64, bool) {
	switch x := v.(type) {
	case uint8:
		return uint64(x), true
	case uint16:
		return uint64(x), true
	case uint32:
		return uint64(x), true
	case uint64:
		return x, true
	case uint:
		return uint64(x), true
	}
	return 0, false
}

func appendFloatKey(dst []byte, f float64) []byte {
	if f == 0 {
		f = 0 // -0 and +0 are one key
	}
	bits := math.Float64bits(f)
	if bits&(1<<63) != 0 {
		bits = ^bits
	} else {
		bits |= 1 << 63
	}
	return binary.BigEndian.AppendUint64(dst, bits)
}

// Decimal key layout: a sign byte (0x01 negative, 0x02 zero, 0x03 positive),
// then for non-zero values the decimal exponent E (value = 0.d1d2... × 10^E)
// as a biased big-endian uint32 and the significant digits as ASCII,
// terminated by 0x00. Negative values invert exponent, digits and terminator
// so that a larger magnitude sorts first.
func appendDecimalKey(dst []byte, d decimal.Decimal) []byte {
	sign := d.Sign()
	if sign == 0 {
		return append(dst, 0x02)
	}
	coef := new(big.Int).Abs(d.Coefficient())
	digits := []byte(coef.String())
	exp := int64(d.Exponent())
	// strip trailing zeros of the coefficient
	for len(digits) > 1 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
		exp++
	}
	// value = digits × 10^exp = 0.digits × 10^(exp+len(digits))
	e := uint32(exp+int64(len(digits))) + (1 << 31)
	if sign > 0 {
		dst = append(dst, 0x03)
		dst = binary.BigEndian.AppendUint32(dst, e)
		dst = append(dst, digits...)
		return append(dst, 0x00)
	}
	dst = append(dst, 0x01)
	dst = binary.BigEndian.AppendUint32(dst, ^e)
	for _, c := range digits {
		dst = append(dst, ^c)
	}
	return append(dst, 0xFF)
}

// appendCollatedKey encodes each rune's collation weight as 4 big-endian
// bytes (sign bit flipped), escaped and terminated like appendEscaped, so
// byte order equals go-mysql-server's rune-weight comparison.
func appendCollatedKey(dst []byte, s string, coll sql.CollationID, prefix int) ([]byte, error) {
	weight := coll.Sorter()
	if weight == nil {
		return appendEscaped(dst, []byte(s)), nil
	}
	enc := coll.CharacterSet().Encoder()
	n := 0
	var w [4]byte
	for len(s) > 0 {
		if prefix > 0 && n >= prefix {
			break
		}
		r, size := enc.NextRune(s)
		if size == 0 || r == utf8.RuneError && size == 1 {
			return nil, fmt.Errorf("%w: malformed string", ErrKeyValue)
		}
		binary.BigEndian.PutUint32(w[:], uint32(weight(r))^(1<<31))
		dst = appendEscapedBytes(dst, w[:])
		s = s[size:]
		n++
	}
	return append(dst, 0x00, 0x01), nil
}

// appendEscaped writes b with 0x00 escaped as 0x00 0xFF, followed by the
// terminator 0x00 0x01, so that a prefix sorts before its extensions.
func appendEscaped(dst, b []byte) []byte {
	dst = appendEscapedBytes(dst, b)
	return append(dst, 0x00, 0x01)
}

func appendEscapedBytes(dst, b []byte) []byte {
	for _, c := range b {
		if c == 0x00 {
			dst = append(dst, 0x00, 0xFF)
		} else {
			dst = append(dst, c)
		}
	}
	return dst
}

// PrefixEnd returns the smallest key greater than every key that starts
// with prefix, or nil if there is none (prefix is all 0xFF).
func PrefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}
