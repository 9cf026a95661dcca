package sqlengine

import (
	"context"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"

	"github.com/certusdb/certus/internal/sqllex"
)

// FLUSH, as MySQL 8.0 takes it:
//
//	FLUSH [NO_WRITE_TO_BINLOG | LOCAL] flush_option [, flush_option] ...
//	FLUSH [NO_WRITE_TO_BINLOG | LOCAL] TABLES [tbl, ...] [WITH READ LOCK | FOR EXPORT]
//
// go-mysql-server parses one option, no list, and refuses LOCAL and
// NO_WRITE_TO_BINLOG ("LOCAL not supported"), which mysqldump sends
// (`FLUSH /*!40101 LOCAL */ TABLES` for --master-data, --lock-all-tables
// and --flush-logs with --single-transaction). Certus writes no binary log
// and replicates no FLUSH, so the modifier changes nothing: flushModifier
// blanks it, and the handler answers option lists and the options that
// have nothing to do here itself (flushOptions, Handler.flush).

// flushModifier returns q with the LOCAL or NO_WRITE_TO_BINLOG of a FLUSH
// statement blanked out (also inside an executable comment).
func flushModifier(q string) string {
	if !mayStartWith(q, "flush") {
		return q
	}
	lx := sqllex.NewScanner(q)
	if lx.Word() != "FLUSH" {
		return q
	}
	if w := lx.Word(); w == "LOCAL" || w == "NO_WRITE_TO_BINLOG" {
		return q[:lx.Pos()-len(w)] + strings.Repeat(" ", len(w)) + q[lx.Pos():]
	}
	return q
}

// flushOptions returns the options of FLUSH [LOCAL | NO_WRITE_TO_BINLOG]
// flush_option [, flush_option] ... (PRIVILEGES, STATUS, HOSTS,
// USER_RESOURCES, OPTIMIZER_COSTS, LOGS, or BINARY, ENGINE, ERROR, GENERAL,
// RELAY, SLOW followed by LOGS), or nil when q is not such a statement (FLUSH
// TABLES, a syntax error: go-mysql-server answers it) or is a lone FLUSH
// PRIVILEGES, which go-mysql-server runs.
func flushOptions(q string) []string {
	lx := sqllex.NewScanner(q)
	if lx.Word() != "FLUSH" {
		return nil
	}
	var opts []string
	w := flushToken(&lx)
	if w == "LOCAL" || w == "NO_WRITE_TO_BINLOG" {
		w = flushToken(&lx)
	}
	for {
		switch w {
		case "PRIVILEGES", "STATUS", "LOGS", "HOSTS", "USER_RESOURCES", "OPTIMIZER_COSTS":
			opts = append(opts, w)
		case "BINARY", "ENGINE", "ERROR", "GENERAL", "SLOW", "RELAY":
			if flushToken(&lx) != "LOGS" {
				return nil
			}
			opts = append(opts, w+" LOGS")
		default:
			return nil
		}
		w = flushToken(&lx)
		if opts[len(opts)-1] == "RELAY LOGS" && w == "FOR" {
			if flushToken(&lx) != "CHANNEL" || flushToken(&lx) == "" {
				return nil
			}
			w = flushToken(&lx)
		}
		switch w {
		case "", ";":
			if len(opts) == 1 && opts[0] == "PRIVILEGES" {
				return nil
			}
			return opts
		case ",":
			w = flushToken(&lx)
		default:
			return nil
		}
	}
}

// flushToken is the next word of a FLUSH statement, upper-cased, or its
// next comma or semicolon; "" at the end.
func flushToken(lx *sqllex.Scanner) string {
	for {
		switch t := lx.Next(); {
		case t.Kind == sqllex.Word:
			return t.Upper()
		case t.IsPunct(",") || t.IsPunct(";"):
			return t.Text
		case t.Kind == sqllex.EOF:
			return ""
		}
	}
}

// flush answers a FLUSH of opts (flushOptions). As in MySQL, it needs the
// RELOAD privilege. Certus writes no binary, relay, general or slow log
// and its own log goes to standard error, so LOGS has nothing to close and
// reopen; it keeps no host cache, per-hour user counters or optimizer cost
// tables either. STATUS starts the status averages anew (StatusFlusher);
// PRIVILEGES is go-mysql-server's, run on c.
func (h *Handler) flush(ctx context.Context, c *mysql.Conn, opts []string, out func(*sqltypes.Result) error) error {
	if !h.holds(ctx, h.session(c), sql.PrivilegeType_Reload) {
		return ErrReloadDenied
	}
	for _, o := range opts {
		switch o {
		case "STATUS":
			if f, ok := h.cluster.(StatusFlusher); ok {
				f.FlushStatus()
			}
		case "PRIVILEGES":
			if err := h.inner.ComQuery(ctx, c, "FLUSH PRIVILEGES", func(*sqltypes.Result, bool) error { return nil }); err != nil {
				return err
			}
		}
	}
	return out(&sqltypes.Result{})
}
