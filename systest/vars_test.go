package systest

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestWsrepVariablesAndHTTP checks the Galera-compatible system and status
// variables and the HTTP endpoints of a single node.
func TestWsrepVariablesAndHTTP(t *testing.T) {
	n, db := startNode(t, "vars1", "v", "--cluster-name", "vcluster")
	xexec(t, db, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")

	t.Run("ShowVariables", func(t *testing.T) {
		vars := qMap(t, db, "SHOW VARIABLES LIKE 'wsrep%'")
		want := map[string]string{
			"wsrep_on":                "ON",
			"wsrep_node_name":         n.Name,
			"wsrep_cluster_name":      "vcluster",
			"wsrep_sync_wait":         "0",
			"wsrep_retry_autocommit":  "1",
			"wsrep_trx_fragment_unit": "bytes",
			"wsrep_trx_fragment_size": "0",
			"wsrep_applier_threads":   "",
			"wsrep_slave_threads":     "",
			"wsrep_provider_options":  "",
		}
		for k, v := range want {
			got, ok := vars[k]
			if !ok {
				t.Errorf("SHOW VARIABLES LIKE 'wsrep%%' has no %s", k)
				continue
			}
			if v != "" && got != v {
				t.Errorf("%s = %q, want %q", k, got, v)
			}
		}
		for _, k := range []string{"wsrep_applier_threads", "wsrep_slave_threads"} {
			if x, err := strconv.Atoi(vars[k]); err != nil || x < 1 {
				t.Errorf("%s = %q, want a positive number", k, vars[k])
			}
		}
		t.Logf("wsrep_provider_options = %q", vars["wsrep_provider_options"])
		if got := qStr(t, db, "SELECT @@wsrep_node_name"); got != n.Name {
			t.Errorf("@@wsrep_node_name = %q, want %q", got, n.Name)
		}
		if got := qInt(t, db, "SELECT @@GLOBAL.wsrep_on"); got != 1 {
			t.Errorf("@@GLOBAL.wsrep_on = %d, want 1", got)
		}
	})

	t.Run("ShowGlobalStatus", func(t *testing.T) {
		st := qMap(t, db, "SHOW GLOBAL STATUS LIKE 'wsrep%'")
		want := map[string]string{
			"wsrep_ready":               "ON",
			"wsrep_cluster_size":        "1",
			"wsrep_cluster_status":      "Primary",
			"wsrep_local_state_comment": "Synced",
			"wsrep_connected":           "ON",
			"wsrep_local_state":         "4",
		}
		for k, v := range want {
			if got, ok := st[k]; !ok {
				t.Errorf("SHOW GLOBAL STATUS LIKE 'wsrep%%' has no %s", k)
			} else if got != v {
				t.Errorf("%s = %q, want %q", k, got, v)
			}
		}
		lastCommitted := func() int64 {
			m := qMap(t, db, "SHOW GLOBAL STATUS LIKE 'wsrep_last_committed'")
			v, err := strconv.ParseInt(m["wsrep_last_committed"], 10, 64)
			if err != nil {
				t.Fatalf("wsrep_last_committed = %q: %v", m["wsrep_last_committed"], err)
			}
			return v
		}
		before := lastCommitted()
		xexec(t, db, "INSERT INTO t VALUES (1, 1)")
		after := lastCommitted()
		if after <= before {
			t.Errorf("wsrep_last_committed went from %d to %d across a committed write, want an increase", before, after)
		}
		xexec(t, db, "UPDATE t SET v = 2 WHERE id = 1")
		if again := lastCommitted(); again <= after {
			t.Errorf("wsrep_last_committed went from %d to %d across a second write, want an increase", after, again)
		}
	})

	// the same values as tables, as monitoring tools read them:
	// performance_schema (MySQL 8) and information_schema (MariaDB)
	t.Run("StatusAndVariableTables", func(t *testing.T) {
		c := conn(t, db)
		for _, tc := range []struct{ q, want string }{
			{"SELECT VARIABLE_VALUE FROM performance_schema.global_status WHERE VARIABLE_NAME = 'wsrep_local_state_comment'", "Synced"},
			{"SELECT VARIABLE_VALUE FROM performance_schema.session_status WHERE VARIABLE_NAME = 'wsrep_cluster_status'", "Primary"},
			{"SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'wsrep_local_state'", "4"},
			{"SELECT VARIABLE_NAME FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'wsrep_ready'", "WSREP_READY"},
			{"SELECT VARIABLE_VALUE FROM performance_schema.global_variables WHERE VARIABLE_NAME = 'wsrep_on'", "ON"},
			{"SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_VARIABLES WHERE VARIABLE_NAME = 'WSREP_NODE_NAME'", n.Name},
		} {
			if got := qStr(t, c, tc.q); got != tc.want {
				t.Errorf("%s: %q, want %q", tc.q, got, tc.want)
			}
		}
		xexec(t, c, "SET SESSION wsrep_sync_wait = 3")
		if got := qStr(t, c, "SELECT VARIABLE_VALUE FROM performance_schema.session_variables WHERE VARIABLE_NAME = 'wsrep_sync_wait'"); got != "3" {
			t.Errorf("session_variables shows wsrep_sync_wait %q after SET SESSION 3", got)
		}
		if got := qStr(t, c, "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_VARIABLES WHERE VARIABLE_NAME = 'wsrep_sync_wait'"); got != "0" {
			t.Errorf("GLOBAL_VARIABLES shows wsrep_sync_wait %q, want the global 0", got)
		}
		// a global-only variable reads its global value in every session
		xexec(t, c, "SET GLOBAL max_connections = 321")
		defer xexec(t, c, "SET GLOBAL max_connections = DEFAULT")
		if got := qInt(t, c, "SELECT @@max_connections"); got != 321 {
			t.Errorf("@@max_connections = %d after SET GLOBAL 321", got)
		}
		if got := qStr(t, c, "SELECT VARIABLE_VALUE FROM performance_schema.session_variables WHERE VARIABLE_NAME = 'max_connections'"); got != "321" {
			t.Errorf("session_variables shows max_connections %q after SET GLOBAL 321", got)
		}
		r, err := runStmt(context.Background(), c, true, "SHOW ENGINE INNODB STATUS")
		if err != nil || r.Err != 0 || len(r.Rows) != 1 || r.Rows[0][0] != "'InnoDB'" || !strings.Contains(r.Rows[0][2], "pebble") {
			t.Errorf("SHOW ENGINE INNODB STATUS: %v %+v", err, r)
		}
		wantErr(t, tryExec(c, "DROP DATABASE performance_schema"), 1044, "42000")
		wantErr(t, tryExec(c, "CREATE DATABASE performance_schema"), 1007, "HY000")
	})

	t.Run("SyncWaitSelect", func(t *testing.T) {
		c := conn(t, db)
		xexec(t, c, "SET SESSION wsrep_sync_wait = 1")
		if v := qInt(t, c, "SELECT @@SESSION.wsrep_sync_wait"); v != 1 {
			t.Fatalf("@@SESSION.wsrep_sync_wait = %d, want 1", v)
		}
		xexec(t, db, "INSERT INTO t VALUES (2, 20)")
		if v := qInt(t, c, "SELECT v FROM t WHERE id = 2"); v != 20 {
			t.Fatalf("SELECT under wsrep_sync_wait=1 read v = %d, want 20", v)
		}
		if c := qInt(t, c, "SELECT COUNT(*) FROM t"); c != 2 {
			t.Fatalf("COUNT(*) under wsrep_sync_wait=1 = %d, want 2", c)
		}
		// and the global default is untouched
		if v := qInt(t, db, "SELECT @@GLOBAL.wsrep_sync_wait"); v != 0 {
			t.Fatalf("@@GLOBAL.wsrep_sync_wait = %d, want 0", v)
		}
	})

	// the handler answers the proxy's wait for a GTID itself: the same
	// answer as the function's through go-mysql-server
	t.Run("SyncWaitUptoGTID", func(t *testing.T) {
		fast, slow := fastPathPair(t, db)
		gtid := qStr(t, fast, "SELECT WSREP_LAST_SEEN_GTID()")
		uuid := gtid[:strings.LastIndexByte(gtid, ':')]
		for _, q := range []string{
			"SELECT WSREP_SYNC_WAIT_UPTO_GTID('" + gtid + "')",
			"select wsrep_sync_wait_upto_gtid( '" + gtid + "' , 1.000 );",
			"SELECT WSREP_SYNC_WAIT_UPTO_GTID('" + uuid + ":1-3', 2)",
			"SELECT WSREP_SYNC_WAIT_UPTO_GTID('" + uuid + ":99999999', 0.2)", // not reached: 1205
			"SELECT WSREP_SYNC_WAIT_UPTO_GTID('bad', 1)",                     // the function's error
		} {
			a, errA := runStmt(context.Background(), fast, true, q)
			b, errB := runStmt(context.Background(), slow, true, q)
			if errA != nil || errB != nil || !reflect.DeepEqual(a, b) {
				t.Errorf("%s\nhandler: %+v %v\ngeneral: %+v %v", q, a, errA, b, errB)
			}
		}
	})

	client := &http.Client{Timeout: 10 * time.Second}
	get := func(t *testing.T, path string) (int, string) {
		t.Helper()
		resp, err := client.Get("http://" + n.HTTPAddr + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		return resp.StatusCode, string(b)
	}

	t.Run("HTTPHealth", func(t *testing.T) {
		code, body := get(t, "/health")
		if code != 200 {
			t.Fatalf("/health = %d %q, want 200", code, body)
		}
		if !strings.Contains(body, "Synced") {
			t.Errorf("/health body %q does not say Synced", body)
		}
	})

	t.Run("HTTPStatus", func(t *testing.T) {
		st, err := n.Status()
		if err != nil {
			t.Fatalf("/status: %v", err)
		}
		if st["state"] != "Synced" {
			t.Errorf(`/status "state" = %v, want "Synced"`, st["state"])
		}
		if st["primary"] != true {
			t.Errorf(`/status "primary" = %v, want true`, st["primary"])
		}
		if st["name"] != n.Name {
			t.Errorf(`/status "name" = %v, want %q`, st["name"], n.Name)
		}
		if st["cluster_name"] != "vcluster" {
			t.Errorf(`/status "cluster_name" = %v, want "vcluster"`, st["cluster_name"])
		}
		if members, _ := st["members"].([]any); len(members) != 1 {
			t.Errorf(`/status "members" = %v, want one member`, st["members"])
		}
	})

}

// TestHandshakeAutocommitFlag reads the server's greeting: its status flags
// carry SERVER_STATUS_AUTOCOMMIT while new sessions start in autocommit
// mode. PyMySQL trusts them and sends SET autocommit=0 for its default
// transactional connection only when the flag is set; without it, its
// COMMIT/ROLLBACK did nothing.
func TestHandshakeAutocommitFlag(t *testing.T) {
	n, db := startNode(t, "n1", "")
	greetingStatus := func() uint16 {
		c, err := net.DialTimeout("tcp", n.SQLAddr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		var hdr [4]byte
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			t.Fatal(err)
		}
		p := make([]byte, int(hdr[0])|int(hdr[1])<<8|int(hdr[2])<<16)
		if _, err := io.ReadFull(c, p); err != nil {
			t.Fatal(err)
		}
		// protocol version, server version (NUL-terminated), connection
		// id (4), auth data (8), filler, capabilities (2), charset, status
		i := bytes.IndexByte(p[1:], 0) + 2 + 4 + 8 + 1 + 2 + 1
		return binary.LittleEndian.Uint16(p[i:])
	}
	const autocommit = 0x0002
	if s := greetingStatus(); s&autocommit == 0 {
		t.Errorf("greeting status %#x lacks SERVER_STATUS_AUTOCOMMIT", s)
	}
	xexec(t, db, "SET GLOBAL autocommit = 0")
	defer xexec(t, db, "SET GLOBAL autocommit = 1")
	if s := greetingStatus(); s&autocommit != 0 {
		t.Errorf("greeting status %#x has SERVER_STATUS_AUTOCOMMIT with autocommit off", s)
	}
}
