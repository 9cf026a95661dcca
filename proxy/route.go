package proxy

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/certusdb/certus/proxy/backend"
	"github.com/certusdb/certus/proxy/config"
	"github.com/certusdb/certus/proxy/monitor"
	"github.com/certusdb/certus/proxy/mysqlproto"
	"github.com/certusdb/certus/proxy/rules"
	"github.com/certusdb/certus/proxy/sqltext"
)

const (
	// retryPause is the pause between attempts while no writer is
	// available or a node refuses work outside the primary component.
	retryPause = 50 * time.Millisecond
	// maxUndelivered bounds how often a statement whose node connection
	// broke before any of it was written is tried again.
	maxUndelivered = 3
)

// plan is one statement (or command) to run for the client.
type plan struct {
	st     sqltext.Statement
	text   string
	digest string
	// stale: the command needs no causal wait (prepare, field list).
	stale bool
	// record: match rules and count the statement in the digest stats.
	record bool
	// prepareOnly: the command prepares a statement; it changes no
	// session state.
	prepareOnly bool
}

// downError is a failure to reach a node; the statement may be retried
// elsewhere.
type downError struct {
	node string
	err  error
}

func (e *downError) Error() string { return fmt.Sprintf("cannot reach node %s: %v", e.node, e.err) }
func (e *downError) Unwrap() error { return e.err }

// retryable reports whether acquiring a backend failed in a way that
// another attempt (after the topology changes) may fix.
func retryable(err error) bool {
	var d *downError
	return errors.Is(err, errNoWriter) || errors.As(err, &d)
}

// run executes one statement: it matches the rules, picks a backend
// connection (pinned, writer or reader, with the session's state and a
// causal wait if needed), sends the command with send, relays the
// response with relay, then updates the session (database, variables,
// transaction and pinning, causal position). Only errors that end the
// client session are returned; statement errors go to the client.
func (s *session) run(pl plan, send func(*backend.Conn) error, relay func(*backend.Conn) (backend.Result, error)) error {
	cfg := s.p.cfg.Load()
	var rule *rules.Rule
	if pl.record {
		rule = s.p.rules.Load().Match(pl.text, pl.digest)
		if rule != nil {
			if err := rule.Admit(s.ctx); err != nil {
				return err
			}
		}
	}
	start := time.Now()
	deadline := start.Add(time.Duration(cfg.FailoverWait))
	wasInTxn := s.inTxn()
	record := func(res backend.Result, failed bool) {
		if pl.record {
			s.p.stats.Record(pl.digest, time.Since(start), res.Rows, res.Affected, failed)
		}
	}
	for attempt := 0; ; attempt++ {
		wasPinned := s.pinned != nil
		c, err := s.acquire(pl, rule, cfg)
		if err != nil {
			if retryable(err) && time.Now().Before(deadline) && s.ctx.Err() == nil {
				s.pause()
				continue
			}
			record(backend.Result{}, true)
			return s.writeErr(asSQLError(err))
		}
		sent, delivered := s.c.Sent(), c.Sent()
		err = send(c)
		var res backend.Result
		if err == nil {
			res, err = relay(c)
		}
		if err != nil {
			var e *mysqlproto.Error
			switch {
			case errors.As(err, &e) && !c.Broken:
				// the node refused the command before running it
				s.finish(c, pl, backend.Result{Err: e})
				record(res, true)
				return s.writeErr(e)
			case errors.Is(err, backend.ErrClientWrite):
				s.finish(c, pl, res)
				return err
			}
			node := c.Node
			s.drop(c)
			if c.Sent() != delivered {
				// The node may have run the statement, or died of it: a
				// statement that crashes a node would crash each node it
				// were carried to, so it is not tried elsewhere.
				digest := pl.digest
				if digest == "" {
					digest = sqltext.Digest(pl.text)
				}
				s.p.log.Warn("proxy: lost the node connection during a statement; not retried on another node",
					"node", node, "conn", s.id, "digest", clip(digest, 200), "err", err)
			} else if !wasPinned && attempt < maxUndelivered && time.Now().Before(deadline) {
				continue // nothing reached the node
			}
			if s.c.Sent() != sent {
				return err // part of a result reached the client: its connection cannot continue
			}
			s.c.DiscardBuffered()
			record(res, true)
			if werr := s.writeErr(errLostBackend(node, err)); werr != nil || !wasInTxn {
				return werr
			}
			// The transaction died with the connection. The client is told
			// and then closed, as ProxySQL closes it: its next statements
			// would run outside the transaction it believes open.
			return fmt.Errorf("the transaction was lost with node %s: %w", node, err)
		}
		if res.Err != nil && res.Err.Code == 1047 && res.ResultSets == 0 && !wasInTxn && !s.sticky &&
			pl.st.Kind != sqltext.Commit && time.Now().Before(deadline) && s.ctx.Err() == nil {
			// outside the primary component the node ran nothing: wait
			// for the cluster (or the proxy) to settle and try again
			s.finish(c, pl, res)
			s.pause()
			continue
		}
		if res.Err != nil {
			if err := s.c.WritePacket(res.ErrPacket); err != nil {
				s.finish(c, pl, res)
				return err
			}
		}
		werr := s.c.Flush()
		s.p.countServed(c.Node)
		s.finish(c, pl, res)
		record(res, res.Err != nil)
		return werr
	}
}

