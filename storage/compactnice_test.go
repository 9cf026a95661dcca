package storage

import (
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// l0Depth counts the tables that contain one key, a table containing
// both its smallest and its largest key.
func TestL0Depth(t *testing.T) {
	table := func(lo, hi string) pebble.TableInfo {
		var ti pebble.TableInfo
		ti.Smallest.UserKey, ti.Largest.UserKey = []byte(lo), []byte(hi)
		return ti
	}
	for _, tc := range []struct {
		name   string
		tables []pebble.TableInfo
		want   int
	}{
		{"none", nil, 0},
		{"one", []pebble.TableInfo{table("a", "c")}, 1},
		{"side by side", []pebble.TableInfo{table("a", "b"), table("c", "d"), table("e", "f")}, 1},
		{"touching at a key", []pebble.TableInfo{table("a", "c"), table("c", "e")}, 2},
		{"nested", []pebble.TableInfo{table("a", "z"), table("b", "y"), table("c", "d"), table("e", "f")}, 3},
		{"one key each", []pebble.TableInfo{table("k", "k"), table("k", "k"), table("j", "l")}, 3},
		{"staggered", []pebble.TableInfo{table("a", "d"), table("c", "f"), table("e", "h"), table("g", "j")}, 2},
	} {
		if got := l0Depth(tc.tables); got != tc.want {
			t.Errorf("%s: depth %d, want %d", tc.name, got, tc.want)
		}
	}
}
