package sqlengine

import (
	"reflect"
	"runtime"
	"strings"
	"unicode/utf8"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/mysql_db"
	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/certusdb/certus/internal/sqllex"
	"github.com/certusdb/certus/sqlengine/internal/treewalk"
	"github.com/certusdb/certus/storage"
)

// stmtGuard checks every statement go-mysql-server parses, before it is
// planned: a client's statement, a prepared one, and the definitions of
// views, procedures and triggers as statements use them. What it checks
// is what no statement may do whoever runs it (nest deeper than the
// planner's stack allows, name things with invalid UTF-8), and the
// privileges MySQL asks that go-mysql-server does not: SET GLOBAL and the
// FILE privilege, on the statement as it was parsed (with the session's
// sql_mode), so that no other reading of its text can disagree.
type stmtGuard struct {
	// users holds the users and grants (nil: no privilege checks)
	users *mysql_db.MySQLDb
	// files is where statements may read and write the host's files
	files *FileAccess
	// catalog is the latest catalog (nil: no checks that need tables)
	catalog func() *storage.Catalog
}

// maxExprDepth bounds how deeply a statement's expressions may nest. The
// planner walks them recursively, some parts of it once per level at each
// level (a chain of 8,000 additions took 4 s to plan), and a chain of a
// million overflowed the goroutine's stack, which kills the process. MySQL
// answers such statements 1436 from its stack check.
const maxExprDepth = 2000

// maxStackFrames bounds the stack a statement may have when one more
// statement is parsed inside it: views that select from each other,
// procedures that call themselves, triggers whose statements fire
// triggers. Unbounded, each of those recursed until Go's stack limit
// ended the process.
const maxStackFrames = 30000

var (
	errTooDeep = mysql.NewSQLError(erStackOverrun, mysql.SSUnknownSQLState,
		"Thread stack overrun: the statement nests more than %d levels deep; simplify it", maxExprDepth)
	errStackOverrun = mysql.NewSQLError(erStackOverrun, mysql.SSUnknownSQLState,
		"Thread stack overrun: views, routines or triggers nest more than %d stack frames deep", maxStackFrames)
)

// check returns why st, parsed from text, may not run, or nil. ctx is nil
// for a parse outside any session (no privileges to check).
func (g *stmtGuard) check(ctx *sql.Context, text string, st ast.Statement) error {
	if stackTooDeep() {
		if d, ok := st.(*ast.DDL); ok && d.ViewSpec != nil {
			db := d.ViewSpec.ViewName.DbQualifier.String()
			if db == "" && ctx != nil {
				db = ctx.GetCurrentDatabase()
			}
			return mysql.NewSQLError(erViewRecursive, mysql.SSUnknownSQLState, "`%s`.`%s` contains view recursion", db, d.ViewSpec.ViewName.Name.String())
		}
		return errStackOverrun
	}
	// a level of nesting takes at least one byte of text
	if len(text) > maxExprDepth && nestsDeeper(st, maxExprDepth) {
		return errTooDeep
	}
	if !utf8.ValidString(text) {
		if err := invalidIdentifier(st); err != nil {
			return err
		}
	}
	if ctx == nil || ctx.Session == nil {
		return nil
	}
	switch st := st.(type) {
	case *ast.Set:
		return g.setVariables(ctx, st)
	case *ast.CreateUser:
		return createUser(st)
	case *ast.Update:
		return g.multiUpdateKeys(ctx, st)
	case *ast.Load:
		return g.files.loadData(ctx, g.users, st)
	case *ast.Select:
		if st.Lock != nil && st.Lock.Type != "" && g.users != nil {
			if err := g.lockingRead(ctx, st); err != nil {
				return err
			}
		}
		if sqllex.ContainsFold(text, "outfile") || sqllex.ContainsFold(text, "dumpfile") {
			return g.files.selectInto(ctx, g.users, st)
		}
	case *ast.SetOp:
		if sqllex.ContainsFold(text, "outfile") || sqllex.ContainsFold(text, "dumpfile") {
			return g.files.selectInto(ctx, g.users, st)
		}
	}
	return nil
}

