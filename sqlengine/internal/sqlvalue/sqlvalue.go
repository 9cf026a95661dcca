// Package sqlvalue reads the Go values go-mysql-server hands over for SQL
// values (system variables, arguments, column values).
package sqlvalue

import (
	"math"
	"strings"
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
