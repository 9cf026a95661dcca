package sqlengine

import (
	"strings"
	"unicode/utf8"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
	"github.com/shopspring/decimal"

	"github.com/certusdb/certus/sqlengine/internal/sqlvalue"
)

// A value that does not fit its column is MySQL's error in strict mode,
// naming the column and row: 1406 "Data too long for column 's' at row 1"
// (a string past CHAR/VARCHAR's length or TEXT/BLOB's bytes; go-mysql-server's
// own error quoted the whole value, megabytes of it for a big one), 1264 "Out of range value for
// column 'n' at row 1" (an integer or DECIMAL past its bounds), 1265
// "Data truncated for column 'e' at row 1" (no such ENUM value). Outside
// strict mode, or with IGNORE, MySQL stores what fits (the string cut to
// the length, the bound, the ENUM's '' value) with the same code as a
// warning. go-mysql-server failed every one of them, in any sql_mode, with
// its own texts ("string 'x' is too large for column 's'", "300 out of
// range for tinyint") and, for DECIMAL and ENUM, code 1105: applications
// run with sql_mode='' could not insert at all.

// fitChecked reports whether fitValue checks values for columns of type t.
func fitChecked(t sql.Type) bool {
	if _, ok := intRanges[t.Type()]; ok {
		return true
	}
	switch {
	case types.IsDecimal(t), types.IsEnum(t):
		return true
	case types.IsTextBlob(t):
		st, ok := t.(sql.StringType)
		return ok && st.MaxByteLength() > 0
	case types.IsText(t):
		st, ok := t.(sql.StringType)
		return ok && st.MaxCharacterLength() > 0
	}
	return false
}

// intRange is the range of an integer column type: lo and hi as int64
// (hi is MaxInt64 for BIGINT UNSIGNED, whose bound is dhi), and as
// DECIMALs.
type intRange struct {
	lo, hi   int64
	dlo, dhi decimal.Decimal
}

// intRanges are the ranges of the integer types.
var intRanges = func() map[querypb.Type]intRange {
	m := map[querypb.Type]intRange{
		sqltypes.Uint64: {lo: 0, hi: 1<<63 - 1, dlo: decimal.Zero, dhi: decimal.RequireFromString("18446744073709551615")},
	}
	for t, b := range map[querypb.Type][2]int64{
		sqltypes.Int8: {-1 << 7, 1<<7 - 1}, sqltypes.Uint8: {0, 1<<8 - 1},
		sqltypes.Int16: {-1 << 15, 1<<15 - 1}, sqltypes.Uint16: {0, 1<<16 - 1},
		sqltypes.Int24: {-1 << 23, 1<<23 - 1}, sqltypes.Uint24: {0, 1<<24 - 1},
		sqltypes.Int32: {-1 << 31, 1<<31 - 1}, sqltypes.Uint32: {0, 1<<32 - 1},
		sqltypes.Int64: {-1 << 63, 1<<63 - 1},
	} {
		m[t] = intRange{lo: b[0], hi: b[1], dlo: decimal.NewFromInt(b[0]), dhi: decimal.NewFromInt(b[1])}
	}
	return m
}()

// fits reports, without converting, whether v is a Go integer within r;
// false when it is not (it may still fit: see fitValue).
func (r intRange) fits(v any) bool {
	i, ok := sqlvalue.AsInt(v)
	return ok && r.lo <= i && i <= r.hi
}

