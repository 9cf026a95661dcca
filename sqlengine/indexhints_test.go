package sqlengine

import "testing"

func TestIndexHints(t *testing.T) {
	for in, want := range map[string]string{
		"SELECT * FROM t FORCE INDEX (PRIMARY) WHERE id = 1":              "SELECT * FROM t FORCE INDEX (`PRIMARY`) WHERE id = 1",
		"select * from t force key (primary, k) where id = 1":             "select * from t force INDEX (`primary`, k) where id = 1",
		"SELECT * FROM t USE INDEX () WHERE id = 1":                       "SELECT * FROM t  WHERE id = 1",
		"SELECT * FROM t IGNORE INDEX FOR ORDER BY (PRIMARY) ORDER BY id": "SELECT * FROM t IGNORE INDEX (`PRIMARY`) ORDER BY id",
		"SELECT * FROM t FORCE INDEX (`PRIMARY`)":                         "SELECT * FROM t FORCE INDEX (`PRIMARY`)",
		"SELECT * FROM t USE INDEX (k)":                                   "SELECT * FROM t USE INDEX (k)",
		"SELECT 'FORCE INDEX (PRIMARY)' FROM t":                           "SELECT 'FORCE INDEX (PRIMARY)' FROM t",
		"SELECT * FROM t FORCE INDEX (primary_k)":                         "SELECT * FROM t FORCE INDEX (primary_k)",
		"SELECT 1": "SELECT 1",
	} {
		if got := indexHints(in); got != want {
			t.Errorf("indexHints(%q) = %q, want %q", in, got, want)
		}
	}
}
