package sqlengine

import "testing"

func TestGeneratedParens(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"CREATE TABLE g (a INT, b BOOL AS (a > 100))", "CREATE TABLE g (a INT, b BOOL AS ((a > 100)))"},
		{"create table g (s varchar(9), b bool generated always as (s = 'x)') virtual, c int as (a+1) stored)",
			"create table g (s varchar(9), b bool generated always as ((s = 'x)')) virtual, c int as ((a+1)) stored)"},
		{"ALTER TABLE g ADD COLUMN b BOOL AS (a IN (1, 2)) NOT NULL", "ALTER TABLE g ADD COLUMN b BOOL AS ((a IN (1, 2))) NOT NULL"},
		{"CREATE TEMPORARY TABLE g (b INT AS (NOT a))", "CREATE TEMPORARY TABLE g (b INT AS ((NOT a)))"},
		{"CREATE TABLE g (b INT AS ((a > 1)))", "CREATE TABLE g (b INT AS ((a > 1)))"},       // doubled already
		{"CREATE TABLE g (b INT AS ((a) + (c)))", "CREATE TABLE g (b INT AS (((a) + (c))))"}, // not doubled
		{"CREATE TABLE g AS (SELECT 1 AS x)", "CREATE TABLE g AS (SELECT 1 AS x)"},           // a query
		{"CREATE TABLE g (a INT) AS SELECT 1 AS a", "CREATE TABLE g (a INT) AS SELECT 1 AS a"},
		{"CREATE TABLE g (b INT /* AS (a > 1) */, c CHAR(3) DEFAULT 'AS (')", "CREATE TABLE g (b INT /* AS (a > 1) */, c CHAR(3) DEFAULT 'AS (')"},
		{"/* dump */ CREATE TABLE g (b INT AS (a > 1))", "/* dump */ CREATE TABLE g (b INT AS ((a > 1)))"},
		{"CREATE VIEW v AS (SELECT 1)", "CREATE VIEW v AS (SELECT 1)"},         // not a table
		{"SELECT CAST(a AS CHAR) AS (x", "SELECT CAST(a AS CHAR) AS (x"},       // not DDL
		{"CREATE TABLE g (b INT AS (a > 1", "CREATE TABLE g (b INT AS (a > 1"}, // unbalanced
	} {
		if got := generatedParens(tc.in); got != tc.want {
			t.Errorf("generatedParens(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}
