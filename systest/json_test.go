package systest

import (
	"fmt"
	"testing"
)

// TestJSONReadsAsMySQLPrints reads JSON columns back as MySQL prints them
// ({"a": [1, 2], "k": 2}: a space after colons and commas, keys sorted),
// whatever spacing the value was written with, text and prepared.
func TestJSONReadsAsMySQLPrints(t *testing.T) {
	_, db := startNode(t, "n1", "d1")
	xexec(t, db, "CREATE TABLE j (id INT PRIMARY KEY, doc JSON)")
	xexec(t, db, `INSERT INTO j VALUES (1, '{"k":2,"a":[1,2]}'), (2, '{ "k" : 2 , "a" : [ 1 , 2 ] }')`)
	xexec(t, db, `INSERT INTO j VALUES (3, JSON_OBJECT('k', 2, 'a', JSON_ARRAY(1, 2)))`)
	xexec(t, db, `INSERT INTO j SELECT 4, doc FROM j WHERE id = 1`)
	xexec(t, db, `UPDATE j SET doc = JSON_SET(doc, '$.s', 'x, y: z') WHERE id = 2`)
	want := map[int64]string{
		1: `{"a": [1, 2], "k": 2}`,
		2: `{"a": [1, 2], "k": 2, "s": "x, y: z"}`,
		3: `{"a": [1, 2], "k": 2}`,
		4: `{"a": [1, 2], "k": 2}`,
	}
	for id, w := range want {
		if got := qStr(t, db, "SELECT doc FROM j WHERE id = ?", id); got != w {
			t.Errorf("prepared: doc %d = %s, want %s", id, got, w)
		}
		if got := qStr(t, conn(t, db), fmt.Sprintf("SELECT doc FROM j WHERE id = %d", id)); got != w {
			t.Errorf("text: doc %d = %s, want %s", id, got, w)
		}
	}
}
