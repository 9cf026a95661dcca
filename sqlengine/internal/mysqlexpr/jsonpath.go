package mysqlexpr

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression/function"
	gmsjson "github.com/dolthub/go-mysql-server/sql/expression/function/json"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
)

// JSON_EXTRACT, `->` and `->>` follow MySQL's path language. go-mysql-server
// evaluates paths with a generic JSONPath library: `$[0]` of an object, or
// `$.a[0]` of a string, failed the statement with 1105 "object is not
// Slice" where MySQL treats a non-array as an array of one (`$[0]` is the
// value itself), `$.a` of an array gave `[]` instead of NULL, and `last`,
// `m to n` and `**` did not parse. Applications reading documents of mixed
// shapes hit these. jsonExtract evaluates the paths MySQL's way:
//
//   - .key and ."quoted key" select an object's member, .* all of them;
//   - [n], [last], [last-n] an array's element, [m to n] a range, [*] all;
//     a non-array value is an array of one for [n] and ranges;
//   - ** before a leg applies it at every depth;
//   - one path without a wildcard or range gives its match or NULL; several
//     paths or a wildcard give an array of all matches, NULL for none.
//
// A malformed path is 3143 (42000), as in MySQL.

// jsonLegKind is what one step of a path selects.
type jsonLegKind int

const (
	legMember    jsonLegKind = iota // .key
	legAllMember                    // .*
	legIndex                        // [n], [last-n]
	legRange                        // [m to n]
	legAllIndex                     // [*]
	legAnyDepth                     // **
)

// jsonArrayIndex is n or last-n.
type jsonArrayIndex struct {
	n        int
	fromLast bool
}

// resolve gives the index in an array of length size.
func (x jsonArrayIndex) resolve(size int) int {
	if x.fromLast {
		return size - 1 - x.n
	}
	return x.n
}

// jsonLeg is one step of a path.
type jsonLeg struct {
	kind     jsonLegKind
	key      string
	from, to jsonArrayIndex
}

// jsonPath is a parsed path.
type jsonPath struct {
	legs []jsonLeg
	// wild is set when the path may select several values
	wild bool
}

// errJSONPath is MySQL's ER_INVALID_JSON_PATH at the 1-based position of
// path where parsing failed.
func errJSONPath(pos int) error {
	return mysql.NewSQLError(3143, "42000", "Invalid JSON path expression. The error is around character position %d.", pos)
}

