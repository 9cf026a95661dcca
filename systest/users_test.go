package systest

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/certusdb/certus/internal/testcluster"
)

// TestUsersReplicate creates, changes and drops an application user on
// one node and logs in with it on the others, which have run no statement
// since they started: users and grants replicate like DDL and reach the
// login, not only sessions that run statements.
func TestUsersReplicate(t *testing.T) {
	c := testcluster.StartCluster(t, 3)
	root := c.Nodes[0].DB("")
	mustExec(t, root, "CREATE DATABASE app")
	mustExec(t, root, "CREATE TABLE app.t (id INT PRIMARY KEY, v INT)")
	mustExec(t, root, "CREATE USER app IDENTIFIED BY 'pw1'")
	mustExec(t, root, "GRANT SELECT, INSERT ON app.* TO app")

	open := func(n *testcluster.Node, pw string, params ...string) *sql.DB {
		db, err := sql.Open("mysql", fmt.Sprintf("app:%s@tcp(%s)/app?timeout=5s%s", pw, n.SQLAddr, strings.Join(params, "")))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	// login waits (briefly: the other nodes apply the change a moment
	// after node 1 commits it) until logging in as app with pw gives the
	// error code want (0: success).
	login := func(n *testcluster.Node, pw string, want uint16) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			db := open(n, pw)
			err := db.Ping()
			db.Close()
			got, _ := mysqlErr(err)
			if err == nil || got == want {
				if (err == nil) == (want == 0) {
					return
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %s: login as app with %s: %v, want error %d", n.Name, pw, err, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	login(c.Nodes[2], "pw1", 0)
	login(c.Nodes[1], "pw1", 0)
	// ALTER USER ... ACCOUNT LOCK / REQUIRE replicate: node 3 refuses the
	// locked account, then takes it back, and wants TLS once it requires it
	mustExec(t, root, "ALTER USER app ACCOUNT LOCK")
	login(c.Nodes[2], "pw1", 1045)
	mustExec(t, root, "ALTER USER app REQUIRE SSL ACCOUNT UNLOCK")
	login(c.Nodes[2], "pw1", 1045) // no TLS
	mustExec(t, root, "ALTER USER app REQUIRE NONE")
	login(c.Nodes[2], "pw1", 0)

	app3 := open(c.Nodes[2], "pw1")
	mustExec(t, app3, "INSERT INTO t VALUES (1, 1)")
	wantErr(t, tryExec(app3, "DELETE FROM t WHERE id = 1"), 1142, "42000")
	if err := tryExec(app3, "DELETE FROM t WHERE id = 1"); err == nil || !strings.HasSuffix(err.Error(), "DELETE command denied to user 'app'@'%' for table 't'") {
		t.Errorf("1142 message %v, want MySQL's with the command and table", err)
	}

	// global variables need SUPER (or SYSTEM_VARIABLES_ADMIN); the
	// session's own do not
	for _, q := range []string{
		"SET GLOBAL max_connections = 7",
		"SET @@global.wsrep_sync_wait = 1",
		"SET SESSION wsrep_sync_wait = 1, GLOBAL wsrep_applier_threads = 2",
		"SET PERSIST wsrep_sync_wait = 1",
	} {
		wantErr(t, tryExec(app3, q), 1227, "42000")
	}
	if v := qInt(t, c.Nodes[2].DB(""), "SELECT @@GLOBAL.max_connections"); v == 7 {
		t.Fatalf("a denied SET GLOBAL changed max_connections")
	}
	for _, q := range []string{
		"SET SESSION wsrep_sync_wait = 1",
		"SET @@session.wsrep_sync_wait = 0",
		"SET @global = 'global'",
		"SET autocommit = 1",
	} {
		mustExec(t, app3, q)
	}
	mustExec(t, c.Nodes[2].DB(""), "SET GLOBAL wsrep_sync_wait = 0")

	// every user sees its own grants; FLUSH STATUS needs RELOAD. The
	// mysql CLI sends every statement as a multi-statement query.
	app3m := open(c.Nodes[2], "pw1", "&multiStatements=true")
	for _, q := range []string{"SHOW GRANTS", "SHOW GRANTS FOR CURRENT_USER", "SHOW GRANTS FOR CURRENT_USER()", "multi:SHOW GRANTS"} {
		db := app3
		if m, ok := strings.CutPrefix(q, "multi:"); ok {
			db, q = app3m, m
		}
		rows, err := db.Query(q)
		if err != nil {
			t.Fatalf("%s as app: %v", q, err)
		}
		var all []string
		for rows.Next() {
			var g string
			if err := rows.Scan(&g); err != nil {
				t.Fatal(err)
			}
			all = append(all, g)
		}
		rows.Close()
		if g := strings.Join(all, "; "); !strings.Contains(g, "GRANT SELECT, INSERT ON `app`.* TO `app`@`%`") {
			t.Fatalf("%s as app: %q", q, g)
		}
	}
	wantErr(t, tryExec(app3, "SHOW GRANTS FOR root@localhost"), 1044, "42000")
	wantErr(t, tryExec(app3, "SELECT * FROM mysql.user"), 1044, "42000")
	wantErr(t, tryExec(app3, "FLUSH STATUS"), 1227, "42000")
	wantErr(t, tryExec(app3, "SHOW ENGINE INNODB STATUS"), 1227, "42000")
	wantErr(t, tryExec(app3m, "SHOW GRANTS; SELECT * FROM mysql.user"), 1044, "42000")

	// KILL: a user's own connections (a JDBC query timeout sends KILL
	// QUERY from a second connection), not another user's
	sleeper := conn(t, app3)
	id := qInt(t, sleeper, "SELECT CONNECTION_ID()")
	start := time.Now()
	slept := goExec(sleeper, "SELECT SLEEP(20)")
	time.Sleep(300 * time.Millisecond)
	mustExec(t, app3, fmt.Sprintf("KILL QUERY %d", id))
	await(t, slept, "the killed SLEEP")
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("KILL QUERY of the user's own statement: it ran %v", d)
	}
	rootConn := conn(t, c.Nodes[2].DB(""))
	rootID := qInt(t, rootConn, "SELECT CONNECTION_ID()")
	wantErr(t, tryExec(app3, fmt.Sprintf("KILL QUERY %d", rootID)), 1095, "HY000")
	// the process list shows app its own connections only; root all
	if n := qInt(t, app3, "SELECT COUNT(*) FROM information_schema.processlist WHERE user <> 'app'"); n != 0 {
		t.Fatalf("app sees %d connections of other users in the process list", n)
	}
	if n := qInt(t, rootConn, "SELECT COUNT(*) FROM information_schema.processlist WHERE user = 'app'"); n == 0 {
		t.Fatalf("root does not see app's connections in the process list")
	}
	// and so does SHOW [FULL] PROCESSLIST, which needs no privilege
	for _, db := range []*sql.DB{app3, app3m} {
		for _, q := range []string{"SHOW PROCESSLIST", "SHOW FULL PROCESSLIST"} {
			r, err := runStmt(context.Background(), conn(t, db), true, q)
			if err != nil || r.Err != 0 || len(r.Cols) != 8 || !strings.HasPrefix(r.Cols[0], "Id:") || !strings.HasPrefix(r.Cols[7], "Info:") {
				t.Fatalf("%s as app: %v, %+v", q, err, r)
			}
			mine := false
			for _, r := range r.Rows {
				if r[1] != "'app'" { // runStmt quotes values
					t.Fatalf("%s as app shows a connection of %s", q, r[1])
				}
				mine = mine || r[7] == "'"+q+"'"
			}
			if !mine {
				t.Fatalf("%s as app does not show itself: %v", q, r.Rows)
			}
		}
	}
	wantErr(t, tryExec(app3, "KILL 987654"), 1094, "HY000")
	wantErr(t, tryExec(app3m, "KILL 987654"), 1094, "HY000")
	mustExec(t, app3, fmt.Sprintf("KILL CONNECTION %d", id))
	if err := sleeper.PingContext(context.Background()); err == nil {
		t.Fatalf("the connection survived KILL CONNECTION")
	}

	mustExec(t, c.Nodes[1].DB(""), "ALTER USER app IDENTIFIED BY 'pw2'")
	login(c.Nodes[2], "pw1", 1045)
	login(c.Nodes[2], "pw2", 0)

	// a user changes its own password without privileges, in each of
	// MySQL's forms, and the change reaches the other nodes; another
	// account's password needs CREATE USER
	mustExec(t, root, "CREATE USER bob IDENTIFIED BY 'b'")
	for i, q := range []string{
		"SET PASSWORD = 'own1'",
		"SET PASSWORD FOR CURRENT_USER() = 'own2'",
		"ALTER USER USER() IDENTIFIED BY 'own3'",
		"ALTER USER CURRENT_USER IDENTIFIED BY 'pw2'",
	} {
		before := []string{"pw2", "own1", "own2", "own3"}[i]
		mustExec(t, open(c.Nodes[2], before), q)
		after := []string{"own1", "own2", "own3", "pw2"}[i]
		login(c.Nodes[1], after, 0)
		login(c.Nodes[1], before, 1045)
	}
	app1 := open(c.Nodes[1], "pw2")
	wantErr(t, tryExec(app1, "SET PASSWORD FOR bob = 'x'"), 1227, "42000")
	// only the password: not another account in the same statement
	if err := tryExec(app1, "ALTER USER USER() IDENTIFIED BY 'pw2', bob IDENTIFIED BY 'x'"); err == nil {
		t.Fatal("ALTER USER USER() with a second account succeeded")
	}
	mustExec(t, root, "SET PASSWORD FOR bob = 'b2'")
	mustExec(t, root, "DROP USER bob")

	// a REVOKE reaches a session already logged in on another node
	s := conn(t, open(c.Nodes[2], "pw2"))
	xexec(t, s, "INSERT INTO t VALUES (2, 2)")
	mustExec(t, root, "REVOKE INSERT ON app.* FROM app")
	awaitApplied(t, c)
	wantErr(t, tryExec(s, "INSERT INTO t VALUES (3, 3)"), 1142, "42000")

	mustExec(t, root, "DROP USER app")
	login(c.Nodes[1], "pw2", 1045)
	login(c.Nodes[2], "pw2", 1045)
}

// TestShowCreateUser: SHOW CREATE USER prints the statement that makes the
// account again, password hash included, as MySQL 8.0 does (mysqldump
// --system=users and backup tools run it): an account dropped and made
// again from it logs in with its old password. A user sees its own
// account only, without SELECT on the mysql schema or CREATE USER.
func TestShowCreateUser(t *testing.T) {
	n, root := startNode(t, "showuser1", "")
	mustExec(t, root, "CREATE USER 'app'@'%' IDENTIFIED BY 'pw1'")
	mustExec(t, root, "CREATE USER 'sha'@'%' IDENTIFIED WITH caching_sha2_password BY 'pw2'")
	mustExec(t, root, "CREATE USER 'o''k'@'10.%' IDENTIFIED BY 'x' REQUIRE SSL")
	show := func(db *sql.DB, account string) string {
		t.Helper()
		var stmt string
		if err := db.QueryRow("SHOW CREATE USER " + account).Scan(&stmt); err != nil {
			t.Fatalf("SHOW CREATE USER %s: %v", account, err)
		}
		return stmt
	}
	if got := show(root, "'o''k'@'10.%'"); !strings.HasPrefix(got, "CREATE USER `o'k`@`10.%` IDENTIFIED WITH 'mysql_native_password' AS '*") ||
		!strings.Contains(got, " REQUIRE SSL ") {
		t.Errorf("SHOW CREATE USER 'o''k'@'10.%%' = %s", got)
	}
	for _, u := range []struct{ account, name, pw string }{{"app", "app", "pw1"}, {"sha@'%'", "sha", "pw2"}} {
		stmt := show(root, u.account)
		mustExec(t, root, "DROP USER "+u.account)
		mustExec(t, root, stmt)
		db := userDB(t, n, u.name, u.pw, "")
		if err := db.Ping(); err != nil {
			t.Fatalf("%s made again from %q: %v", u.account, stmt, err)
		}
		if again := show(root, u.account); again != stmt {
			t.Errorf("made again, %s shows %q, was %q", u.account, again, stmt)
		}
	}
	app := userDB(t, n, "app", "pw1", "")
	show(app, "CURRENT_USER()")
	show(app, "app@'%'")
	wantErr(t, tryExec(app, "SHOW CREATE USER root@localhost"), 1142, "42000")
	wantErr(t, tryExec(root, "SHOW CREATE USER nobody"), 1396, "HY000")
	// go-mysql-server would make the account unlocked: refused instead
	// (ALTER USER ... ACCOUNT LOCK locks an account: TestUsersReplicate)
	wantErr(t, tryExec(root, "CREATE USER lk IDENTIFIED BY 'x' ACCOUNT LOCK"), 1235, "42000")
	wantErr(t, tryExec(root, "SHOW CREATE USER lk"), 1396, "HY000")
}
