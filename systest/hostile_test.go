package systest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/certusdb/certus/internal/testcluster"
)

// The attacks of a hostile SQL user and of hostile bytes on one node:
// each gets MySQL's answer, changes nothing and leaves the node serving
// (issue #48). TestHostileUser is what a logged-in user tries,
// TestHostileClients what a client tries before and around its login.

// hostileNode starts a node with an application schema, a secret in
// another schema, and the user u (SELECT, INSERT on app.* only). It
// returns the node, root's pool and u's.
func hostileNode(t *testing.T, name string) (*testcluster.Node, *sql.DB, *sql.DB) {
	t.Helper()
	n, root := startNode(t, name, "")
	for _, q := range []string{
		"CREATE DATABASE app",
		"CREATE TABLE app.t (id INT PRIMARY KEY, v INT)",
		"INSERT INTO app.t VALUES (1, 10), (2, 20)",
		"CREATE DATABASE sec",
		"CREATE TABLE sec.s (id INT PRIMARY KEY, secret VARCHAR(64))",
		"INSERT INTO sec.s VALUES (1, 'TOPSECRET')",
		"CREATE USER u IDENTIFIED BY 'pw'",
		"GRANT SELECT, INSERT ON app.* TO u",
	} {
		mustExec(t, root, q)
	}
	return n, root, userDB(t, n, "u", "pw", "app")
}