// fitValue checks v, about to be stored into column col of type typ as row
// number row, against the column's length, bounds or values (see above),
// and returns what to store.
func fitValue(ctx *sql.Context, col string, typ sql.Type, v any, row int64, lenient bool) (any, error) {
	if v == nil {
		return v, nil
	}
	var se *mysql.SQLError
	fit := v
	if r, ok := intRanges[typ.Type()]; ok {
		if r.fits(v) {
			return v, nil
		}
		d, isNum := numericValue(ctx, v)
		if !isNum {
			return v, nil
		}
		d = d.Round(0) // MySQL rounds a fraction stored into an integer
		switch {
		case d.LessThan(r.dlo):
			fit = r.dlo
		case d.GreaterThan(r.dhi):
			fit = r.dhi
		default:
			return v, nil
		}
		se = mysql.NewSQLError(mysql.ERWarnDataOutOfRange, "22003", "Out of range value for column '%s' at row %d", col, row)
	} else if dt, ok := typ.(sql.DecimalType); ok && types.IsDecimal(typ) {
		d, isNum := numericValue(ctx, v)
		if !isNum {
			return v, nil
		}
		scale := int32(dt.Scale())
		max := decimal.New(1, int32(dt.Precision())-scale).Sub(decimal.New(1, -scale))
		switch d = d.Round(scale); {
		case d.GreaterThan(max):
			fit = max
		case d.LessThan(max.Neg()):
			fit = max.Neg()
		default:
			return v, nil
		}
		se = mysql.NewSQLError(mysql.ERWarnDataOutOfRange, "22003", "Out of range value for column '%s' at row %d", col, row)
	} else if et, ok := typ.(sql.EnumType); ok {
		s, isStr := v.(string)
		if !isStr || et.IndexOf(s) >= 0 || s == "" {
			return v, nil
		}
		fit = uint16(0) // the '' of an invalid value
		se = mysql.NewSQLError(mysql.ERWarnDataTruncated, "01000", "Data truncated for column '%s' at row %d", col, row)
	} else if st, ok := typ.(sql.StringType); ok && types.IsTextBlob(typ) {
		// TEXT and BLOB columns hold at most a number of bytes, whatever
		// the character set; a TEXT is cut where a character starts
		max := int(st.MaxByteLength())
		switch x := v.(type) {
		case string:
			if len(x) <= max {
				return v, nil
			}
			cut := max
			for !types.IsBinaryType(typ) && cut > 0 && !utf8.RuneStart(x[cut]) {
				cut--
			}
			fit = x[:cut]
		case []byte:
			if len(x) <= max {
				return v, nil
			}
			fit = x[:max]
		default:
			return v, nil
		}
		if !lenient {
			return nil, mysql.NewSQLError(mysql.ERDataTooLong, "22001", "Data too long for column '%s' at row %d", col, row)
		}
		se = mysql.NewSQLError(mysql.ERWarnDataTruncated, "01000", "Data truncated for column '%s' at row %d", col, row)
	} else if st, ok := typ.(sql.StringType); ok {
		s, isStr := v.(string)
		max := int(st.MaxCharacterLength())
		if types.IsBinaryType(typ) {
			max = int(st.MaxByteLength())
			if !isStr || len(s) <= max {
				return v, nil
			}
			fit = s[:max]
		} else {
			if !isStr || len(s) <= max || utf8.RuneCountInString(s) <= max {
				return v, nil
			}
			cut, n := 0, 0
			for i := range s {
				if n == max {
					cut = i
					break
				}
				n++
			}
			fit = s[:cut]
		}
		se = mysql.NewSQLError(mysql.ERWarnDataTruncated, "01000", "Data truncated for column '%s' at row %d", col, row)
		if strings.TrimRight(s[len(fit.(string)):], " ") == "" {
			// only spaces are cut: MySQL stores the rest with a note
			ctx.Session.Warn(&sql.Warning{Level: "Note", Code: se.Number(), Message: se.Message})
			return fit, nil
		}
		if !lenient {
			return nil, mysql.NewSQLError(mysql.ERDataTooLong, "22001", "Data too long for column '%s' at row %d", col, row)
		}
	} else {
		return v, nil
	}
	if !lenient {
		return nil, se
	}
	ctx.Session.Warn(&sql.Warning{Level: "Warning", Code: se.Number(), Message: se.Message})
	return fit, nil
}

// numericValue is v as a number, if it is one (or a string holding one).
func numericValue(ctx *sql.Context, v any) (decimal.Decimal, bool) {
	switch x := v.(type) {
	case bool:
		return decimal.Zero, false
	case string:
		if _, _, _, ok := numberIn(x); !ok {
			return decimal.Zero, false
		}
	case []byte:
		return decimal.Zero, false
	}
	d, _, err := types.InternalDecimalType.Convert(ctx, v)
	if err != nil {
		return decimal.Zero, false
	}
	dd, ok := d.(decimal.Decimal)
	return dd, ok
}
