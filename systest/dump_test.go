package systest

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDumpAndRestore dumps a database with the Debian mysqldump (MariaDB's
// mariadb-dump) as an application user and restores it with the mysql
// CLI, as a DBA moves data: the dump's MariaDB-only first line ("/*M!999999\-
// enable the sandbox mode */") and its version comments must not stop the
// restore, and the copy must equal the original. A view in the dump made
// --single-transaction fail ("SAVEPOINT sp does not exist": reading the
// view committed the dump's transaction).
func TestDumpAndRestore(t *testing.T) {
	dump, err := exec.LookPath("mysqldump")
	if err != nil {
		t.Skip("mysqldump not installed")
	}
	if _, err := exec.LookPath("mysql"); err != nil {
		t.Skip("mysql CLI not installed")
	}
	n, db := startNode(t, "dump", "shop")
	for _, q := range []string{
		"CREATE TABLE items (id INT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(50) NOT NULL, price DECIMAL(10,2), note TEXT, made DATETIME, KEY (name))",
		"CREATE TABLE tags (item INT NOT NULL, tag VARCHAR(20) NOT NULL, PRIMARY KEY (item, tag), UNIQUE KEY t (tag, item))",
		"INSERT INTO items (name, price, note, made) VALUES ('a', 1.50, 'it''s \"quoted\"', '2026-01-02 03:04:05'), ('b', NULL, NULL, NULL), ('ü', 2, 'line\\nbreak', '1999-12-31 23:59:59')",
		"INSERT INTO tags VALUES (1, 'x'), (1, 'y'), (3, 'x')",
		"CREATE VIEW cheap AS SELECT id, name FROM items WHERE price < 2",
		"CREATE TABLE totals (id INT PRIMARY KEY, net DECIMAL(10,2), gross DECIMAL(10,2) AS (net * 1.2), twice DECIMAL(11,2) AS (net * 2) STORED)",
		"INSERT INTO totals (id, net) VALUES (1, 10), (2, 200)",
		"CREATE USER dumper IDENTIFIED BY 'pw'",
		"GRANT SELECT, LOCK TABLES, SHOW VIEW, TRIGGER, EVENT ON shop.* TO dumper",
		"CREATE DATABASE shopcopy",
	} {
		mustExec(t, db, q)
	}
	host, port, _ := net.SplitHostPort(n.SQLAddr)
	out, err := exec.Command(dump, "-h", host, "-P", port, "--protocol=tcp", "-u", "dumper", "-ppw",
		"--single-transaction", "--routines", "--triggers", "shop").Output()
	if err != nil {
		t.Fatalf("mysqldump: %v\n%s", err, errOut(err))
	}
	restore := exec.Command("mysql", "-h", host, "-P", port, "--protocol=tcp", "-u", "root", "shopcopy")
	restore.Stdin = bytes.NewReader(out)
	if msg, err := restore.CombinedOutput(); err != nil {
		t.Fatalf("restore: %v\n%s\nfirst lines of the dump:\n%.400s", err, msg, out)
	}
	for _, q := range []string{
		"SELECT id, name, price, note, made FROM %s.items ORDER BY id",
		"SELECT item, tag FROM %s.tags ORDER BY item, tag",
		"SELECT id, name FROM %s.cheap ORDER BY id",
		"SELECT id, net, gross, twice FROM %s.totals ORDER BY id",
	} {
		want := qRows(t, db, q, "shop")
		if got := qRows(t, db, q, "shopcopy"); got != want {
			t.Fatalf("%s: restored %q, dumped %q", q, got, want)
		}
	}
	// the restored table keeps its keys: a duplicate is still refused
	wantErr(t, tryExec(db, "INSERT INTO shopcopy.tags VALUES (1, 'x')"), 1062, "23000")
	// strict mode refuses a value for a generated column, as MySQL does
	wantErr(t, tryExec(db, "INSERT INTO shopcopy.totals VALUES (3, 1, 1, 1)"), 3105, "HY000")

	// the options of backup scripts: --flush-logs sends COM_REFRESH (which
	// the protocol library refused), --lock-all-tables and --master-data
	// FLUSH /*!40101 LOCAL */ TABLES ("LOCAL not supported")
	for _, opts := range [][]string{{"--lock-all-tables", "--flush-logs"}, {"--single-transaction", "--flush-logs", "--flush-privileges"}} {
		args := append([]string{"-h", host, "-P", port, "--protocol=tcp", "-u", "root"}, opts...)
		out, err := exec.Command(dump, append(args, "shop")...).Output()
		if err != nil {
			t.Fatalf("mysqldump %v: %v\n%s", opts, err, errOut(err))
		}
		if !bytes.Contains(out, []byte("INSERT INTO `items`")) {
			t.Fatalf("mysqldump %v wrote no rows of items:\n%.600s", opts, out)
		}
	}

	// a backup of the whole server: for the mysql schema, mysqldump asks
	// for the structure of the log tables (general_log, slow_log) without
	// listing them first and stopped at 1146
	out, err = exec.Command(dump, "-h", host, "-P", port, "--protocol=tcp", "-u", "root", "--all-databases").Output()
	if err != nil {
		t.Fatalf("mysqldump --all-databases: %v\n%s", err, errOut(err))
	}
	for _, want := range []string{"CREATE TABLE IF NOT EXISTS `general_log`", "CREATE TABLE IF NOT EXISTS `slow_log`", "INSERT INTO `items`", "CREATE TABLE `user`"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Fatalf("mysqldump --all-databases wrote no %q", want)
		}
	}
	// the dump's statement for a log table finds it there; creating one
	// anew is refused; elsewhere the names are free
	mustExec(t, db, "CREATE TABLE IF NOT EXISTS mysql.general_log (event_time TIMESTAMP(6) NOT NULL, argument MEDIUMTEXT NOT NULL) ENGINE=CSV")
	wantErr(t, tryExec(db, "CREATE TABLE mysql.slow_log (a INT)"), 1050, "42S01")
	if got := qRows(t, db, "SHOW CREATE TABLE %s.slow_log", "mysql"); !strings.Contains(got, "`query_time` time(6) NOT NULL") || !strings.Contains(got, "ENGINE=CSV") {
		t.Fatalf("SHOW CREATE TABLE mysql.slow_log: %s", got)
	}
	mustExec(t, db, "CREATE TABLE IF NOT EXISTS shopcopy.general_log (id INT PRIMARY KEY)")
	mustExec(t, db, "INSERT INTO shopcopy.general_log VALUES (1)")
	if got := qRows(t, db, "SELECT id FROM %s.general_log", "shopcopy"); got != "[['1']]" {
		t.Fatalf("a user table named general_log holds %s", got)
	}

	// mysqlimport starts with /*!40101 set @@character_set_database=binary */
	// (1064: BINARY is a keyword to go-mysql-server's parser), then loads
	// with LOAD DATA LOCAL INFILE, off by default as in MySQL 8.0
	imp, err := exec.LookPath("mysqlimport")
	if err != nil {
		t.Log("mysqlimport not installed; skipping its part")
		return
	}
	mustExec(t, db, "SET GLOBAL local_infile = 1")
	file := filepath.Join(t.TempDir(), "tags.txt")
	if err := os.WriteFile(file, []byte("7\tz\n8\tz\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(imp, "-h", host, "-P", port, "--protocol=tcp", "-u", "root", "--local", "shopcopy", file).CombinedOutput(); err != nil {
		t.Fatalf("mysqlimport: %v\n%s", err, out)
	}
	if got := qRows(t, db, "SELECT item FROM %s.tags WHERE tag = 'z' ORDER BY item", "shopcopy"); got != "[['7'] ['8']]" {
		t.Fatalf("imported rows %s", got)
	}
}

// qRows renders every row of the query format names with database dbName.
func qRows(t *testing.T, db *sql.DB, format, dbName string) string {
	t.Helper()
	q := fmt.Sprintf(format, dbName)
	r, err := runStmt(context.Background(), conn(t, db), true, q)
	if err != nil || r.Err != 0 {
		t.Fatalf("%s: %v %v", q, err, r)
	}
	return fmt.Sprint(r.Rows)
}

func errOut(err error) []byte {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.Stderr
	}
	return nil
}
