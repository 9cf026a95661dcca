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

// TestJSONPathsOfMixedDocuments reads documents of different shapes with
// JSON_EXTRACT, -> and ->> (in the select list, WHERE, a generated column,
// text and prepared), as MySQL answers: `$[0]` of an object is the object,
// `$.a` of an array is NULL. go-mysql-server failed such statements with
// 1105 "object is not Slice" or answered [].
func TestJSONPathsOfMixedDocuments(t *testing.T) {
	_, db := startNode(t, "n1", "d1")
	xexec(t, db, "CREATE TABLE d (id INT PRIMARY KEY, doc JSON, name VARCHAR(20) AS (doc->>'$.name'), KEY (name))")
	xexec(t, db, `INSERT INTO d (id, doc) VALUES (1, '{"name":"ann","tags":["x","y"]}'), (2, '[1,2]'), (3, '"str"'), (4, NULL)`)
	q := "SELECT id, doc->'$.tags[last]', doc->>'$.name', doc->'$[0]', JSON_EXTRACT(doc, '$.a', '$[1]'), name FROM d ORDER BY id"
	want := []string{
		`1|"y"|ann|{"name": "ann", "tags": ["x", "y"]}|NULL|ann`,
		`2|NULL|NULL|1|[2]|NULL`,
		`3|NULL|NULL|"str"|NULL|NULL`,
		`4|NULL|NULL|NULL|NULL|NULL`,
	}
	wantRows(t, "text", qLines(t, conn(t, db), q), want)
	wantRows(t, "prepared", qLines(t, db, q+" LIMIT ?", 10), want)
	if got := qInts(t, db, "SELECT id FROM d WHERE doc->>'$[0]' = ? ORDER BY id", "1"); len(got) != 1 || got[0] != 2 {
		t.Errorf("WHERE doc->>'$[0]' = '1': %v, want [2]", got)
	}
	if got := qInts(t, db, "SELECT id FROM d WHERE name = 'ann'"); len(got) != 1 || got[0] != 1 {
		t.Errorf("generated column name = 'ann': %v, want [1]", got)
	}
	wantErr(t, tryExec(db, "SELECT JSON_EXTRACT(doc, '$.') FROM d"), 3143, "42000")
}