// clip cuts s to n bytes for a log line: a hostile statement's digest
// can be megabytes long.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func (s *session) pause() {
	select {
	case <-s.ctx.Done():
	case <-time.After(retryPause):
	}
}

// inTxn reports whether the session holds a connection in a transaction.
func (s *session) inTxn() bool {
	return s.pinned != nil && s.pinned.Status&mysqlproto.StatusInTrans != 0
}

// drop discards a broken connection.
func (s *session) drop(c *backend.Conn) {
	c.Close()
	if s.pinned == c {
		s.pinned = nil
		s.sticky = false
	}
	if s.diag == c {
		s.diag = nil
	}
}

// acquire returns the connection the statement runs on. A statement that
// calls LAST_INSERT_ID() finds there the session's value (the connection
// may last have inserted for another session): the proxy sets it with
// SELECT LAST_INSERT_ID(n) when it differs.
func (s *session) acquire(pl plan, rule *rules.Rule, cfg *config.Config) (*backend.Conn, error) {
	c, err := s.acquireConn(pl, rule, cfg)
	if err != nil || !pl.st.LastInsertID || c.LastInsertID == s.lastInsertID {
		return c, err
	}
	if _, err := c.Exec(fmt.Sprintf("SELECT LAST_INSERT_ID(%d)", s.lastInsertID)); err != nil {
		s.drop(c)
		return nil, &downError{node: c.Node, err: err}
	}
	c.LastInsertID = s.lastInsertID
	return c, nil
}

