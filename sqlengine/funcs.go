package sqlengine

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"

	"github.com/certusdb/certus/sqlengine/internal/sqlvalue"
	"github.com/certusdb/certus/storage"
)

// GTID formats a seqno of the cluster as Galera does: uuid:seqno.
func GTID(uuid string, seqno uint64) string { return fmt.Sprintf("%s:%d", uuid, seqno) }

// ParseGTID returns the seqno of a GTID "uuid:seqno" (or "uuid:1-seqno").
func ParseGTID(s string) (uuid string, seqno uint64, err error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return "", 0, fmt.Errorf("malformed GTID %q", s)
	}
	num := s[i+1:]
	if j := strings.IndexByte(num, '-'); j >= 0 {
		num = num[j+1:]
	}
	seqno, err = strconv.ParseUint(num, 10, 64)
	if err != nil {
		return "", 0, fmt.Errorf("malformed GTID %q", s)
	}
	return s[:i], seqno, nil
}

// nullaryFunc is a function without arguments evaluated by eval.
type nullaryFunc struct {
	name string
	typ  sql.Type
	eval func(ctx *sql.Context) (interface{}, error)
}

var _ sql.FunctionExpression = (*nullaryFunc)(nil)

func (f *nullaryFunc) Resolved() bool               { return true }
func (f *nullaryFunc) String() string               { return f.name + "()" }
func (f *nullaryFunc) Type(*sql.Context) sql.Type   { return f.typ }
func (f *nullaryFunc) IsNullable(*sql.Context) bool { return false }
func (f *nullaryFunc) Children() []sql.Expression   { return nil }
func (f *nullaryFunc) FunctionName() string         { return strings.ToLower(f.name) }
func (f *nullaryFunc) Description() string          { return "Certus function " + f.name }
func (f *nullaryFunc) IsNonDeterministic() bool     { return true }
func (f *nullaryFunc) WithChildren(_ *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	if len(children) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(f, len(children), 0)
	}
	return f, nil
}
func (f *nullaryFunc) Eval(ctx *sql.Context, _ sql.Row) (interface{}, error) { return f.eval(ctx) }

func nullary(name string, typ sql.Type, eval func(ctx *sql.Context) (interface{}, error)) sql.Function {
	return sql.Function0{Name: strings.ToLower(name), Fn: func(*sql.Context) sql.Expression {
		return &nullaryFunc{name: name, typ: typ, eval: eval}
	}}
}

// syncUptoFunc is WSREP_SYNC_WAIT_UPTO_GTID(gtid [, timeout]).
type syncUptoFunc struct {
	cluster Cluster
	args    []sql.Expression
}

var _ sql.FunctionExpression = (*syncUptoFunc)(nil)

func (f *syncUptoFunc) Resolved() bool {
	for _, a := range f.args {
		if !a.Resolved() {
			return false
		}
	}
	return true
}
func (f *syncUptoFunc) String() string               { return "WSREP_SYNC_WAIT_UPTO_GTID()" }
func (f *syncUptoFunc) Type(*sql.Context) sql.Type   { return types.Int64 }
func (f *syncUptoFunc) IsNullable(*sql.Context) bool { return false }
func (f *syncUptoFunc) Children() []sql.Expression   { return f.args }
func (f *syncUptoFunc) FunctionName() string         { return "wsrep_sync_wait_upto_gtid" }
func (f *syncUptoFunc) Description() string {
	return "waits until this node has applied the given GTID"
}
func (f *syncUptoFunc) IsNonDeterministic() bool { return true }
func (f *syncUptoFunc) WithChildren(_ *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	return &syncUptoFunc{cluster: f.cluster, args: children}, nil
}

func (f *syncUptoFunc) Eval(ctx *sql.Context, row sql.Row) (interface{}, error) {
	v, err := f.args[0].Eval(ctx, row)
	if err != nil {
		return nil, err
	}
	_, seqno, err := ParseGTID(fmt.Sprint(v))
	if err != nil {
		return nil, sql.ErrInvalidArgument.New("wsrep_sync_wait_upto_gtid")
	}
	timeout := ""
	if len(f.args) > 1 {
		tv, err := f.args[1].Eval(ctx, row)
		if err != nil {
			return nil, err
		}
		timeout = fmt.Sprint(tv)
	}
	s, _ := ctx.Session.(*Session)
	if err := waitUpto(ctx, f.cluster, s, seqno, timeout); err != nil {
		return nil, err
	}
	return int64(1), nil
}

// waitUpto waits until the node has applied seqno, for timeout seconds
// (a number as text; empty: the session's innodb_lock_wait_timeout, or
// 50 s), as WSREP_SYNC_WAIT_UPTO_GTID does; Galera's answer when it did
// not is a lock wait timeout.
func waitUpto(ctx context.Context, c Cluster, s *Session, seqno uint64, timeout string) error {
	d := 50 * time.Second
	if s != nil {
		if lw, err := s.GetSessionVariable(nil, "innodb_lock_wait_timeout"); err == nil {
			if n, ok := sqlvalue.AsInt(lw); ok {
				d = time.Duration(n) * time.Second
			}
		}
	}
	if n, err := strconv.ParseFloat(timeout, 64); err == nil && n >= 0 {
		d = time.Duration(n * float64(time.Second))
	}
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if err := c.WaitApplied(wctx, seqno); err != nil {
		return ErrSyncWaitTimeout
	}
	return nil
}

