package sqlengine

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/mysql_db"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/certusdb/certus/internal/fastsql"
	"github.com/certusdb/certus/internal/sqllex"
)

// Privilege checks Certus makes itself: for the statements its fast path
// runs without go-mysql-server, for KILL and SHOW GRANTS, which it allows
// only to SUPER and to readers of the mysql database, and for the process
// list, which it shows whole to everyone. SET GLOBAL and the FILE
// privilege are the statement guard's (stmtguard.go).

// privileged reports whether the session's user holds what the statement
// needs, as go-mysql-server's authorization checks it (global, database or
// table level, roles included) or more: UPDATE and DELETE also need SELECT,
// which MySQL asks for the columns they read. A user who lacks any of it
// goes to the general path, which then answers exactly as it would have.
func (fc *fastCall) privileged(ctx *sql.Context, st *fastsql.Statement) bool {
	mdb := fc.h.users
	if mdb == nil {
		return true
	}
	set := mdb.UserActivePrivilegeSet(ctx)
	if set.Has(sql.PrivilegeType_Super) {
		return true
	}
	var need []sql.PrivilegeType
	switch st.Kind {
	case fastsql.Begin, fastsql.Commit, fastsql.Rollback:
		// they need no privilege, but a user dropped since it logged in
		// (an empty set) must get go-mysql-server's access denied
		return set.HasPrivileges()
	case fastsql.Select:
		need = privSelect
	case fastsql.Update:
		need = privUpdate
	case fastsql.Delete:
		need = privDelete
	case fastsql.Insert:
		need = privInsert
	case fastsql.Replace:
		need = privReplace
	default:
		return false
	}
	db := st.DB
	if db == "" {
		db = ctx.GetCurrentDatabase()
	}
	return mdb.UserHasPrivileges(ctx, sql.NewPrivilegedOperation(sql.PrivilegeCheckSubject{Database: db, Table: st.Table}, need...))
}

// The privileges each fast-path statement kind needs on its table.
var (
	privSelect  = []sql.PrivilegeType{sql.PrivilegeType_Select}
	privUpdate  = []sql.PrivilegeType{sql.PrivilegeType_Update, sql.PrivilegeType_Select}
	privDelete  = []sql.PrivilegeType{sql.PrivilegeType_Delete, sql.PrivilegeType_Select}
	privInsert  = []sql.PrivilegeType{sql.PrivilegeType_Insert}
	privReplace = []sql.PrivilegeType{sql.PrivilegeType_Insert, sql.PrivilegeType_Delete}
)

// holds reports whether the session's user holds a global privilege
// (always true without users, or without a session).
func (h *Handler) holds(ctx context.Context, s *Session, p sql.PrivilegeType) bool {
	if h.users == nil || s == nil {
		return true
	}
	return h.users.UserHasPrivileges(sql.NewContext(ctx, sql.WithSession(s)), sql.NewPrivilegedOperation(sql.PrivilegeCheckSubject{}, p))
}

// holdsDynamic is holds for a dynamic privilege.
func (h *Handler) holdsDynamic(ctx context.Context, s *Session, p string) bool {
	if h.users == nil || s == nil {
		return true
	}
	return h.users.UserHasPrivileges(sql.NewContext(ctx, sql.WithSession(s)), sql.NewDynamicPrivilegedOperation(p))
}

