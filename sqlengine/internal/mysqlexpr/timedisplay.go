package mysqlexpr

import (
	"bytes"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
)

// go-mysql-server has one TIME type, TIME(6), and printed every TIME value
// with six fractional digits: a TIME column, TIMEDIFF, SEC_TO_TIME and
// MAKETIME all answered `01:30:00.000000` where MySQL answers `01:30:00`
// (a TIME column declared without precision is TIME(0), and the functions
// carry their arguments' precision). A TIME value whose fraction is zero is
// sent without it; one with a fraction keeps its six digits.

// zeroFraction is the fraction a whole-second TIME value is printed with.
var zeroFraction = []byte(".000000")

// TrimTimeFractions drops a zero fraction from the TIME values of r.
func TrimTimeFractions(r *sqltypes.Result) {
	if r == nil || len(r.Rows) == 0 {
		return
	}
	for i, f := range r.Fields {
		if f.Type != sqltypes.Time {
			continue
		}
		for _, row := range r.Rows {
			if i >= len(row) {
				continue
			}
			if raw := row[i].Raw(); bytes.HasSuffix(raw, zeroFraction) {
				row[i] = sqltypes.MakeTrusted(sqltypes.Time, raw[:len(raw)-len(zeroFraction)])
			}
		}
	}
}

// TimeSpool is callback with TrimTimeFractions applied to each result.
func TimeSpool(callback mysql.ResultSpoolFn) mysql.ResultSpoolFn {
	return func(r *sqltypes.Result, more bool) error {
		TrimTimeFractions(r)
		return callback(r, more)
	}
}
