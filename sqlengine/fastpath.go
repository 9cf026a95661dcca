package sqlengine

import (
	"context"
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"

	"github.com/certusdb/certus/internal/fastsql"
	"github.com/certusdb/certus/sqlengine/internal/fastpath"
	"github.com/certusdb/certus/sqlengine/internal/gmstable"
	"github.com/certusdb/certus/sqlengine/internal/sqlvalue"
	"github.com/certusdb/certus/storage"
	"github.com/certusdb/certus/txn"
)

// The fast path (package internal/fastpath) runs hot OLTP statements
// without go-mysql-server. A fastCall is one execution: it checks the
// session allows it and the user holds the statement's privileges (as
// go-mysql-server checks them, at every execution), leaves temporary
// tables to the general path, runs the statement in the session's
// transaction (or an autocommit one it commits), and sets the
// connection's status as go-mysql-server does.
type fastCall struct {
	h        *Handler
	c        *mysql.Conn
	s        *Session
	query    string
	prepared bool
	binds    map[string]*querypb.BindVariable
	out      func(*sqltypes.Result) error
	// learn is set when the general path should teach the plan its
	// column metadata.
	learn        *fastpath.Plan
	learnCharset string
	// learnConst is set when the general path's result should teach a
	// constant SELECT its answer (see constselect.go).
	learnConst *constSelect
}

// try runs the statement on the fast path. handled is false when the
// general path must run it (nothing was changed then).
func (fc *fastCall) try(ctx context.Context) (handled bool, err error) {
	f := fc.h.fast
	if f == nil || fc.s == nil {
		return false, nil
	}
	s := fc.s
	e, lits := f.Entry(s.GetCurrentDatabase(), fc.query, fc.prepared)
	if e == nil {
		return false, nil
	}
	if v, err := s.GetSessionVariable(nil, "certus_fast_path"); err == nil && !sqlvalue.Truthy(v) {
		return false, nil
	}
	sctx := sql.NewContext(ctx, sql.WithSession(s), sql.WithQuery(fc.query))
	st := e.Statement()
	if !fc.privileged(sctx, st) {
		return false, nil
	}
	_ = s.CommandBegin()
	defer s.CommandEnd()
	switch st.Kind {
	case fastsql.Begin, fastsql.Commit, fastsql.Rollback:
		return true, fc.control(sctx, st.Kind)
	}
	t, auto, err := fc.txn(sctx)
	if err != nil || t == nil {
		return false, nil
	}
	p, err := fc.plan(e, t)
	if err != nil || p == nil {
		if auto {
			t.Rollback()
		}
		return false, nil
	}
	args, ok := fastpath.Args(st, lits, fc.binds)
	if !ok {
		if auto {
			t.Rollback()
		}
		return false, nil
	}
	x := fastpath.Exec{Txn: t, Args: args, Scratch: &s.scratch, Mgr: s.p.mgr}
	if st.Kind == fastsql.Select {
		charset := fc.charset()
		if x.Fields = p.Fields(charset); x.Fields == nil {
			if auto {
				t.Rollback()
			}
			fc.learn, fc.learnCharset = p, charset
			return false, nil
		}
	}
	res, err := p.Run(sctx, x)
	if err == fastpath.ErrFallBack {
		if auto {
			t.Rollback()
		}
		return false, nil
	}
	if err != nil {
		if auto {
			t.Rollback()
		}
		return true, engineErr(gmstable.DupErr(err))
	}
	sql.IncrementStatusVariable(sctx, "Questions", 1)
	s.ClearWarnings()
	if auto {
		out, err := t.Commit(sctx)
		if err != nil {
			s.certFailed = errorsIsCert(err)
			return true, engineErr(err)
		}
		if out.Seqno != 0 {
			s.lastSeqno = out.Seqno
		}
	}
	fc.setStatus(t, auto)
	f.Ran()
	return true, fc.out(res)
}

