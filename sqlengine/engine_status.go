package sqlengine

import (
	"context"
	"fmt"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
)

// engineStatus answers SHOW ENGINE INNODB STATUS, which go-mysql-server
// does not parse and monitoring tools (pt-mysql-summary, exporters) run.
// Certus has no InnoDB: the Status text is that of its storage, pebble's
// LSM metrics (levels, compactions, memtables, cache), under a header that
// says so. As in MySQL, it needs the PROCESS privilege.
func (h *Handler) engineStatus(ctx context.Context, s *Session, out func(*sqltypes.Result) error) error {
	if s == nil {
		return out(&sqltypes.Result{})
	}
	if !h.holds(ctx, s, sql.PrivilegeType_Process) {
		return ErrProcessDenied
	}
	text := fmt.Sprintf("\n=====================================\n%s CERTUS STORAGE (pebble) STATUS\n"+
		"=====================================\nThere is no InnoDB here: rows and indexes are stored in pebble.\n"+
		"Replication: SHOW STATUS LIKE 'wsrep%%'.\n\n%s", time.Now().Format("2006-01-02 15:04:05"), s.p.mgr.Engine().DB().Metrics().String())
	return out(&sqltypes.Result{
		Fields: []*querypb.Field{textField("Type", 1<<20), textField("Name", 1<<20), textField("Status", 1<<20)},
		Rows:   [][]sqltypes.Value{{sqltypes.NewVarChar("InnoDB"), sqltypes.NewVarChar(""), sqltypes.NewVarChar(text)}},
	})
}