// acquireConn picks the connection for acquire.
func (s *session) acquireConn(pl plan, rule *rules.Rule, cfg *config.Config) (*backend.Conn, error) {
	t := s.p.mon.Topology()
	if s.pinned != nil {
		if s.inTxn() {
			return s.pinned, nil
		}
		if n := t.Node(s.pinned.Node); n != nil && n.Healthy() && (n.Writer || !s.sticky) {
			return s.pinned, nil
		}
		// a sticky session whose node left the writer hostgroup moves to
		// the new writer (its user variables and locks are gone)
		s.pinned.Close()
		s.pinned, s.sticky = nil, false
	}
	if pl.st.Diagnostics && s.diag != nil && !s.diag.Broken {
		return s.diag, nil
	}
	node, syncWait, waitFor, err := s.route(t, pl, rule, cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(s.ctx, time.Duration(cfg.FailoverWait))
	defer cancel()
	c, err := s.connTo(ctx, node, syncWait)
	if err != nil || waitFor == 0 {
		return c, err
	}
	s.p.causalWaits.Add(1)
	werr := s.causalWait(c, waitFor, time.Duration(cfg.CausalWait))
	if werr == nil {
		return c, nil
	}
	s.p.causalFallbacks.Add(1)
	s.p.putConn(c)
	// the reader did not catch up in time: use the writer, which has the
	// commit unless it changed since
	w, err := s.pickWriter(t)
	if err != nil {
		return nil, err
	}
	if c, err = s.connTo(ctx, w, false); err != nil {
		return nil, err
	}
	if s.p.knownApplied(t, w.Name) < waitFor {
		_ = s.causalWait(c, waitFor, time.Duration(cfg.FailoverWait))
	}
	return c, nil
}

// route picks the node for a statement that is not pinned, whether to use
// a sync-wait connection, and the seqno the node must have applied
// first (0: none).
func (s *session) route(t *monitor.Topology, pl plan, rule *rules.Rule, cfg *config.Config) (*monitor.Node, bool, uint64, error) {
	read := pl.st.Kind == sqltext.Read && s.autocommit && !pl.st.Sticky
	hostgroup, critical, stale := "", rules.CriticalNone, pl.stale || !*cfg.CausalReads
	if rule != nil {
		hostgroup, critical = rule.Hostgroup, rule.Critical
		stale = stale || rule.AllowStale
	}
	switch {
	case read && critical == rules.CriticalSyncWait:
		n, err := s.pickReader(t)
		return n, true, 0, err
	case read && (hostgroup == rules.HostgroupWriter || critical == rules.CriticalWriter || (s.causalLost && !stale)):
		n, err := s.pickWriter(t)
		if err != nil {
			return nil, false, 0, err
		}
		s.causalLost = false
		return n, false, s.needWait(t, n, stale), nil
	case read:
		n, err := s.pickReader(t)
		if err != nil {
			return nil, false, 0, err
		}
		return n, false, s.needWait(t, n, stale), nil
	case hostgroup == rules.HostgroupReader && pl.st.Kind == sqltext.Write && s.autocommit && !pl.st.Sticky:
		n, err := s.pickReader(t)
		return n, false, 0, err
	}
	n, err := s.pickWriter(t)
	return n, false, 0, err
}

// needWait returns the seqno a read on n must wait for, or 0.
func (s *session) needWait(t *monitor.Topology, n *monitor.Node, stale bool) uint64 {
	if stale || s.causal == 0 || s.p.knownApplied(t, n.Name) >= s.causal {
		return 0
	}
	return s.causal
}

func (s *session) pickWriter(t *monitor.Topology) (*monitor.Node, error) {
	if len(t.Writers) == 0 {
		return nil, errNoWriter
	}
	return t.Writers[int(s.id)%len(t.Writers)], nil
}

func (s *session) pickReader(t *monitor.Topology) (*monitor.Node, error) {
	cands := t.Readers
	if len(cands) == 0 {
		cands = t.Writers
	}
	if len(cands) == 0 {
		return nil, errNoWriter
	}
	return cands[int(s.p.rr.Add(1)%uint64(len(cands)))], nil
}

// pickAny picks a node for session bookkeeping (checking a database).
func (s *session) pickAny() *monitor.Node {
	t := s.p.mon.Topology()
	if n, err := s.pickReader(t); err == nil {
		return n
	}
	return nil
}

// connTo returns a connection to node carrying the session's database
// and variables.
func (s *session) connTo(ctx context.Context, n *monitor.Node, syncWait bool) (*backend.Conn, error) {
	if n == nil {
		return nil, errNoWriter
	}
	want := backend.StateKey(s.db, s.vars)
	c, err := s.p.pool.Get(ctx, n.Name, n.SQLAddr, s.backend, syncWait, want)
	if err != nil {
		return nil, dialError(n, s.backend.User, err)
	}
	if c.Key() == want {
		return c, nil
	}
	if s.needsFresh(c) {
		c.Close()
		if c, err = s.p.pool.Dial(ctx, n.Name, n.SQLAddr, s.backend, syncWait); err != nil {
			return nil, dialError(n, s.backend.User, err)
		}
	}
	if err := s.applyState(c); err != nil {
		var e *mysqlproto.Error
		if errors.As(err, &e) && !c.Broken {
			s.p.putConn(c)
			return nil, e
		}
		c.Close()
		return nil, &downError{node: n.Name, err: err}
	}
	return c, nil
}

// dialError is what a failure to open a connection to n as user becomes:
// the node's refusal of the account goes to the client as it is (a retry
// elsewhere would be refused too), anything else means n is down.
func dialError(n *monitor.Node, user string, err error) error {
	if !errors.Is(err, backend.ErrAuth) {
		return &downError{node: n.Name, err: err}
	}
	var e *mysqlproto.Error
	if errors.As(err, &e) {
		return e
	}
	return mysqlproto.NewError(1045, "28000", "Access denied for user '%s' on node %s: %v", user, n.Name, err)
}

// needsFresh reports whether c carries state the session does not have
// and cannot be told to drop (a variable the session never set, or a
// default database when the session has none).
func (s *session) needsFresh(c *backend.Conn) bool {
	if s.db == "" && c.DB != "" {
		return true
	}
	for k := range c.Vars {
		if _, ok := s.vars[k]; !ok {
			return true
		}
	}
	return false
}

// applyState replays the session's database and variables on c.
func (s *session) applyState(c *backend.Conn) error {
	if s.db != "" && c.DB != s.db {
		if err := c.InitDB(s.db); err != nil {
			return err
		}
	}
	for k, stmt := range s.vars {
		if c.Vars[k] != stmt {
			if err := c.SetVar(k, stmt); err != nil {
				return err
			}
		}
	}
	return nil
}

// causalWait waits until c's node has applied seqno.
func (s *session) causalWait(c *backend.Conn, seqno uint64, timeout time.Duration) error {
	uuid := s.p.mon.Topology().ClusterUUID
	if uuid == "" {
		return errors.New("cluster UUID unknown")
	}
	q := fmt.Sprintf("SELECT WSREP_SYNC_WAIT_UPTO_GTID('%s:%d', %.3f)", uuid, seqno, timeout.Seconds())
	if _, err := c.Exec(q); err != nil {
		return err
	}
	s.p.noteApplied(c.Node, seqno)
	return nil
}

// finish updates the session after a statement ran on c and releases or
// pins c.
func (s *session) finish(c *backend.Conn, pl plan, res backend.Result) {
	if pl.prepareOnly {
		s.release(c)
		return
	}
	s.rowCount = -1
	if res.Err == nil && res.ResultSets == 0 {
		s.rowCount = int64(res.OK.AffectedRows)
	}
	if res.Err == nil {
		switch pl.st.Kind {
		case sqltext.Use:
			s.db = pl.st.DB
			c.NoteDB(s.db)
		case sqltext.Set:
			for _, a := range pl.st.Vars {
				s.vars[a.Key] = a.Stmt
				c.NoteVar(a.Key, a.Stmt)
				if a.Key == "autocommit" {
					if b, ok := sqltext.BoolValue(a.Value); ok {
						s.autocommit = b
					} else {
						s.sticky = true
					}
				}
			}
		}
		if pl.st.Sticky {
			s.sticky = true
		}
	}
	inTxn := c.Status&mysqlproto.StatusInTrans != 0
	switch pl.st.Kind {
	case sqltext.Write:
		if res.Err == nil || inTxn {
			s.wrote = true
		}
	case sqltext.Rollback:
		if res.Err == nil {
			s.wrote = false
		}
	}
	if s.wrote && !inTxn && !c.Broken {
		s.learnCommit(c, res, pl.st)
	}
	if !pl.st.Diagnostics {
		c.Conditions = res.Err != nil || res.OK.Warnings > 0
	}
	if res.Err == nil && res.OK.LastInsertID != 0 {
		s.lastInsertID, c.LastInsertID = res.OK.LastInsertID, res.OK.LastInsertID
	}
	if s.sticky || inTxn || (pl.st.Kind == sqltext.Begin && res.Err == nil && !c.Broken) {
		s.pinned = c
		s.releaseDiag()
		return
	}
	if s.diag != c {
		s.releaseDiag()
	}
	if c.Conditions && !c.Broken && s.pinned != c {
		// SHOW WARNINGS and the like must read them on this connection
		s.diag = c
		return
	}
	s.release(c)
}

// releaseDiag returns the connection held for the conditions of the
// session's last statement.
func (s *session) releaseDiag() {
	if s.diag != nil {
		d := s.diag
		s.diag = nil
		if d != s.pinned {
			s.p.putConn(d)
		}
	}
}

// release returns c to the pool unless the session holds it.
func (s *session) release(c *backend.Conn) {
	if s.pinned == c && (s.sticky || c.Status&mysqlproto.StatusInTrans != 0) && !c.Broken {
		return
	}
	if s.pinned == c {
		s.pinned = nil
	}
	s.p.putConn(c)
}

// learnCommit learns the GTID of the session's last commit on c, made by
// st or by the transaction st ended: from the OK packet's session-state
// block when the node sends it, else by asking WSREP_LAST_WRITTEN_GTID()
// on the same connection. It does not ask when nothing was committed: after
// a query (SELECT SQL_CALC_FOUND_ROWS, FOR UPDATE, FOUND_ROWS() go to the
// writer too), or after an OK packet without a GTID from a node that
// tracks them. The extra SELECT would have reset the connection's
// FOUND_ROWS() and ROW_COUNT(), which the session reads next.
func (s *session) learnCommit(c *backend.Conn, res backend.Result, st sqltext.Statement) {
	s.wrote = false
	gtid := mysqlproto.GTIDFromSessionState(res.OK.SessionState)
	if gtid == "" && (st.Query || c.TracksGTIDs && res.ResultSets == 0 && res.Err == nil) {
		return
	}
	if gtid == "" {
		s.p.gtidQueries.Add(1)
		col, err := c.Exec("SELECT WSREP_LAST_WRITTEN_GTID()")
		if err != nil || len(col) != 1 {
			s.causalLost = true
			return
		}
		gtid = col[0]
	}
	seqno, ok := gtidSeqno(gtid)
	if !ok {
		s.causalLost = true
		return
	}
	if seqno > s.causal {
		s.causal = seqno
	}
	s.p.noteApplied(c.Node, seqno)
}

// gtidSeqno returns the seqno of "uuid:seqno" (or "uuid:1-seqno").
func gtidSeqno(g string) (uint64, bool) {
	i := strings.LastIndexByte(g, ':')
	if i < 0 {
		return 0, false
	}
	num := g[i+1:]
	if j := strings.IndexByte(num, '-'); j >= 0 {
		num = num[j+1:]
	}
	v, err := strconv.ParseUint(num, 10, 64)
	return v, err == nil
}

// putConn returns a connection to the pool.
func (p *Proxy) putConn(c *backend.Conn) { p.pool.Put(c) }
