package sqlengine

import (
	"math"
	"strings"
)

// Go values of SQL values, as go-mysql-server hands them over.

// asInt is v as an int64 when it is an integer that fits one.
func asInt(v interface{}) (int64, bool) {
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

// truthy interprets a boolean system variable's value.
func truthy(v interface{}) bool {
	switch x := v.(type) {
	case bool:
		return x
	case string:
		return x == "1" || strings.EqualFold(x, "ON") || strings.EqualFold(x, "true")
	}
	n, ok := asInt(v)
	if !ok {
		if u, isU := v.(uint64); isU {
			return u != 0
		}
	}
	return n != 0
}