// parseJSONPath parses a MySQL JSON path.
func parseJSONPath(path string) (jsonPath, error) {
	var p jsonPath
	i := 0
	skip := func() {
		for i < len(path) && (path[i] == ' ' || path[i] == '\t' || path[i] == '\n' || path[i] == '\r') {
			i++
		}
	}
	skip()
	if i >= len(path) || path[i] != '$' {
		return p, errJSONPath(i + 1)
	}
	i++
	for {
		skip()
		if i >= len(path) {
			break
		}
		switch {
		case path[i] == '.':
			i++
			skip()
			if i >= len(path) {
				return p, errJSONPath(i)
			}
			switch {
			case path[i] == '*':
				i++
				p.legs = append(p.legs, jsonLeg{kind: legAllMember})
				p.wild = true
			case path[i] == '"':
				end := i + 1
				for end < len(path) && path[end] != '"' {
					if path[end] == '\\' {
						end++
					}
					end++
				}
				if end >= len(path) {
					return p, errJSONPath(i + 1)
				}
				var key string
				if err := json.Unmarshal([]byte(path[i:end+1]), &key); err != nil {
					return p, errJSONPath(i + 1)
				}
				p.legs = append(p.legs, jsonLeg{kind: legMember, key: key})
				i = end + 1
			default:
				start := i
				for i < len(path) && isJSONKeyChar(path[i]) {
					i++
				}
				if i == start || path[start] >= '0' && path[start] <= '9' {
					return p, errJSONPath(start + 1)
				}
				p.legs = append(p.legs, jsonLeg{kind: legMember, key: path[start:i]})
			}
		case path[i] == '[':
			i++
			skip()
			if i < len(path) && path[i] == '*' {
				i++
				skip()
				if i >= len(path) || path[i] != ']' {
					return p, errJSONPath(i + 1)
				}
				i++
				p.legs = append(p.legs, jsonLeg{kind: legAllIndex})
				p.wild = true
				continue
			}
			from, n, ok := parseJSONArrayIndex(path[i:])
			if !ok {
				return p, errJSONPath(i + 1)
			}
			i += n
			skip()
			leg := jsonLeg{kind: legIndex, from: from}
			if strings.HasPrefix(path[i:], "to") && i+2 < len(path) && (path[i+2] == ' ' || path[i+2] == '\t') {
				i += 2
				skip()
				to, n, ok := parseJSONArrayIndex(path[i:])
				if !ok {
					return p, errJSONPath(i + 1)
				}
				i += n
				skip()
				leg.kind, leg.to = legRange, to
				p.wild = true
			}
			if i >= len(path) || path[i] != ']' {
				return p, errJSONPath(i + 1)
			}
			i++
			p.legs = append(p.legs, leg)
		case strings.HasPrefix(path[i:], "**"):
			i += 2
			p.legs = append(p.legs, jsonLeg{kind: legAnyDepth})
			p.wild = true
		default:
			return p, errJSONPath(i + 1)
		}
	}
	if n := len(p.legs); n > 0 && p.legs[n-1].kind == legAnyDepth {
		return p, errJSONPath(len(path)) // ** must be followed by a leg
	}
	return p, nil
}

// isJSONKeyChar reports whether c may appear in an unquoted member name.
func isJSONKeyChar(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// parseJSONArrayIndex parses n, last or last - n at the start of s and
// returns how many bytes it took.
func parseJSONArrayIndex(s string) (jsonArrayIndex, int, bool) {
	digits := func(at int) (int, int, bool) {
		end := at
		for end < len(s) && s[end] >= '0' && s[end] <= '9' {
			end++
		}
		if end == at {
			return 0, 0, false
		}
		v, err := strconv.Atoi(s[at:end])
		return v, end, err == nil
	}
	if !strings.HasPrefix(s, "last") {
		v, end, ok := digits(0)
		return jsonArrayIndex{n: v}, end, ok
	}
	i := 4
	j := i
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
		j++
	}
	if j >= len(s) || s[j] != '-' {
		return jsonArrayIndex{fromLast: true}, i, true
	}
	j++
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
		j++
	}
	v, end, ok := digits(j)
	return jsonArrayIndex{n: v, fromLast: true}, end, ok
}

// seek appends to out the values of v that legs select, in document order.
func (p jsonPath) seek(v any, legs []jsonLeg, out []any) []any {
	if len(legs) == 0 {
		return append(out, v)
	}
	leg, rest := legs[0], legs[1:]
	switch leg.kind {
	case legMember:
		if obj, ok := v.(types.JsonObject); ok {
			if m, ok := obj[leg.key]; ok {
				out = p.seek(m, rest, out)
			}
		}
	case legAllMember:
		if obj, ok := v.(types.JsonObject); ok {
			for _, k := range jsonKeyOrder(obj) {
				out = p.seek(obj[k], rest, out)
			}
		}
	case legAllIndex:
		if arr, ok := v.(types.JsonArray); ok {
			for _, e := range arr {
				out = p.seek(e, rest, out)
			}
		}
	case legIndex, legRange:
		arr, ok := v.(types.JsonArray)
		if !ok {
			arr = types.JsonArray{v} // a value that is not an array is one of one
		}
		from := leg.from.resolve(len(arr))
		to := from
		if leg.kind == legRange {
			to = leg.to.resolve(len(arr))
			from = max(from, 0)
			to = min(to, len(arr)-1)
		}
		for i := from; i <= to; i++ {
			if i >= 0 && i < len(arr) {
				out = p.seek(arr[i], rest, out)
			}
		}
	case legAnyDepth:
		// the rest of the path from this value and from every value below
		out = p.seek(v, rest, out)
		switch c := v.(type) {
		case types.JsonObject:
			for _, k := range jsonKeyOrder(c) {
				out = p.seek(c[k], legs, out)
			}
		case types.JsonArray:
			for _, e := range c {
				out = p.seek(e, legs, out)
			}
		}
	}
	return out
}

