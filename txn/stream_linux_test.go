package txn

import (
	"context"
	"runtime"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"golang.org/x/sys/unix"

	"github.com/certusdb/certus/internal/lowprio"
)

// With Config.StreamNice, a statement that sends a fragment runs from then
// on at that nice value; the end of the statement (and of the transaction)
// gives its goroutine the priority back. The next statement of the
// streaming transaction is lowered again at its first fragment.
func TestStreamingStatementRunsAtLowerPriority(t *testing.T) {
	if unix.Geteuid() != 0 {
		t.Skip("restoring a thread's priority needs root")
	}
	runtime.LockOSThread() // so that the thread read below is the goroutine's
	defer runtime.UnlockOSThread()
	ctx := context.Background()
	m, _, ti := newTestManager(t)
	m.cfg.StreamNice = 7
	base := lowprio.ThreadNice()
	tx := m.Begin(Options{FragmentUnit: FragmentRows, FragmentSize: 2})
	id := int64(100)
	statement := func(rows int) {
		t.Helper()
		tx.StatementBegin()
		for i := 0; i < rows; i++ {
			if err := tx.Insert(ctx, ti, sql.Row{id, int32(0)}); err != nil {
				t.Fatal(err)
			}
			id++
		}
	}
	statement(1) // no fragment yet
	if n := lowprio.ThreadNice(); n != base {
		t.Fatalf("nice %d before any fragment, want %d", n, base)
	}
	statement(4)
	if n := lowprio.ThreadNice(); n != 7 {
		t.Fatalf("nice %d after a fragment, want 7", n)
	}
	tx.StatementComplete()
	if n := lowprio.ThreadNice(); n != base {
		t.Fatalf("nice %d after the statement, want %d", n, base)
	}
	statement(3)
	if n := lowprio.ThreadNice(); n != 7 {
		t.Fatalf("nice %d after the next statement's fragment, want 7", n)
	}
	commit(t, tx)
	if n := lowprio.ThreadNice(); n != base {
		t.Fatalf("nice %d after the commit, want %d", n, base)
	}
}
