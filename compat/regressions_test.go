package compat

import (
	"github.com/dolthub/go-mysql-server/enginetest/queries"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/analyzer/analyzererrors"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// regressions are the bugs the engine test suites found in Certus, each
// reduced to a script. They run in the default `go test` on Certus and,
// as a check of their expectations, on the memory harness.
var regressions = []queries.ScriptTest{
	{
		Name: "inexact index ranges do not return a row twice",
		SetUpScript: []string{
			"create table t (pk int primary key, v1 int, v2 int, index v12 (v1, v2))",
			"insert into t values (0,0,0), (1,1,1), (2,2,2), (3,3,3), (4,4,4), (5,5,5)",
		},
		Assertions: []queries.ScriptTestAssertion{{
			Query:    "select pk from t where v1 < 4 and v2 < 2 or v2 > 3 order by pk",
			Expected: []sql.Row{{0}, {1}, {4}, {5}},
		}},
	},
	{
		Name: "an UPDATE does not find the rows it moved ahead of its scan",
		SetUpScript: []string{
			"create table b (x int primary key)",
			"insert into b values (1), (2), (3), (4)",
		},
		Assertions: []queries.ScriptTestAssertion{
			{
				Query:    "update b set x = x + 10 where x <> 2",
				Expected: []sql.Row{{types.OkResult{RowsAffected: 3, Info: plan.UpdateInfo{Matched: 3, Updated: 3}}}},
			},
			{Query: "select x from b order by x", Expected: []sql.Row{{2}, {11}, {13}, {14}}},
		},
	},
	{
		Name: "a multi-table UPDATE changes each row once",
		SetUpScript: []string{
			"create table t2 (pk int primary key, val int)",
			"insert into t2 values (0, 0), (1, 1)",
			"create table t3 (k int, val int, primary key (k, val))",
			"insert into t3 values (1, 2), (1, 3), (1, 4)",
		},
		Assertions: []queries.ScriptTestAssertion{
			{
				Query:    "update t2 inner join (select * from t3 order by val) as t on t2.pk = t.k set t2.val = t.val",
				Expected: []sql.Row{{types.OkResult{RowsAffected: 1, Info: plan.UpdateInfo{Matched: 1, Updated: 1}}}},
			},
			{Query: "select val from t2 where pk = 1", Expected: []sql.Row{{2}}},
		},
	},
	{
		Name: "a foreign key sees the parent the same statement inserted",
		SetUpScript: []string{
			"create table t (id int primary key, parent int, foreign key (parent) references t (id))",
		},
		Assertions: []queries.ScriptTestAssertion{
			{Query: "insert into t values (1, null), (2, 1), (3, 2)", Expected: []sql.Row{{types.NewOkResult(3)}}},
			{Query: "insert into t values (4, 9)", ExpectedErr: sql.ErrForeignKeyChildViolation},
			{Query: "delete from t where id = 1", ExpectedErr: sql.ErrForeignKeyParentViolation},
		},
	},
	{
		Name: "DROP COLUMN of an indexed column that is not the last one",
		SetUpScript: []string{
			"create table t (id int primary key, a int, b int, c int, index ab (a, b), unique index bc (b, c), index b (b))",
			"insert into t values (1, 1, 1, 1), (2, 1, 2, 2)",
			"alter table t drop column b",
		},
		Assertions: []queries.ScriptTestAssertion{
			{
				Query: "show create table t",
				Expected: []sql.Row{{"t", "CREATE TABLE `t` (\n  `id` int NOT NULL,\n  `a` int,\n  `c` int,\n  PRIMARY KEY (`id`),\n" +
					"  KEY `ab` (`a`),\n  UNIQUE KEY `bc` (`c`)\n) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_0900_bin"}},
			},
			{Query: "select id from t where a = 1 order by id", Expected: []sql.Row{{1}, {2}}},
			{Query: "select id from t where c = 2", Expected: []sql.Row{{2}}},
			{Query: "insert into t values (3, 3, 2)", ExpectedErr: sql.ErrUniqueKeyViolation},
		},
	},
	{
		Name: "unique keys of keyless tables",
		SetUpScript: []string{
			"create table t (i int, j int, unique key (j))",
			"insert into t values (1, 1)",
		},
		Assertions: []queries.ScriptTestAssertion{
			{Query: "insert into t values (5, 2), (6, 2)", ExpectedErr: sql.ErrUniqueKeyViolation},
			{Query: "insert into t values (1, 1)", ExpectedErr: sql.ErrUniqueKeyViolation},
			{Query: "insert into t values (3, 3) on duplicate key update i = 7", Expected: []sql.Row{{types.NewOkResult(1)}}},
			{Query: "insert into t values (3, 3) on duplicate key update i = 7", Expected: []sql.Row{{types.NewOkResult(2)}}},
			{Query: "insert into t values (9, null), (9, null)", Expected: []sql.Row{{types.NewOkResult(2)}}},
			{Query: "select i, j from t order by i", Expected: []sql.Row{{1, 1}, {7, 3}, {9, nil}, {9, nil}}},
			{
				// the second row finds the first one's updated copy past
				// the entry of the row it replaced
				Query:    "insert into t values (3, 3), (4, 3) on duplicate key update i = i + 10",
				Expected: []sql.Row{{types.NewOkResult(4)}},
			},
			{Query: "select i from t where j = 3", Expected: []sql.Row{{27}}},
		},
	},
	{
		Name: "a unique index over duplicates keeps go-mysql-server's error kind",
		SetUpScript: []string{
			"create table t (pk int primary key, v int)",
			"insert into t values (1, 1), (2, 1)",
		},
		Assertions: []queries.ScriptTestAssertion{
			{Query: "alter table t add unique index v (v)", ExpectedErr: sql.ErrUniqueKeyViolation},
		},
	},
	{
		Name: "a view is parsed under the SQL mode it was created in",
		SetUpScript: []string{
			"create table t (pk int primary key, `count` int)",
			"insert into t values (1, 10)",
			"set @@sql_mode = 'ANSI_QUOTES'",
			`create view v as select "count" from t`,
			"set @@sql_mode = ''",
		},
		Assertions: []queries.ScriptTestAssertion{
			{Query: "select * from v", Expected: []sql.Row{{10}}},
		},
	},
	{
		Name: "column types keep their collation and SRID",
		SetUpScript: []string{
			"create table t1 (pk char(32) collate utf8mb4_0900_ai_ci primary key, e enum('a','b'), s set('x'), p point srid 4326)",
		},
		Assertions: []queries.ScriptTestAssertion{
			{
				Query: "show create table t1",
				Expected: []sql.Row{{"t1", "CREATE TABLE `t1` (\n  `pk` char(32) COLLATE utf8mb4_0900_ai_ci NOT NULL,\n  `e` enum('a','b'),\n" +
					"  `s` set('x'),\n  `p` point /*!80003 SRID 4326 */,\n  PRIMARY KEY (`pk`)\n) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_0900_bin"}},
			},
			{
				Query:    "create table t2 (pk char(32) collate utf8mb4_0900_bin primary key, foreign key (pk) references t1 (pk))",
				Expected: []sql.Row{{types.NewOkResult(0)}},
			},
		},
	},
	{
		Name: "an out-of-range AUTO_INCREMENT value does not move the counter",
		SetUpScript: []string{
			"create table t (i tinyint primary key auto_increment)",
		},
		Assertions: []queries.ScriptTestAssertion{
			{Query: "insert into t values (999)", ExpectedErr: sql.ErrValueOutOfRange},
			{Query: "insert into t values (null)", Expected: []sql.Row{{types.OkResult{RowsAffected: 1, InsertID: 1}}}},
			{Query: "insert into t values (127)", Expected: []sql.Row{{types.OkResult{RowsAffected: 1, InsertID: 127}}}},
			{
				Query: "show create table t",
				Expected: []sql.Row{{"t", "CREATE TABLE `t` (\n  `i` tinyint NOT NULL AUTO_INCREMENT,\n  PRIMARY KEY (`i`)\n" +
					") ENGINE=InnoDB AUTO_INCREMENT=127 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_0900_bin"}},
			},
		},
	},
	{
		Name: "a primary key column stays NOT NULL after MODIFY COLUMN",
		SetUpScript: []string{
			"create table t (pk int auto_increment primary key, v int)",
			"alter table t modify column pk int",
		},
		Assertions: []queries.ScriptTestAssertion{
			{Query: "insert into t values (null, 1)", ExpectedErr: sql.ErrInsertIntoNonNullableProvidedNull},
		},
	},
	{
		Name: "DECIMAL values keep the column's scale",
		SetUpScript: []string{
			"create table t (id int primary key, val decimal(18,16))",
			"insert into t values (1, 2.5633000000000370)",
		},
		Assertions: []queries.ScriptTestAssertion{
			{Query: "select concat(val, '') from t", Expected: []sql.Row{{"2.5633000000000370"}}},
		},
	},
	{
		Name: "rows larger than MySQL allows are refused",
		SetUpScript: []string{
			"create table t (a int primary key)",
		},
		Assertions: []queries.ScriptTestAssertion{
			{Query: "alter table t add column b varchar(16383)", ExpectedErr: analyzererrors.ErrInvalidRowLength},
			{Query: "alter table t add column b varchar(16000), add column c varchar(10)", Expected: []sql.Row{{types.NewOkResult(0)}}},
		},
	},
	{
		Name: "a failed table rewrite leaves the table as it was",
		SetUpScript: []string{
			"create table t (i int, j int)",
			"insert into t values (1, 1), (1, 2), (1, 3)",
		},
		Assertions: []queries.ScriptTestAssertion{
			{Query: "alter table t add primary key (i)", ExpectedErr: sql.ErrPrimaryKeyViolation},
			{Query: "select i, j from t order by j", Expected: []sql.Row{{1, 1}, {1, 2}, {1, 3}}},
			{Query: "alter table t add primary key (i, j)", Expected: []sql.Row{{types.NewOkResult(0)}}},
		},
	},
	{
		Name: "an AUTO_INCREMENT column keeps a key",
		SetUpScript: []string{
			"create table t (pk int auto_increment primary key, v int)",
		},
		Assertions: []queries.ScriptTestAssertion{
			{Query: "alter table t drop primary key", ExpectedErr: sql.ErrWrongAutoKey},
		},
	},
	{
		Name: "lookups on a prefix index re-check values longer than the prefix",
		SetUpScript: []string{
			"create table t (i int primary key, v varchar(10), index (v(3)))",
			"insert into t values (0, 'a'), (1, 'ab'), (2, 'abc'), (3, 'abcde'), (4, 'abcdf'), (5, 'abd')",
		},
		Assertions: []queries.ScriptTestAssertion{
			{Query: "select i from t where v = 'abcde'", Expected: []sql.Row{{3}}},
			{Query: "select i from t where v > 'a' and v < 'abcde' order by i", Expected: []sql.Row{{1}, {2}}},
			{Query: "select i from t where v > 'abcde' order by i", Expected: []sql.Row{{4}, {5}}},
			{Query: "select i from t where v <= 'abcde' order by i", Expected: []sql.Row{{0}, {1}, {2}, {3}}},
		},
	},
	{
		Name: "a primary key on a column prefix is refused",
		Assertions: []queries.ScriptTestAssertion{
			{Query: "create table t (v varchar(100), primary key (v(10)))", ExpectedErr: sql.ErrUnsupportedIndexPrefix},
		},
	},
	{
		Name: "unnamed check constraints get MySQL's names",
		SetUpScript: []string{
			"create table t (i int primary key, check (i > 0), check (i < 10))",
		},
		Assertions: []queries.ScriptTestAssertion{
			{
				Query:    "select constraint_name from information_schema.check_constraints where constraint_schema = 'mydb' order by 1",
				Expected: []sql.Row{{"t_chk_1"}, {"t_chk_2"}},
			},
		},
	},
	{
		Name: "DROP INDEX IF EXISTS of a missing index",
		SetUpScript: []string{
			"create table t (i int primary key)",
		},
		Assertions: []queries.ScriptTestAssertion{
			{Query: "alter table t drop index if exists nope", Expected: []sql.Row{{types.NewOkResult(0)}}},
		},
	},
	{
		Name: "a column made AUTO_INCREMENT continues after its largest value",
		SetUpScript: []string{
			"create table t (i int primary key, s varchar(10))",
			"insert into t values (1, 'a'), (7, 'b')",
			"alter table t modify column i int auto_increment",
		},
		Assertions: []queries.ScriptTestAssertion{
			{Query: "insert into t (s) values ('c')", Expected: []sql.Row{{types.OkResult{RowsAffected: 1, InsertID: 8}}}},
		},
	},
	{
		Name: "a null-safe lookup join matches NULL keys",
		SetUpScript: []string{
			"create table n (i bigint primary key, i2 bigint, index (i2))",
			"insert into n values (1, null), (2, 2), (3, null)",
		},
		Assertions: []queries.ScriptTestAssertion{
			{
				Query:    "select /*+ LOOKUP_JOIN(l,r) */ l.i, r.i from n l join n r on l.i2 <=> r.i2 order by 1, 2",
				Expected: []sql.Row{{1, 1}, {1, 3}, {2, 2}, {3, 1}, {3, 3}},
			},
			{
				Query:    "select /*+ LOOKUP_JOIN(l,r) */ l.i, r.i from n l join n r on l.i2 = r.i2 order by 1, 2",
				Expected: []sql.Row{{2, 2}},
			},
		},
	},
	{
		Name: "a functional index keeps its column hidden",
		SetUpScript: []string{
			"create table t (pk int primary key, c1 int)",
			"create unique index idx1 on t ((c1 * 10))",
		},
		Assertions: []queries.ScriptTestAssertion{
			{Query: "insert into t values (1, 100), (2, null), (3, null)", Expected: []sql.Row{{types.NewOkResult(3)}}},
			{Query: "insert into t values (4, 100)", ExpectedErr: sql.ErrUniqueKeyViolation},
			{Query: "select pk from t where c1 * 10 = 1000", Expected: []sql.Row{{1}}},
			{
				Query: "show create table t",
				Expected: []sql.Row{{"t", "CREATE TABLE `t` (\n  `pk` int NOT NULL,\n  `c1` int,\n  PRIMARY KEY (`pk`),\n" +
					"  UNIQUE KEY `idx1` (((c1 * 10)))\n) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_0900_bin"}},
			},
		},
	},
	{
		Name: "a new SRID is checked against the stored values",
		SetUpScript: []string{
			"create table t (i int primary key, p point not null)",
			"insert into t values (1, point(1, 2))",
		},
		Assertions: []queries.ScriptTestAssertion{
			{Query: "alter table t modify column p point not null srid 4326", ExpectedErr: sql.ErrNotMatchingSRIDWithColName},
		},
	},
}