// killOwn runs KILL [CONNECTION | QUERY] id for a user without SUPER, which
// MySQL allows on the user's own connections (a JDBC query timeout sends
// KILL QUERY from a second connection of the same user) and go-mysql-server
// refuses. done is false when go-mysql-server should run the statement:
// the user holds SUPER, or the text is not one KILL alone.
func (h *Handler) killOwn(ctx context.Context, s *Session, query string) (done bool, err error) {
	if h.users == nil || h.processes == nil || s == nil {
		return false, nil
	}
	st, perr := sqlparser.Parse(query)
	if perr != nil {
		return false, nil
	}
	k, ok := st.(*sqlparser.Kill)
	if !ok {
		return false, nil
	}
	if h.holds(ctx, s, sql.PrivilegeType_Super) {
		return false, nil
	}
	v, ok := k.ConnID.(*sqlparser.SQLVal)
	if !ok {
		return false, nil
	}
	id, perr := strconv.ParseUint(string(v.Val), 10, 32)
	if perr != nil {
		return true, mysql.NewSQLError(mysql.ERNoSuchThread, mysql.SSUnknownSQLState, "Unknown thread id: %s", v.Val)
	}
	h.mu.Lock()
	target, conn := h.sessions[uint32(id)], h.conns[uint32(id)]
	h.mu.Unlock()
	if target == nil {
		return true, mysql.NewSQLError(mysql.ERNoSuchThread, mysql.SSUnknownSQLState, "Unknown thread id: %d", id)
	}
	if target.Client().User != s.Client().User {
		return true, mysql.NewSQLError(mysql.ERKillDenied, mysql.SSUnknownSQLState, "You are not owner of thread %d", id)
	}
	h.processes.Kill(uint32(id))
	if k.Connection && conn != nil {
		conn.Close()
	}
	return true, nil
}

// ownGrants lets the session's user run query when it is SHOW GRANTS [FOR
// CURRENT_USER]: MySQL shows every user its own grants, go-mysql-server
// asks for SELECT on the mysql database. For this one statement the
// session's cached privilege set also reads mysql; the returned function
// puts the user's own set back. The statement still lists the grants
// stored for the user, not the session's set.
func (h *Handler) ownGrants(ctx context.Context, s *Session, query string) (restore func()) {
	restore = func() {}
	if h.users == nil || s == nil {
		return restore
	}
	st, err := sqlparser.Parse(query)
	if err != nil {
		return restore
	}
	g, ok := st.(*sqlparser.ShowGrants)
	if !ok || (g.For != nil && !g.CurrentUser) || len(g.Using) > 0 {
		return restore
	}
	return h.widen(ctx, s, func(own mysql_db.PrivilegeSet) bool {
		if own.Database("mysql").Has(sql.PrivilegeType_Select) || own.Has(sql.PrivilegeType_Select) {
			return false
		}
		own.AddDatabase("mysql", sql.PrivilegeType_Select)
		return true
	})
}

// widen gives the session, for one statement Certus lets a user run on
// its own account, a copy of its privilege set that grant adds to (grant
// returns false when nothing needs adding); the returned function puts the
// user's own set back.
func (h *Handler) widen(ctx context.Context, s *Session, grant func(mysql_db.PrivilegeSet) bool) (restore func()) {
	sctx := sql.NewContext(ctx, sql.WithSession(s))
	own := h.users.UserActivePrivilegeSet(sctx) // caches own and its version in s
	wider := own.Copy()
	if !grant(wider) {
		return func() {}
	}
	cached, version := s.GetPrivilegeSet()
	s.SetPrivilegeSet(wider, version)
	return func() { s.SetPrivilegeSet(cached, version) }
}