// userDB is a pool of user's sessions on n.
func userDB(t *testing.T, n *testcluster.Node, user, pw, db string) *sql.DB {
	t.Helper()
	p, err := sql.Open("mysql", fmt.Sprintf("%s:%s@tcp(%s)/%s?timeout=5s&readTimeout=60s&writeTimeout=60s", user, pw, n.SQLAddr, db))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// untouched checks that the data hostileNode made is as it was and that
// the node serves root as before.
func untouched(t *testing.T, n *testcluster.Node, root *sql.DB) {
	t.Helper()
	if !n.Running() {
		t.Fatalf("the node died:\n%s", n.LogTail(40))
	}
	c := conn(t, root)
	wantRows(t, "app.t", qLines(t, c, "SELECT id, v FROM app.t ORDER BY id"), []string{"1|10", "2|20"})
	wantRows(t, "sec.s", qLines(t, c, "SELECT id, secret FROM sec.s"), []string{"1|TOPSECRET"})
	if v := qStr(t, c, "SELECT @@GLOBAL.wsrep_reject_queries"); v != "NONE" {
		t.Fatalf("wsrep_reject_queries = %s", v)
	}
	if v := qInt(t, c, "SELECT @@GLOBAL.max_connections"); v != 151 {
		t.Fatalf("max_connections = %d", v)
	}
}

// refused runs q on e and requires MySQL error code.
func refused(t *testing.T, e execer, q string, code uint16) {
	t.Helper()
	err := tryExec(e, q)
	if got, _ := mysqlErr(err); got != code {
		if len(q) > 80 {
			q = q[:80] + "..."
		}
		t.Fatalf("%s: %s, want error %d", q, errDesc(err), code)
	}
}

func TestHostileUser(t *testing.T) {
	n, root, u := hostileNode(t, "hostile1")

	t.Run("DeepExpression", func(t *testing.T) {
		// a million terms overflowed the planner's stack and ended the
		// process; a statement nesting that deep is refused before planning
		c := conn(t, u)
		refused(t, c, "SELECT 1"+strings.Repeat("+1", 1_000_000), 1436)
		refused(t, c, "SELECT * FROM t WHERE "+strings.Repeat("NOT ", 100_000)+"id = 1", 1436)
		refused(t, c, "SELECT "+strings.Repeat("(", 5000)+"1"+strings.Repeat(")", 5000), 1436)
		// a long flat list is no deeper than one
		if v := qInt(t, c, "SELECT COUNT(*) FROM t WHERE id IN (0"+strings.Repeat(",1", 50_000)+")"); v != 1 {
			t.Fatalf("IN list: %d", v)
		}
		if v := qInt(t, c, "SELECT 1"+strings.Repeat("+1", 500)); v != 501 {
			t.Fatalf("500 additions = %d", v)
		}
	})

	t.Run("HugeResults", func(t *testing.T) {
		// REPEAT('a', 4294967295) allocated 2 GiB, stalled the raft loop
		// and panicked; results past max_allowed_packet are NULL with
		// warning 1301, as in MySQL
		c := conn(t, u)
		before := vmHWM(t, n.PID())
		for _, q := range []string{
			"SELECT REPEAT('a', 4294967295)",
			"SELECT SPACE(4294967295)",
			"SELECT LPAD('a', 4294967295, 'b')",
			"SELECT CONCAT(REPEAT('a', 40000000), REPEAT('b', 40000000))",
			"SELECT REPLACE(REPEAT('a', 1000000), 'a', REPEAT('b', 1000))",
		} {
			var v sql.NullString
			if err := c.QueryRowContext(context.Background(), q).Scan(&v); err != nil || v.Valid {
				t.Fatalf("%s: %v, valid %v; want NULL", q, err, v.Valid)
			}
			if code := qInt(t, c, "SELECT @@warning_count"); code != 1 {
				t.Fatalf("%s: %d warnings, want 1301", q, code)
			}
		}
		if v := qInt(t, c, "SELECT LENGTH(REPEAT('ab', 1000000))"); v != 2000000 {
			t.Fatalf("REPEAT within max_allowed_packet: %d bytes", v)
		}
		if after := vmHWM(t, n.PID()); after > before+256<<20 {
			t.Fatalf("peak RSS grew from %d to %d MiB", before>>20, after>>20)
		}
	})

	t.Run("Recursion", func(t *testing.T) {
		c := conn(t, root)
		xexec(t, c, "USE app")
		xexec(t, c, "CREATE PROCEDURE p1() BEGIN EXECUTE stmt; END")
		xexec(t, c, `PREPARE stmt FROM 'CALL p1()'`)
		refused(t, c, "EXECUTE stmt", 1444)
		xexec(t, c, "CREATE PROCEDURE down(n INT) BEGIN IF n > 0 THEN CALL down(n - 1); END IF; END")
		xexec(t, c, "CALL down(0)")
		refused(t, c, "CALL down(1)", 1456) // max_sp_recursion_depth is 0
		xexec(t, c, "SET max_sp_recursion_depth = 255")
		refused(t, c, "CALL down(100000)", 1456)
		xexec(t, c, "CREATE VIEW v1 AS SELECT 1 AS a")
		xexec(t, c, "CREATE VIEW v2 AS SELECT * FROM v1")
		xexec(t, c, "CREATE OR REPLACE VIEW v1 AS SELECT * FROM v2")
		refused(t, c, "SELECT * FROM v1", 1462)
		refused(t, c, "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT COUNT(*) FROM r", 3636)
		if v := qInt(t, c, "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 1000) SELECT COUNT(*) FROM r"); v != 1000 {
			t.Fatalf("a recursion of cte_max_recursion_depth: %d rows", v)
		}
		xexec(t, c, "SET cte_max_recursion_depth = 5000")
		if v := qInt(t, c, "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3000) SELECT COUNT(*) FROM r"); v != 3000 {
			t.Fatalf("a recursion of 3000: %d rows", v)
		}
	})

	t.Run("Files", func(t *testing.T) {
		c := conn(t, u)
		// without FILE: LOAD_FILE is NULL, writing and loading files 1045
		if v := qInt(t, c, "SELECT LOAD_FILE('/etc/passwd') IS NULL"); v != 1 {
			t.Fatal("u read /etc/passwd")
		}
		refused(t, c, "SELECT 1 INTO OUTFILE 'u.txt'", 1045)
		refused(t, c, "LOAD DATA INFILE '/etc/passwd' INTO TABLE t", 1045)

		// root has FILE, within secure_file_priv (the data dir's files/)
		r := conn(t, root)
		dir := qStr(t, r, "SELECT @@secure_file_priv")
		if want, _ := filepath.EvalSymlinks(filepath.Join(n.DataDir, "files")); dir != want {
			t.Fatalf("secure_file_priv = %q, want %q", dir, want)
		}
		for _, f := range []string{"/etc/passwd", fmt.Sprintf("/proc/%d/fd/3", n.PID()), "../LOCK", filepath.Join(dir, "..", "LOCK")} {
			if v := qInt(t, r, "SELECT LOAD_FILE(?) IS NULL", f); v != 1 {
				t.Fatalf("root read %s outside secure_file_priv", f)
			}
		}
		refused(t, r, "SELECT 1 INTO OUTFILE '/tmp/certus-hostile.txt'", 1290)
		refused(t, r, "LOAD DATA INFILE '/etc/passwd' INTO TABLE app.t", 1290)
		xexec(t, r, "SELECT id, v FROM app.t INTO OUTFILE 'rows.txt'")
		refused(t, r, "SELECT id, v FROM app.t INTO OUTFILE 'rows.txt'", 1086)
		if got := qStr(t, r, "SELECT LOAD_FILE('rows.txt')"); got != "1\t10\n2\t20\n" {
			t.Fatalf("LOAD_FILE of the file written: %q", got)
		}
		if err := os.Symlink("/etc/passwd", filepath.Join(dir, "link")); err != nil {
			t.Fatal(err)
		}
		if v := qInt(t, r, "SELECT LOAD_FILE('link') IS NULL"); v != 1 {
			t.Fatal("a symbolic link out of secure_file_priv was followed")
		}
	})

	t.Run("SetGlobal", func(t *testing.T) {
		// the statement is checked as parsed, with the session's sql_mode:
		// with ANSI_QUOTES a quoted variable name is still a variable
		c := conn(t, u)
		xexec(t, c, "SET sql_mode = 'ANSI_QUOTES'")
		for _, q := range []string{
			`SET GLOBAL "wsrep_reject_queries" = 'ALL'`,
			"SET GLOBAL max_connections = 20",
			"SET @@GLOBAL.wsrep_desync = ON",
			"SET @@global.max_allowed_packet = 1024",
			"SET PERSIST wsrep_reject_queries = 'ALL'",
			"SET SESSION wait_timeout = 10, GLOBAL wsrep_reject_queries = 'ALL'",
		} {
			refused(t, c, q, 1227)
		}
		xexec(t, c, "SET SESSION wait_timeout = 100") // a session's own is its own
		refused(t, c, `PREPARE s FROM 'SET GLOBAL max_connections = 20'`, 1227)
	})

	t.Run("PrivilegeAudit", func(t *testing.T) {
		// what changes the node's or the cluster's state, or reads what
		// is not u's, needs the privilege MySQL asks for it
		rootID := qInt(t, conn(t, root), "SELECT CONNECTION_ID()")
		c := conn(t, u)
		for _, a := range []struct {
			q    string
			code uint16
		}{
			{"FLUSH STATUS", 1227}, {"FLUSH LOGS", 1227}, {"FLUSH PRIVILEGES", 1044}, {"FLUSH TABLES", 1044},
			{"SHOW ENGINE INNODB STATUS", 1227},
			{fmt.Sprintf("KILL %d", rootID), 1095}, {fmt.Sprintf("KILL QUERY %d", rootID), 1095},
			{"CHANGE REPLICATION SOURCE TO SOURCE_HOST = '127.0.0.1'", 1142}, {"START REPLICA", 1142}, {"RESET REPLICA", 1142},
			{"CREATE USER v IDENTIFIED BY 'x'", 1142}, {"GRANT ALL ON *.* TO u", 1142}, {"DROP USER root@localhost", 1142},
			{"SET PASSWORD FOR root@localhost = 'x'", 1227}, {"ALTER USER root@localhost IDENTIFIED BY 'x'", 1142},
			{"RENAME USER u TO w", 1142}, {"CREATE ROLE r1", 1142},
			{"SET GLOBAL TRANSACTION ISOLATION LEVEL SERIALIZABLE", 1227}, {"SET @@GLOBAL.autocommit = 0", 1227},
			{"SET GLOBAL wsrep_provider_options = 'gcs.fc_limit=1'", 1227}, {"SET GLOBAL wsrep_applier_threads = 8", 1227},
			{"SET sql_log_bin = 0", 1227}, {"SET SESSION wsrep_on = OFF", 1227},
			{"LOCK TABLES t WRITE", 1142}, {"SELECT * FROM t FOR UPDATE", 1142}, {"SELECT * FROM t LOCK IN SHARE MODE", 1142},
			{"CHECKSUM TABLE sec.s", 1044}, {"CHECK TABLE sec.s", 1044}, {"SELECT * FROM sec.s", 1044},
			{"DROP DATABASE sec", 1044}, {"CREATE DATABASE x", 1044}, {"DELETE FROM t", 1142}, {"UPDATE t SET v = 0", 1142},
			{"CREATE EVENT e ON SCHEDULE EVERY 1 HOUR DO DELETE FROM t", 1142}, {"CREATE PROCEDURE pp() SELECT 1", 1142},
			{"SELECT * FROM mysql.user", 1044}, {"SHOW GRANTS FOR root@localhost", 1044},
		} {
			refused(t, c, a.q, a.code)
		}
	})

	t.Run("StopAStatement", func(t *testing.T) {
		r := conn(t, root)
		xexec(t, r, "CREATE TABLE app.big (id INT PRIMARY KEY)")
		xexec(t, r, "INSERT INTO app.big WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 1000) SELECT n FROM s")
		// a billion rows: minutes, unless stopped
		const cross = "SELECT COUNT(*) FROM big a, big b, big c"
		c, killer := conn(t, u), conn(t, u)
		id := qInt(t, c, "SELECT CONNECTION_ID()")
		done := goExec(c, cross)
		for deadline := time.Now().Add(opTimeout); ; time.Sleep(20 * time.Millisecond) {
			if qInt(t, killer, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE id = ? AND info LIKE 'SELECT COUNT%'", id) == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the statement never showed in the process list")
			}
		}
		xexec(t, killer, fmt.Sprintf("KILL QUERY %d", id))
		o := await(t, done, "the killed statement")
		checkErr(t, o.err, 1317, "70100", "KILL QUERY")
		t.Logf("stopped %v after it began", o.dur)
		if v := qInt(t, c, "SELECT COUNT(*) FROM t"); v != 2 {
			t.Fatalf("the session after KILL QUERY: %d", v)
		}
		xexec(t, c, "SET SESSION max_execution_time = 200")
		refused(t, c, cross, 3024)
		xexec(t, c, "SET SESSION max_execution_time = 0")
		refused(t, c, "SELECT /*+ MAX_EXECUTION_TIME(200) */ COUNT(*) FROM big a, big b, big c", 3024)
	})

	t.Run("InvalidUTF8", func(t *testing.T) {
		c := conn(t, root)
		refused(t, c, "SELECT `\xff\xfe` FROM app.t", 1300)
		refused(t, c, "CREATE TABLE app.`t\xff` (a INT)", 1300)
		refused(t, c, "SELECT 1 AS `\xc3\x28`", 1300)
		xexec(t, c, "CREATE TABLE app.s (id INT PRIMARY KEY, c VARCHAR(10))")
		refused(t, c, "INSERT INTO app.s VALUES (1, '\xff\xfe')", 1366) // strict mode
	})

	t.Run("NoDatabaseSelected", func(t *testing.T) {
		c := conn(t, root)
		xexec(t, c, "CREATE TABLE app.k (id INT PRIMARY KEY)")
		xexec(t, c, "INSERT INTO app.k VALUES (1), (2)")
		xexec(t, c, "CREATE VIEW app.kv AS SELECT * FROM app.k")
		// a view is not a table: TRUNCATE of it emptied its base table
		refused(t, c, "TRUNCATE TABLE app.kv", 1146)
		refused(t, c, "TRUNCATE app.kv", 1146)
		if v := qInt(t, c, "SELECT COUNT(*) FROM app.k"); v != 2 {
			t.Fatalf("app.k after TRUNCATE of its view: %d rows", v)
		}
		if r := xexec(t, c, "DELETE FROM app.k"); must(r.RowsAffected()) != 2 {
			t.Fatal("DELETE FROM app.k with no database selected did not delete 2 rows")
		}
	})
	untouched(t, n, root)
}