// multiUpdateKeys refuses, as MySQL does (1706), a multi-table UPDATE
// that updates one table through two aliases and changes its primary key
// through either: the rows one alias finds would move under the other.
// go-mysql-server ran it.
func (g *stmtGuard) multiUpdateKeys(ctx *sql.Context, st *ast.Update) error {
	if len(st.TableExprs) < 2 && !containsJoin(st.TableExprs) || g.catalog == nil {
		return nil
	}
	aliases := map[string]ast.TableName{} // alias (or name) -> table
	treewalk.AST(reflect.ValueOf(&st.TableExprs).Elem(), func(v reflect.Value) {
		if v.Kind() != reflect.Pointer {
			return
		}
		if at, ok := v.Interface().(*ast.AliasedTableExpr); ok && at != nil {
			if tn, ok := at.Expr.(ast.TableName); ok {
				alias := tn.Name.String()
				if !at.As.IsEmpty() {
					alias = at.As.String()
				}
				aliases[strings.ToLower(alias)] = tn
			}
		}
	})
	cat := g.catalog()
	type target struct {
		aliases map[string]bool
		names   []string // as written, in order
		pk      bool
	}
	updated := map[string]*target{} // db.table -> how it is updated
	for _, e := range st.Exprs {
		if e.Name == nil || e.Name.Qualifier.IsEmpty() {
			continue
		}
		alias := e.Name.Qualifier.Name.String()
		tn, ok := aliases[strings.ToLower(alias)]
		if !ok {
			continue
		}
		db := tn.DbQualifier.String()
		if db == "" && ctx != nil {
			db = ctx.GetCurrentDatabase()
		}
		def, ok := cat.TableByName(db, tn.Name.String())
		if !ok {
			continue
		}
		key := strings.ToLower(db + "." + def.Name)
		u := updated[key]
		if u == nil {
			u = &target{aliases: map[string]bool{}}
			updated[key] = u
		}
		u.aliases[strings.ToLower(alias)] = true
		u.names = append(u.names, alias)
		for _, id := range def.PK {
			if c, _ := def.Column(id); c != nil && strings.EqualFold(c.Name, e.Name.Name.String()) {
				u.pk = true
			}
		}
		if u.pk && len(u.aliases) > 1 {
			first := u.names[0]
			for _, other := range u.names[1:] {
				if !strings.EqualFold(other, first) {
					return mysql.NewSQLError(erMultiUpdateKeyConflict, mysql.SSUnknownSQLState,
						"Primary key/partition key update is not allowed since the table is updated both as '%s' and '%s'.", first, other)
				}
			}
		}
	}
	return nil
}

// containsJoin reports whether exprs hold a JOIN.
func containsJoin(exprs ast.TableExprs) bool {
	for _, e := range exprs {
		if _, ok := e.(*ast.JoinTableExpr); ok {
			return true
		}
	}
	return false
}

// createUser refuses ACCOUNT LOCK (1235): go-mysql-server creates the
// account unlocked, and whoever has its password could log in.
func createUser(st *ast.CreateUser) error {
	if st.Locked {
		return mysql.NewSQLError(mysql.ERNotSupportedYet, "42000",
			"This version of MySQL doesn't yet support 'ACCOUNT LOCK; drop the account instead'")
	}
	return nil
}

// stackTooDeep reports whether the calling goroutine's stack holds more
// than maxStackFrames frames.
func stackTooDeep() bool {
	var pcs [1]uintptr
	// Callers fills at most len(pcs) from skip on: one frame found past
	// the limit is enough
	return runtime.Callers(maxStackFrames, pcs[:]) > 0
}

// nestsDeeper reports whether st nests more than limit levels deep. It
// walks the tree with its own stack, so a tree of any depth cannot
// overflow the goroutine's.
func nestsDeeper(st ast.SQLNode, limit int) bool {
	type level struct {
		n     ast.SQLNode
		depth int
	}
	stack := []level{{st, 1}}
	for len(stack) > 0 {
		top := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if top.depth > limit {
			return true
		}
		for _, c := range children(top.n) {
			stack = append(stack, level{c, top.depth + 1})
		}
	}
	return false
}

// children are the nodes directly under n.
func children(n ast.SQLNode) []ast.SQLNode {
	var out []ast.SQLNode
	root := true
	_ = ast.Walk(func(c ast.SQLNode) (bool, error) {
		if root {
			root = false
			return true, nil
		}
		out = append(out, c)
		return false, nil
	}, n)
	return out
}

// invalidIdentifier returns MySQL's 1300 for the first identifier of st
// that is not valid UTF-8 (string literals may hold any bytes: they are
// checked against their column's character set when stored).
func invalidIdentifier(st ast.Statement) error {
	var bad string
	treewalk.AST(reflect.ValueOf(&st).Elem(), func(v reflect.Value) {
		if bad != "" || v.Kind() != reflect.Struct {
			return
		}
		var name string
		switch id := v.Interface().(type) {
		case ast.TableIdent:
			name = id.String()
		case ast.ColIdent:
			name = id.String()
		default:
			return
		}
		if !utf8.ValidString(name) {
			bad = name
		}
	})
	if bad == "" {
		return nil
	}
	return mysql.NewSQLError(mysql.ERInvalidCharacterString, mysql.SSUnknownSQLState, "Invalid utf8mb4 character string: '%s'", hexPrefix(bad))
}

// hexPrefix is MySQL's rendering of an invalid string in 1300: its bytes
// from the first invalid one, in hex, at most 64 digits.
func hexPrefix(s string) string {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 {
			break
		}
		i += n
	}
	const digits = "0123456789ABCDEF"
	out := make([]byte, 0, 64)
	for ; i < len(s) && len(out) < 64; i++ {
		out = append(out, digits[s[i]>>4], digits[s[i]&15])
	}
	return string(out)
}