// deniedDetail gives go-mysql-server's 1142 message ("command denied to
// user 'u'@'h'") MySQL's command and, when the statement names one table,
// the table: "INSERT command denied to user 'u'@'h' for table 't'". For
// CREATE/ALTER/DROP DATABASE it is MySQL's 1044 instead ("Access denied
// for user 'u'@'h' to database 'd'").
func deniedDetail(query string, se *mysql.SQLError) *mysql.SQLError {
	const prefix = "command denied to user "
	if !strings.HasPrefix(se.Message, prefix) {
		return se
	}
	first, _, err := sqlparser.SplitStatement(query)
	if err != nil {
		return se
	}
	lx := sqllex.NewScanner(first)
	verb := lx.Word()
	switch verb {
	case "", "WITH", "TABLE", "VALUES":
		verb = "SELECT"
	case "REPLACE":
		verb = "INSERT"
	}
	st, perr := sqlparser.Parse(first)
	if d, ok := st.(*sqlparser.DBDDL); ok && perr == nil && d.DBName != "" {
		// MySQL refuses CREATE/ALTER/DROP DATABASE for the database
		user := strings.TrimSuffix(strings.TrimPrefix(se.Message, prefix), ".")
		return mysql.NewSQLError(mysql.ERDBAccessDenied, "42000", "Access denied for user %s to database '%s'", user, d.DBName)
	}
	msg := verb + " " + se.Message
	if perr == nil {
		tables := map[string]bool{}
		_ = sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
			if tn, ok := n.(sqlparser.TableName); ok && !tn.Name.IsEmpty() {
				tables[tn.Name.String()] = true
			}
			return true, nil
		}, st)
		if len(tables) == 1 {
			for t := range tables {
				msg += " for table '" + t + "'"
			}
		}
	}
	return mysql.NewSQLError(se.Number(), se.SQLState(), "%s", msg)
}

// ownProcessList returns query, SHOW [FULL] PROCESSLIST, for a user with
// the PROCESS privilege, and the same question put to
// information_schema.PROCESSLIST (which ownProcessesContext narrows to the
// user's own connections) for a user without it: go-mysql-server refuses
// the statement, MySQL answers it with the user's own threads.
func (h *Handler) ownProcessList(ctx context.Context, s *Session, query string) string {
	if h.users == nil || s == nil || h.holds(ctx, s, sql.PrivilegeType_Process) {
		return query
	}
	// the statement itself shows as the client sent it, not as rewritten
	info := "IF(ID = CONNECTION_ID(), 'SHOW FULL PROCESSLIST', INFO)"
	if !strings.Contains(strings.ToUpper(query), "FULL") {
		info = "IF(ID = CONNECTION_ID(), 'SHOW PROCESSLIST', LEFT(INFO, 100))" // as MySQL, without FULL
	}
	return "SELECT ID AS Id, USER AS User, HOST AS Host, DB AS db, COMMAND AS Command, TIME AS Time, " +
		"IF(ID = CONNECTION_ID(), 'starting', STATE) AS State, " + info + " AS Info FROM information_schema.PROCESSLIST ORDER BY ID"
}

// ownProcessesContext is go-mysql-server's context factory with each
// session's process list as MySQL shows it: a user without the PROCESS
// privilege sees only its own connections and their statements in
// information_schema.PROCESSLIST, not other users' SQL text, and each
// process is described as MySQL does (describe, Handler.describeProcess).
func ownProcessesContext(users *mysql_db.MySQLDb, describe func(*sql.Process)) sql.ContextFactory {
	return func(ctx context.Context, opts ...sql.ContextOption) *sql.Context {
		c := sql.NewContext(ctx, opts...)
		if c.Session != nil && c.ProcessList != nil {
			c.ProcessList = ownProcesses{ProcessList: c.ProcessList, users: users, session: c.Session, describe: describe}
		}
		return c
	}
}

// ownProcesses is a process list as one session's user may read it.
type ownProcesses struct {
	sql.ProcessList
	users    *mysql_db.MySQLDb
	session  sql.Session
	describe func(*sql.Process)
}

// Processes implements sql.ProcessList.
func (p ownProcesses) Processes() []sql.Process {
	all := p.ProcessList.Processes() // (copies, in no order)
	slices.SortFunc(all, func(a, b sql.Process) int { return cmp.Compare(a.Connection, b.Connection) })
	for i := range all {
		p.describe(&all[i])
	}
	ctx := sql.NewContext(context.Background(), sql.WithSession(p.session))
	if p.users.UserHasPrivileges(ctx, sql.NewPrivilegedOperation(sql.PrivilegeCheckSubject{}, sql.PrivilegeType_Process)) {
		return all
	}
	user := p.session.Client().User
	own := all[:0:0]
	for _, proc := range all {
		if proc.User == user {
			own = append(own, proc)
		}
	}
	return own
}