// jsonKeyOrder is the order MySQL (and go-mysql-server's output) keeps an
// object's members in: shorter names first, then by bytes.
func jsonKeyOrder(obj types.JsonObject) []string {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if len(keys[i]) != len(keys[j]) {
			return len(keys[i]) < len(keys[j])
		}
		return keys[i] < keys[j]
	})
	return keys
}

// jsonExtract is JSON_EXTRACT(doc, path[, path]...) with MySQL's paths.
type jsonExtract struct {
	*gmsjson.JSONExtract
}

var _ sql.FunctionExpression = (*jsonExtract)(nil)

// WithChildren implements sql.Expression.
func (j *jsonExtract) WithChildren(ctx *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	inner, err := j.JSONExtract.WithChildren(ctx, children...)
	if err != nil {
		return nil, err
	}
	return &jsonExtract{inner.(*gmsjson.JSONExtract)}, nil
}

// Eval implements sql.Expression.
func (j *jsonExtract) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	raw, err := j.JSON.Eval(ctx, row)
	if err != nil || raw == nil {
		return nil, err
	}
	var doc sql.JSONWrapper
	switch d := raw.(type) {
	case sql.JSONWrapper:
		doc = d
	case string, []byte:
		c, _, err := types.JSON.Convert(ctx, d)
		if err != nil {
			return nil, sql.ErrInvalidJSONText.New(1, "json_extract", fmt.Sprint(raw))
		}
		if c == nil {
			return nil, nil
		}
		doc = c.(sql.JSONWrapper)
	default:
		return nil, sql.ErrInvalidJSONArgument.New(1, "json_extract")
	}
	v, err := doc.ToInterface(ctx)
	if err != nil {
		return nil, err
	}
	var matches []any
	wild := len(j.Paths) > 1
	for _, pe := range j.Paths {
		pv, err := pe.Eval(ctx, row)
		if err != nil {
			return nil, err
		}
		if pv == nil {
			return nil, nil
		}
		ps, _, err := types.LongText.Convert(ctx, pv)
		if err != nil {
			return nil, err
		}
		p, err := parseJSONPath(ps.(string))
		if err != nil {
			return nil, err
		}
		wild = wild || p.wild
		matches = p.seek(v, p.legs, matches)
	}
	switch {
	case len(matches) == 0:
		return nil, nil
	case !wild:
		return types.JSONDocument{Val: matches[0]}, nil
	}
	return types.JSONDocument{Val: types.JsonArray(matches)}, nil
}

// mysqlJSONPaths replaces go-mysql-server's JSON_EXTRACT in e (the planner
// builds `->` and `->>` with it directly) by jsonExtract.
func mysqlJSONPaths(ctx *sql.Context, e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
	return transform.Expr(ctx, e, func(ctx *sql.Context, e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
		if x, ok := e.(*gmsjson.JSONExtract); ok {
			return &jsonExtract{x}, transform.NewTree, nil
		}
		return e, transform.SameTree, nil
	})
}

// wrapJSONExtract makes JSON_EXTRACT read MySQL's paths.
func wrapJSONExtract() {
	WrapBuiltIns(function.BuiltIns, map[string]BuiltInWrap{
		"json_extract": func(ctx *sql.Context, inner sql.Function, args []sql.Expression) (sql.Expression, error) {
			e, err := inner.NewInstance(ctx, args)
			if err != nil {
				return nil, err
			}
			if x, ok := e.(*gmsjson.JSONExtract); ok {
				return &jsonExtract{x}, nil
			}
			return e, nil
		},
	})
}