// syncUptoRE is the statement certus proxy (and scripts) send to wait for
// a GTID: SELECT WSREP_SYNC_WAIT_UPTO_GTID('uuid:seqno' [, timeout]).
var syncUptoRE = regexp.MustCompile(`(?i)^\s*SELECT\s+(WSREP_SYNC_WAIT_UPTO_GTID\s*\(\s*'([^'\\]*)'\s*(?:,\s*([0-9]+(?:\.[0-9]*)?)\s*)?\))\s*;?\s*$`)

// syncUpto answers that statement without go-mysql-server's planner, whose
// analysis of a SELECT without tables costs several times the wait
// itself, with the function's answer. handled is false for any other
// text, a GTID the function refuses (its error comes from there) or a
// session with certus_fast_path off.
func (h *Handler) syncUpto(ctx context.Context, s *Session, query string, out func(*sqltypes.Result) error) (handled bool, err error) {
	if h.cluster == nil || s == nil || len(query) > 200 {
		return false, nil
	}
	m := syncUptoRE.FindStringSubmatch(query)
	if m == nil {
		return false, nil
	}
	if v, err := s.GetSessionVariable(nil, "certus_fast_path"); err == nil && !sqlvalue.Truthy(v) {
		return false, nil
	}
	_, seqno, err := ParseGTID(m[2])
	if err != nil {
		return false, nil
	}
	if err := waitUpto(ctx, h.cluster, s, seqno, m[3]); err != nil {
		return true, err
	}
	return true, out(&sqltypes.Result{
		Fields: []*querypb.Field{{Name: m[1], Type: querypb.Type_INT64, Charset: mysql.CharacterSetBinary, ColumnLength: 20,
			Flags: uint32(querypb.MySqlFlag_NOT_NULL_FLAG | querypb.MySqlFlag_BINARY_FLAG | querypb.MySqlFlag_NUM_FLAG)}},
		Rows: [][]sqltypes.Value{{sqltypes.NewInt64(1)}},
	})
}

// functions returns the wsrep and Certus SQL functions of a node.
//
//	WSREP_LAST_WRITTEN_GTID()  GTID of the session's last write
//	WSREP_LAST_SEEN_GTID()     GTID of the last write-set applied here
//	WSREP_SYNC_WAIT_UPTO_GTID(gtid [, timeout])
//	CERTUS_STATE_DIGEST()      "seqno:digest" of all replicated state (1047
//	                           while the node is not ready, e.g. mid transfer)
//	CERTUS_VERIFY_DIGEST()     "seqno:digest:ok" after recomputing the digest
//	                           from a snapshot (":MISMATCH" if it differs)
func functions(c Cluster, eng *storage.Engine) []sql.Function {
	return []sql.Function{
		nullary("WSREP_LAST_WRITTEN_GTID", types.LongText, func(ctx *sql.Context) (interface{}, error) {
			seqno := uint64(0)
			if s, ok := ctx.Session.(*Session); ok {
				seqno = s.lastSeqno
			}
			return GTID(c.ClusterUUID(), seqno), nil
		}),
		nullary("WSREP_LAST_SEEN_GTID", types.LongText, func(*sql.Context) (interface{}, error) {
			return GTID(c.ClusterUUID(), c.Applied()), nil
		}),
		sql.FunctionN{Name: "wsrep_sync_wait_upto_gtid", Fn: func(_ *sql.Context, args ...sql.Expression) (sql.Expression, error) {
			if len(args) < 1 || len(args) > 2 {
				return nil, sql.ErrInvalidArgumentNumber.New("WSREP_SYNC_WAIT_UPTO_GTID", "1 or 2", len(args))
			}
			return &syncUptoFunc{cluster: c, args: args}, nil
		}},
		nullary("CERTUS_STATE_DIGEST", types.LongText, func(*sql.Context) (interface{}, error) {
			if !c.Primary() {
				return nil, ErrNotPrimary // mid state transfer the data and its digest disagree
			}
			seqno, d := eng.StateDigest()
			return fmt.Sprintf("%d:%s", seqno, d), nil
		}),
		nullary("CERTUS_VERIFY_DIGEST", types.LongText, func(*sql.Context) (interface{}, error) {
			if !c.Primary() {
				return nil, ErrNotPrimary
			}
			v := eng.View()
			defer v.Close()
			d, err := eng.RecomputeDigest(v)
			if err != nil {
				return nil, err
			}
			verdict := "ok"
			if d != v.Digest {
				verdict = "MISMATCH(recomputed " + d.String() + ")"
			}
			return fmt.Sprintf("%d:%s:%s", v.Seqno, v.Digest, verdict), nil
		}),
	}
}