// restrictedSession are the session variables whose session value only a
// user with SUPER, SYSTEM_VARIABLES_ADMIN or SESSION_VARIABLES_ADMIN may
// set, as in MySQL (and Galera's wsrep_on, which in Galera takes a
// session's writes out of replication).
var restrictedSession = map[string]bool{
	"sql_log_bin": true, "sql_log_off": true, "pseudo_thread_id": true, "gtid_next": true,
	"pseudo_slave_mode": true, "pseudo_replica_mode": true, "wsrep_on": true,
}

// setVariables refuses a SET that assigns a global or persisted variable
// to a user without SUPER or SYSTEM_VARIABLES_ADMIN, and one that assigns
// a restricted session variable to a user without SESSION_VARIABLES_ADMIN
// either, as MySQL does (go-mysql-server asks nothing).
func (g *stmtGuard) setVariables(ctx *sql.Context, st *ast.Set) error {
	if g.users == nil {
		return nil
	}
	global, restricted := false, false
	for _, e := range st.Exprs {
		scope, name := e.Scope, ""
		if e.Name != nil {
			name = e.Name.Name.Lowered()
			if scope == ast.SetScope_None || scope == ast.SetScope_Session {
				if n, sc, _, err := ast.VarScopeForColName(e.Name); err == nil {
					scope, name = sc, n.Name.Lowered()
				}
			}
		}
		switch scope {
		case ast.SetScope_Global, ast.SetScope_Persist, ast.SetScope_PersistOnly:
			global = true
		case ast.SetScope_None, ast.SetScope_Session:
			restricted = restricted || restrictedSession[name]
		}
	}
	if !global && !restricted || hasGlobal(ctx, g.users, sql.PrivilegeType_Super) || hasDynamic(ctx, g.users, "system_variables_admin") {
		return nil
	}
	if global {
		return ErrSetGlobalDenied
	}
	if hasDynamic(ctx, g.users, "session_variables_admin") {
		return nil
	}
	return mysql.NewSQLError(mysql.ERSpecifiedAccessDenied, "42000",
		"Access denied; you need (at least one of) the SUPER, SYSTEM_VARIABLES_ADMIN or SESSION_VARIABLES_ADMIN privilege(s) for this operation")
}

// lockingRead refuses SELECT ... FOR UPDATE / FOR SHARE of a table on
// which the user holds none of UPDATE, DELETE and LOCK TABLES, as MySQL
// does: without them a reader could lock rows that writers wait for.
func (g *stmtGuard) lockingRead(ctx *sql.Context, st *ast.Select) error {
	var denied string
	treewalk.AST(reflect.ValueOf(&st.From).Elem(), func(v reflect.Value) {
		if denied != "" || v.Kind() != reflect.Pointer {
			return
		}
		at, ok := v.Interface().(*ast.AliasedTableExpr)
		if !ok || at == nil {
			return
		}
		tn, ok := at.Expr.(ast.TableName)
		if !ok {
			return
		}
		db := tn.DbQualifier.String()
		if db == "" {
			db = ctx.GetCurrentDatabase()
		}
		subject := sql.PrivilegeCheckSubject{Database: db, Table: tn.Name.String()}
		for _, p := range []sql.PrivilegeType{sql.PrivilegeType_Update, sql.PrivilegeType_Delete, sql.PrivilegeType_LockTables} {
			if g.users.UserHasPrivileges(ctx, sql.NewPrivilegedOperation(subject, p)) {
				return
			}
		}
		denied = tn.Name.String()
	})
	if denied == "" {
		return nil
	}
	c := ctx.Session.Client()
	return mysql.NewSQLError(erTableAccessDenied, "42000", "SELECT with locking clause command denied to user '%s'@'%s' for table '%s'", c.User, c.Address, denied)
}

// hasGlobal reports whether ctx's user holds a global privilege.
func hasGlobal(ctx *sql.Context, users *mysql_db.MySQLDb, p sql.PrivilegeType) bool {
	return users.UserHasPrivileges(ctx, sql.NewPrivilegedOperation(sql.PrivilegeCheckSubject{}, p))
}

// hasDynamic reports whether ctx's user holds a dynamic privilege.
func hasDynamic(ctx *sql.Context, users *mysql_db.MySQLDb, p string) bool {
	return users.UserHasPrivileges(ctx, sql.NewDynamicPrivilegedOperation(p))
}

// nestingError gives the parser's refusal of parentheses nested past its
// limit MySQL's code for a statement nesting too deeply (1436); other
// errors are returned as they are.
func nestingError(err error) error {
	if strings.Contains(err.Error(), "max nesting level reached") {
		return mysql.NewSQLError(erStackOverrun, mysql.SSUnknownSQLState,
			"Thread stack overrun: the statement nests parentheses too deeply; simplify it")
	}
	return err
}
