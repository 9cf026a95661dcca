package sqltext

import (
	"reflect"
	"strings"
	"testing"
)

// seeds are statements the proxy sees: sysbench's, drivers' and dumps'.
var seeds = []string{
	"SELECT c FROM sbtest1 WHERE id=5012",
	"SELECT id, k FROM sbtest1 WHERE k IN (1, 2, -3, 0x1f, 'x') LIMIT 10",
	"INSERT INTO sbtest1 (id, k, c, pad) VALUES (5012, 4993, '8386-2877', '6784-4800'), (5013, -1, 'a', 'b')",
	"UPDATE sbtest1 SET k=k+1 WHERE id=5012",
	"SET NAMES utf8mb4 COLLATE utf8mb4_0900_ai_ci",
	"SET @@SESSION.sql_mode = 'STRICT_TRANS_TABLES', autocommit = 1, @x := 5",
	"SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
	"/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;",
	"USE `my``db`",
	"SELECT LAST_INSERT_ID(), @@warning_count; SELECT 2",
	"SELECT GET_LOCK('l', 10)",
	"SELECT * FROM t WHERE a = ? -- trailing\n",
	"SHOW COUNT(*) WARNINGS",
}

// FuzzDigest checks Digest on any text: blanks before a statement do not
// change it, and it stays within a linear bound of the text. (A digest's
// digest is not always itself: an empty string literal followed by
// ",0 00" digests as "?,... ?", whose digest is "?,...?", and "@\xa3 .A"
// as "@\ufffd.A", whose digest is "@\ufffd.a".)
func FuzzDigest(f *testing.F) {
	for _, q := range seeds {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		d := Digest(q)
		if len(d) > 3*len(q)+8 {
			t.Fatalf("Digest(%q) = %d bytes", q, len(d))
		}
		if blanked := Digest(" \n\t" + q); blanked != d {
			t.Fatalf("Digest(%q) = %q, with blanks before it %q", q, d, blanked)
		}
	})
}

// FuzzClassifyText checks Classify on any text: blanks before a statement
// do not change its classification, and each assignment's value is text
// of the statement.
func FuzzClassifyText(f *testing.F) {
	for _, q := range seeds {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		st := Classify(q)
		if blanked := Classify(" \n\t" + q); !reflect.DeepEqual(blanked, st) {
			t.Fatalf("Classify(%q) = %+v, with blanks before it %+v", q, st, blanked)
		}
		for _, a := range st.Vars {
			if !strings.Contains(q, a.Value) {
				t.Fatalf("Classify(%q): assignment %+v's value is not in the statement", q, a)
			}
		}
	})
}
