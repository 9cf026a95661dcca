package systest

import (
	"testing"

	"github.com/certusdb/certus/internal/testcluster"
)

func TestSingleNodeSmoke(t *testing.T) {
	n := testcluster.NewNode(t, "n1")
	n.Start()
	db := n.DB("")
	mustExec(t, db, "CREATE DATABASE app")
	mustExec(t, db, "CREATE TABLE app.t (id INT PRIMARY KEY, v INT)")
	mustExec(t, db, "INSERT INTO app.t VALUES (1, 10), (2, 20)")
	var sum int
	if err := db.QueryRow("SELECT SUM(v) FROM app.t").Scan(&sum); err != nil {
		t.Fatal(err)
	}
	if sum != 30 {
		t.Fatalf("sum = %d, want 30", sum)
	}
	if code := n.Health(); code != 200 {
		t.Fatalf("/health = %d", code)
	}
}
