package systest

import "testing"

// TestNumbersAsText: string functions read a number as its text, as in
// MySQL (found by bench/difftest): LEFT, RIGHT and INSTR of a number
// answered 1105 "invalid type: int8", and REVERSE(123) was 127.
func TestNumbersAsText(t *testing.T) {
	_, db := startNode(t, "strfuncs1", "")
	mustExec(t, db, "CREATE DATABASE d")
	mustExec(t, db, "CREATE TABLE d.t (id INT PRIMARY KEY, z INT, p DECIMAL(5,2))")
	mustExec(t, db, "INSERT INTO d.t VALUES (1, 12345, 1.50)")
	for q, want := range map[string]string{
		"SELECT LEFT(123, 2)":                "12",
		"SELECT RIGHT(123, 2)":               "23",
		"SELECT INSTR(123, 2)":               "2",
		"SELECT REVERSE(123)":                "321",
		"SELECT LEFT(1.5, 2)":                "1.",
		"SELECT LEFT(z, 3) FROM d.t":         "123",
		"SELECT REVERSE(z) FROM d.t":         "54321",
		"SELECT RIGHT(p, 3) FROM d.t":        ".50",
		"SELECT CONCAT(LEFT('abc', 2), 'x')": "abx",
	} {
		if got := qStr(t, db, q); got != want {
			t.Errorf("%s = %q, want %q", q, got, want)
		}
	}
}