// must returns v, ignoring err (for RowsAffected, which MySQL drivers
// always answer).
func must(v int64, _ error) int64 { return v }

// dialIdle opens k connections to addr that send nothing.
func dialIdle(t *testing.T, addr string, k int) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, 0, k)
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for range k {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	return conns
}

// waitSessions waits until the node holds at most k sessions of user (""
// any user): those the client closed end on the node a little later.
func waitSessions(t *testing.T, r *sql.Conn, user string, k int64) {
	t.Helper()
	q := "SELECT COUNT(*) FROM information_schema.processlist WHERE user = '" + user + "' OR '" + user + "' = ''"
	deadline := time.Now().Add(10 * time.Second)
	for qInt(t, r, q) > k {
		if time.Now().After(deadline) {
			t.Fatalf("the node still holds more than %d sessions of %q", k, user)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// closedByServer waits until the server closed c (a read ends in EOF or a
// reset rather than its deadline).
func closedByServer(c net.Conn, within time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(within))
	buf := make([]byte, 4096)
	for {
		if _, err := c.Read(buf); err != nil {
			var ne net.Error
			return !(errors.As(err, &ne) && ne.Timeout())
		}
	}
}

func TestHostileClients(t *testing.T) {
	n, root, _ := hostileNode(t, "hostile2")
	r := conn(t, root)

	t.Run("LoginFlood", func(t *testing.T) {
		// 200 clients that announce a 16 MiB handshake response and send
		// 1 MiB of it took the node to its memory limit; a login packet
		// is refused from its header now
		before := vmHWM(t, n.PID())
		sent := 0
		for _, c := range dialIdle(t, n.SQLAddr, 200) {
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := c.Read(make([]byte, 1024)); err != nil { // greeting
				// past max_connections (151) logging in, the node closes
				// the oldest, sometimes before its greeting went out
				continue
			}
			l := 1<<24 - 1
			_, _ = c.Write(append([]byte{byte(l), byte(l >> 8), byte(l >> 16), 1}, make([]byte, 1<<20)...))
			sent++
		}
		if sent < 100 {
			t.Fatalf("only %d of 200 clients got a greeting", sent)
		}
		if v := qInt(t, conn(t, root), "SELECT COUNT(*) FROM app.t"); v != 2 {
			t.Fatal("a client during the flood")
		}
		after := vmHWM(t, n.PID())
		t.Logf("peak RSS %d MiB before the flood, %d MiB after", before>>20, after>>20)
		if after > before+200<<20 {
			t.Fatalf("the flood grew the node's peak RSS by %d MiB", (after-before)>>20)
		}
	})

	t.Run("IdleSockets", func(t *testing.T) {
		// sockets that connect and never send: closed after
		// connect_timeout, and new logins go on meanwhile
		xexec(t, r, "SET GLOBAL connect_timeout = 2")
		defer xexec(t, r, "SET GLOBAL connect_timeout = 10")
		idle := dialIdle(t, n.SQLAddr, 500)
		for range 5 {
			if v := qInt(t, conn(t, root), "SELECT COUNT(*) FROM app.t"); v != 2 {
				t.Fatal("a client among the idle sockets")
			}
		}
		open := 0
		for _, c := range idle {
			if !closedByServer(c, 30*time.Second) {
				open++
			}
		}
		if open > 0 {
			t.Fatalf("%d of %d idle sockets still open", open, len(idle))
		}
	})

	t.Run("MaxConnections", func(t *testing.T) {
		xexec(t, r, "SET GLOBAL max_connections = 4")
		defer xexec(t, r, "SET GLOBAL max_connections = 151")
		// logged in now: r alone (root's pool keeps no idle connection)
		root.SetMaxIdleConns(0)
		waitSessions(t, r, "", 1)
		u := userDB(t, n, "u", "pw", "app")
		for range 3 {
			conn(t, u)
		}
		err := userDB(t, n, "u", "pw", "app").Ping()
		if code, _ := mysqlErr(err); code != 1040 {
			t.Fatalf("a fifth connection of a user: %s, want 1040", errDesc(err))
		}
		admin := userDB(t, n, "root", "", "")
		admin.SetMaxOpenConns(2)
		a := conn(t, admin) // the one kept for an administrator
		if v := qInt(t, a, "SELECT 1"); v != 1 {
			t.Fatal("the administrator's connection")
		}
		if code, _ := mysqlErr(userDB(t, n, "root", "", "").Ping()); code != 1040 {
			t.Fatal("a connection past the administrator's was accepted")
		}
	})

	t.Run("MaxUserConnections", func(t *testing.T) {
		xexec(t, r, "SET GLOBAL max_user_connections = 2")
		defer xexec(t, r, "SET GLOBAL max_user_connections = 0")
		waitSessions(t, r, "u", 0)
		u := userDB(t, n, "u", "pw", "app")
		conn(t, u)
		conn(t, u)
		if code, _ := mysqlErr(userDB(t, n, "u", "pw", "app").Ping()); code != 1203 {
			t.Fatal("a third connection of u was accepted")
		}
		if v := qInt(t, conn(t, root), "SELECT 1"); v != 1 {
			t.Fatal("root, another user")
		}
	})

	t.Run("MaxAllowedPacket", func(t *testing.T) {
		xexec(t, r, "SET GLOBAL max_allowed_packet = 1048576")
		defer xexec(t, r, "SET GLOBAL max_allowed_packet = 67108864")
		rc, _ := dialProto(t, n.SQLAddr, capProtocol41|capSecureConn|capPluginAuth|capTransactions)
		defer rc.c.Close()
		// announce a 2 MiB COM_QUERY and send a little of it: refused
		// from the header, before the rest is read
		l := 2 << 20
		if _, err := rc.c.Write([]byte{byte(l), byte(l >> 8), byte(l >> 16), 0, 3, 'S'}); err != nil {
			t.Fatal(err)
		}
		p, err := rc.readPacket()
		if err != nil || p[0] != 0xff || int(p[1])|int(p[2])<<8 != 1153 {
			t.Fatalf("a packet over max_allowed_packet: %q %v, want error 1153", p, err)
		}
		if !closedByServer(rc.c, 10*time.Second) {
			t.Fatal("the connection stayed open")
		}
	})

	t.Run("WaitTimeout", func(t *testing.T) {
		c := conn(t, root)
		xexec(t, c, "SET SESSION wait_timeout = 1")
		time.Sleep(3 * time.Second)
		if err := tryExec(c, "SELECT 1"); err == nil {
			t.Fatal("a session idle past its wait_timeout was still open")
		}
	})
	untouched(t, n, root)
}