// control runs BEGIN, COMMIT or ROLLBACK as go-mysql-server's
// StartTransaction, Commit and Rollback nodes do.
func (fc *fastCall) control(ctx *sql.Context, kind fastsql.Kind) error {
	s := fc.s
	cur := s.GetTransaction()
	switch kind {
	case fastsql.Begin:
		// BEGIN commits the open transaction first
		if cur != nil {
			if err := s.CommitTransaction(ctx, cur); err != nil {
				return err
			}
		}
		tx, err := s.StartTransaction(ctx, sql.ReadWrite)
		if err != nil {
			return err
		}
		s.SetTransaction(tx)
		s.SetIgnoreAutoCommit(true)
	case fastsql.Commit:
		if cur != nil {
			if err := s.CommitTransaction(ctx, cur); err != nil {
				return err
			}
			s.SetIgnoreAutoCommit(false)
			s.SetTransaction(nil)
		}
	case fastsql.Rollback:
		if cur != nil {
			if err := s.Rollback(ctx, cur); err != nil {
				return err
			}
			s.SetIgnoreAutoCommit(false)
			s.SetTransaction(nil)
		}
	}
	sql.IncrementStatusVariable(ctx, "Questions", 1)
	s.ClearWarnings()
	lqi := s.GetLastQueryInfo()
	lqi.RowCount.Store(0)
	fc.setStatus(nil, false)
	fc.h.fast.Ran()
	return fc.out(&sqltypes.Result{})
}

func errorsIsCert(err error) bool {
	return err != nil && strings.Contains(err.Error(), txn.ErrCertification.Error())
}

// learnFrom takes the column metadata of a SELECT the general path ran for
// the fast path.
func (fc *fastCall) learnFrom(r *sqltypes.Result) {
	if fc.learnConst != nil {
		fc.learnConstFrom(r)
	}
	p := fc.learn
	if p == nil || len(r.Fields) == 0 {
		return
	}
	p.Learn(cloneFields(r.Fields), fc.learnCharset)
	fc.learn = nil
}

func (fc *fastCall) charset() string {
	v, err := fc.s.GetSessionVariable(nil, "character_set_results")
	if err != nil || v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// txn returns the transaction to run in: the session's explicit one, or a
// new autocommit one (auto = true) that the caller commits.
func (fc *fastCall) txn(ctx *sql.Context) (*txn.Txn, bool, error) {
	s := fc.s
	explicit := s.inExplicitTransaction()
	if t, ok := s.GetTransaction().(*Transaction); ok && t != nil {
		if explicit {
			if t.Aborted() {
				return nil, false, nil
			}
			t.NewStatement()
			return t.Txn, false, nil
		}
		// left behind by a failed autocommit statement: MySQL rolled that
		// statement back, and this one commits on its own
		s.CommandEnd()
	}
	if !explicit {
		return s.p.mgr.Begin(s.txnOptions(ctx, sql.ReadWrite)), true, nil
	}
	// autocommit off, no transaction yet: start the session's
	tx, err := s.StartTransaction(ctx, sql.ReadWrite)
	if err != nil {
		return nil, false, err
	}
	s.SetTransaction(tx)
	return tx.(*Transaction).Txn, false, nil
}

// setStatus updates the connection's status flags as go-mysql-server does.
func (fc *fastCall) setStatus(t *txn.Txn, auto bool) {
	c := fc.c
	if ac, err := fc.s.GetSessionVariable(nil, "autocommit"); err == nil && sqlvalue.Truthy(ac) {
		c.StatusFlags |= uint16(mysql.ServerStatusAutocommit)
	} else {
		c.StatusFlags &^= uint16(mysql.ServerStatusAutocommit)
	}
	if !auto && fc.s.GetTransaction() != nil {
		c.StatusFlags |= uint16(mysql.ServerInTransaction)
	} else {
		c.StatusFlags &^= uint16(mysql.ServerInTransaction)
	}
}

// plan binds the statement to the table's current definition.
func (fc *fastCall) plan(e *fastpath.Entry, t *txn.Txn) (*fastpath.Plan, error) {
	st := e.Statement()
	db := st.DB
	if db == "" {
		db = fc.s.GetCurrentDatabase()
	}
	if _, ok := fc.s.temp.Get(db, st.Table); ok {
		return nil, nil // a temporary table: the general path
	}
	cat := t.Catalog()
	def, ok := cat.TableByName(db, st.Table)
	if !ok {
		return nil, nil
	}
	return e.Plan(def, cat, planSchema)
}

// planSchema is a table's go-mysql-server schema for the fast path's plans.
func planSchema(def *storage.TableDef, info *storage.TableInfo) sql.Schema {
	return tableSchema(nil, def, info)
}
