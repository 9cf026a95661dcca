// Package sqlvalue reads the Go values go-mysql-server hands over for SQL
// values (system variables, arguments, column values) and their types.
package sqlvalue

import (
	"math"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// AsInt is v as an int64 when it is an integer that fits one.
func AsInt(v interface{}) (int64, bool) {
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
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint64:
		return int64(x), x <= math.MaxInt64
	}
	return 0, false
}

// Truthy interprets a boolean system variable's value.
func Truthy(v interface{}) bool {
	switch x := v.(type) {
	case bool:
		return x
	case string:
		return x == "1" || strings.EqualFold(x, "ON") || strings.EqualFold(x, "true")
	}
	n, ok := AsInt(v)
	if !ok {
		if u, isU := v.(uint64); isU {
			return u != 0
		}
	}
	return n != 0
}

// IsIntegerType reports whether t is an integer type MySQL computes with
// as one (not YEAR or BIT).
func IsIntegerType(t sql.Type) bool {
	return types.IsInteger(t) && !types.IsYear(t) && !types.IsBit(t)
}

// MaxPacket is the session's max_allowed_packet (1 GiB, the variable's
// bound, if it cannot be read).
func MaxPacket(s sql.Session) uint64 {
	if s == nil {
		return 1 << 30
	}
	v, err := s.GetSessionVariable(nil, "max_allowed_packet")
	if err != nil {
		return 1 << 30
	}
	if n, ok := AsInt(v); ok && n > 0 {
		return uint64(n)
	}
	if u, ok := v.(uint64); ok && u > 0 {
		return u
	}
	return 1 << 30
}
