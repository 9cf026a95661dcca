package compat

import (
	"testing"

	"github.com/dolthub/go-mysql-server/enginetest"
	"github.com/dolthub/go-mysql-server/enginetest/queries"
)

// harness is what both Certus's and go-mysql-server's memory harness
// offer; the suites take it.
type harness interface {
	enginetest.ClientHarness
	enginetest.ServerHarness
	enginetest.TransactionHarness
}

// suite is one of go-mysql-server's engine test suites, run the way
// go-mysql-server's memory_engine_test.go runs it on the memory harness.
type suite struct {
	name string
	run  func(t *testing.T, h harness)
	// short suites are a representative subset, the ones the default
	// `go test ./...` runs; CERTUS_COMPAT=full runs them all.
	short bool
	// memory returns the memory harness go-mysql-server runs the suite
	// with (nil: the default one); noMemory marks a suite it does not run.
	memory   func() harness
	noMemory bool
	// skip is why the suite does not run on Certus at all.
	skip string
	// testdata suites read files under go-mysql-server's
	// enginetest/testdata, relative to the working directory.
	testdata bool
}

func defaultMemory() harness { return enginetest.NewDefaultMemoryHarness() }

// memoryWithPartitions is the harness go-mysql-server uses with its
// mergeable index driver; the driver lives in its tests, so native indexes
// stand in for it.
func memoryWithPartitions() harness { return enginetest.NewMemoryHarness("default", 5, nil) }

func skippingMemory() harness { return enginetest.NewSkippingMemoryHarness() }

var suites = []suite{
	// the bugs these suites found, reduced
	{name: "Regressions", short: true, run: func(t *testing.T, h harness) {
		for _, script := range regressions {
			enginetest.TestScript(t, h, script)
		}
	}},

	// queries over the standard setup
	{name: "Queries", short: true, run: func(t *testing.T, h harness) { enginetest.TestQueries(t, h) }},
	{name: "QueriesPrepared", run: func(t *testing.T, h harness) { enginetest.TestQueriesPrepared(t, h) }},
	{name: "JoinQueries", run: func(t *testing.T, h harness) { enginetest.TestJoinQueries(t, h) }},
	{name: "LateralJoin", run: func(t *testing.T, h harness) { enginetest.TestLateralJoinQueries(t, h) }},
	{name: "JoinOps", run: func(t *testing.T, h harness) { enginetest.TestJoinOps(t, h, enginetest.DefaultJoinOpTests) }},
	{name: "JSONTableQueries", run: func(t *testing.T, h harness) { enginetest.TestJSONTableQueries(t, h) }},
	{name: "JSONTableScripts", run: func(t *testing.T, h harness) { enginetest.TestJSONTableScripts(t, h) }},
	{name: "AnsiQuotesSqlMode", run: func(t *testing.T, h harness) { enginetest.TestAnsiQuotesSqlMode(t, h) }},
	{name: "AnsiQuotesSqlModePrepared", run: func(t *testing.T, h harness) { enginetest.TestAnsiQuotesSqlModePrepared(t, h) }},
	{name: "QueryErrors", run: func(t *testing.T, h harness) { enginetest.TestQueryErrors(t, h) }},
	{name: "InfoSchema", short: true, memory: memoryWithPartitions, run: func(t *testing.T, h harness) { enginetest.TestInfoSchema(t, h) }},
	{name: "MySqlDb", run: func(t *testing.T, h harness) { enginetest.TestMySqlDb(t, h) }},
	{name: "ColumnAliases", run: func(t *testing.T, h harness) { enginetest.TestColumnAliases(t, h) }},
	{name: "DerivedTableOuterScopeVisibility", run: func(t *testing.T, h harness) { enginetest.TestDerivedTableOuterScopeVisibility(t, h) }},
	{name: "OrderByGroupBy", run: func(t *testing.T, h harness) { enginetest.TestOrderByGroupBy(t, h) }},
	{name: "AmbiguousColumnResolution", run: func(t *testing.T, h harness) { enginetest.TestAmbiguousColumnResolution(t, h) }},
	{name: "WindowFunctions", run: func(t *testing.T, h harness) { enginetest.TestWindowFunctions(t, h) }},
	{name: "WindowRangeFrames", run: func(t *testing.T, h harness) { enginetest.TestWindowRangeFrames(t, h) }},
	{name: "NamedWindows", run: func(t *testing.T, h harness) { enginetest.TestNamedWindows(t, h) }},
	{name: "NaturalJoin", run: func(t *testing.T, h harness) { enginetest.TestNaturalJoin(t, h) }},
	{name: "NaturalJoinEqual", run: func(t *testing.T, h harness) { enginetest.TestNaturalJoinEqual(t, h) }},
	{name: "NaturalJoinDisjoint", run: func(t *testing.T, h harness) { enginetest.TestNaturalJoinDisjoint(t, h) }},
	{name: "InnerNestedInNaturalJoins", run: func(t *testing.T, h harness) { enginetest.TestInnerNestedInNaturalJoins(t, h) }},
	{name: "DateParse", run: func(t *testing.T, h harness) { enginetest.TestDateParse(t, h) }},
	{name: "TimeQueries", run: func(t *testing.T, h harness) { enginetest.TestTimeQueries(t, h) }},
	{name: "Convert", memory: memoryWithPartitions, run: func(t *testing.T, h harness) { enginetest.TestConvert(t, h) }},
	{name: "NullRanges", run: func(t *testing.T, h harness) { enginetest.TestNullRanges(t, h) }},
	{name: "ComplexIndexQueries", memory: memoryWithPartitions, run: func(t *testing.T, h harness) { enginetest.TestComplexIndexQueries(t, h) }},
	{name: "SQLLogicTests", memory: memoryWithPartitions, run: func(t *testing.T, h harness) { enginetest.TestSQLLogicTests(t, h) }},
	{name: "Statistics", run: func(t *testing.T, h harness) { enginetest.TestStatistics(t, h) }},
	{name: "StatisticIndexFilters", run: func(t *testing.T, h harness) { enginetest.TestStatisticIndexFilters(t, h) }},
	{name: "RowLimit", run: func(t *testing.T, h harness) { enginetest.TestRowLimit(t, h) }},
	{name: "CharsetCollationEngine", run: func(t *testing.T, h harness) { enginetest.TestCharsetCollationEngine(t, h) }},
	{name: "TypesOverWire", run: func(t *testing.T, h harness) { enginetest.TestTypesOverWire(t, h, h.SessionBuilder()) }},

	// query plans
	{name: "QueryPlans", run: func(t *testing.T, h harness) { enginetest.TestQueryPlans(t, h, queries.PlanTests) }},
	{name: "QueryPlanScripts", run: func(t *testing.T, h harness) { enginetest.TestQueryPlanScripts(t, h) }},
	{name: "IndexQueryPlans", run: func(t *testing.T, h harness) { enginetest.TestIndexQueryPlans(t, h) }},
	{name: "JoinPlanning", run: func(t *testing.T, h harness) { enginetest.TestJoinPlanning(t, h) }},
	{name: "GeneratedColumnPlans", run: func(t *testing.T, h harness) { enginetest.TestGeneratedColumnPlans(t, h) }},
	{name: "SysbenchPlans", run: func(t *testing.T, h harness) { enginetest.TestSysbenchPlans(t, h) }},

	// DML
	{name: "InsertInto", short: true, run: func(t *testing.T, h harness) { enginetest.TestInsertInto(t, h) }},
	{name: "InsertIgnoreInto", short: true, run: func(t *testing.T, h harness) { enginetest.TestInsertIgnoreInto(t, h) }},
	{name: "InsertDuplicateKeyKeyless", run: func(t *testing.T, h harness) { enginetest.TestInsertDuplicateKeyKeyless(t, h) }},
	{name: "IgnoreIntoWithDuplicateUniqueKeyKeyless", run: func(t *testing.T, h harness) { enginetest.TestIgnoreIntoWithDuplicateUniqueKeyKeyless(t, h) }},
	{name: "InsertIntoErrors", short: true, run: func(t *testing.T, h harness) { enginetest.TestInsertIntoErrors(t, h) }},
	{name: "BrokenInsertScripts", run: func(t *testing.T, h harness) { enginetest.TestBrokenInsertScripts(t, h) }},
	{name: "ReplaceInto", short: true, run: func(t *testing.T, h harness) { enginetest.TestReplaceInto(t, h) }},
	{name: "ReplaceIntoErrors", run: func(t *testing.T, h harness) { enginetest.TestReplaceIntoErrors(t, h) }},
	{name: "Update", short: true, memory: memoryWithPartitions, run: func(t *testing.T, h harness) { enginetest.TestUpdate(t, h) }},
	{name: "UpdateIgnore", memory: memoryWithPartitions, run: func(t *testing.T, h harness) { enginetest.TestUpdateIgnore(t, h) }},
	{name: "UpdateErrors", memory: memoryWithPartitions, run: func(t *testing.T, h harness) { enginetest.TestUpdateErrors(t, h) }},
	{name: "OnUpdateExprScripts", memory: memoryWithPartitions, run: func(t *testing.T, h harness) { enginetest.TestOnUpdateExprScripts(t, h) }},
	{name: "Delete", short: true, memory: memoryWithPartitions, run: func(t *testing.T, h harness) { enginetest.TestDelete(t, h) }},
	{name: "DeleteErrors", memory: memoryWithPartitions, run: func(t *testing.T, h harness) { enginetest.TestDeleteErrors(t, h) }},
	{name: "Truncate", short: true, memory: memoryWithPartitions, run: func(t *testing.T, h harness) { enginetest.TestTruncate(t, h) }},
	{name: "LoadData", testdata: true, run: func(t *testing.T, h harness) { enginetest.TestLoadData(t, h) }},
	{name: "LoadDataErrors", testdata: true, run: func(t *testing.T, h harness) { enginetest.TestLoadDataErrors(t, h) }},
	{name: "LoadDataFailing", testdata: true, run: func(t *testing.T, h harness) { enginetest.TestLoadDataFailing(t, h) }},
	{name: "SelectIntoFile", skip: reasonFilePriv, run: func(t *testing.T, h harness) { enginetest.TestSelectIntoFile(t, h) }},
	{name: "Prepared", run: func(t *testing.T, h harness) { enginetest.TestPrepared(t, h) }},
	{name: "PreparedInsert", memory: memoryWithPartitions, run: func(t *testing.T, h harness) { enginetest.TestPreparedInsert(t, h) }},
	{name: "PreparedStatements", run: func(t *testing.T, h harness) { enginetest.TestPreparedStatements(t, h) }},

	// scripts
	{name: "Scripts", short: true, memory: memoryWithPartitions, run: func(t *testing.T, h harness) { enginetest.TestScripts(t, h) }},
	{name: "NumericErrorScripts", memory: memoryWithPartitions, run: func(t *testing.T, h harness) { enginetest.TestNumericErrorScripts(t, h) }},
	{name: "JsonScripts", run: func(t *testing.T, h harness) { enginetest.TestJsonScripts(t, h, nil) }},
	{name: "Blobs", run: func(t *testing.T, h harness) { enginetest.TestBlobs(t, h) }},
	{name: "Triggers", short: true, run: func(t *testing.T, h harness) { enginetest.TestTriggers(t, h) }},
	{name: "ShowTriggers", run: func(t *testing.T, h harness) { enginetest.TestShowTriggers(t, h) }},
	{name: "TriggerErrors", run: func(t *testing.T, h harness) { enginetest.TestTriggerErrors(t, h) }},
	{name: "StoredProcedures", run: func(t *testing.T, h harness) { enginetest.TestStoredProcedures(t, h) }},
	{name: "Events", skip: reasonEvents, run: func(t *testing.T, h harness) { enginetest.TestEvents(t, h) }},
	{name: "Views", run: func(t *testing.T, h harness) { enginetest.TestViews(t, h) }},
	{name: "GeneratedColumns", run: func(t *testing.T, h harness) { enginetest.TestGeneratedColumns(t, h) }},
	{name: "ReadOnly", run: func(t *testing.T, h harness) { enginetest.TestReadOnly(t, h, isMemory(h)) }},

	// DDL
	{name: "CreateTable", short: true, run: func(t *testing.T, h harness) { enginetest.TestCreateTable(t, h) }},
	{name: "DropTable", run: func(t *testing.T, h harness) { enginetest.TestDropTable(t, h) }},
	{name: "RenameTable", run: func(t *testing.T, h harness) { enginetest.TestRenameTable(t, h) }},
	{name: "RenameColumn", run: func(t *testing.T, h harness) { enginetest.TestRenameColumn(t, h) }},
	{name: "AddColumn", run: func(t *testing.T, h harness) { enginetest.TestAddColumn(t, h) }},
	{name: "ModifyColumn", run: func(t *testing.T, h harness) { enginetest.TestModifyColumn(t, h) }},
	{name: "DropColumn", run: func(t *testing.T, h harness) { enginetest.TestDropColumn(t, h) }},
	{name: "DropColumnKeylessTables", run: func(t *testing.T, h harness) { enginetest.TestDropColumnKeylessTables(t, h) }},
	{name: "CreateDatabase", run: func(t *testing.T, h harness) { enginetest.TestCreateDatabase(t, h) }},
	{name: "DropDatabase", run: func(t *testing.T, h harness) { enginetest.TestDropDatabase(t, h) }},
	{name: "ConcurrentCreateDatabaseIfNotExists", short: true, run: func(t *testing.T, h harness) { enginetest.TestConcurrentCreateDatabaseIfNotExists(t, h) }},
	{name: "ConcurrentDropDatabaseIfExists", short: true, run: func(t *testing.T, h harness) { enginetest.TestConcurrentDropDatabaseIfExists(t, h) }},
	{name: "PkOrdinalsDDL", run: func(t *testing.T, h harness) { enginetest.TestPkOrdinalsDDL(t, h) }},
	{name: "PkOrdinalsDML", run: func(t *testing.T, h harness) { enginetest.TestPkOrdinalsDML(t, h) }},
	{name: "AlterTable", short: true, run: func(t *testing.T, h harness) { enginetest.TestAlterTable(t, h) }},
	{name: "AddDropPks", short: true, run: func(t *testing.T, h harness) { enginetest.TestAddDropPks(t, h) }},
	{name: "AddAutoIncrementColumn", run: func(t *testing.T, h harness) {
		for _, script := range queries.AlterTableAddAutoIncrementScripts {
			enginetest.TestScript(t, h, script)
		}
	}},
	{name: "ColumnDefaults", run: func(t *testing.T, h harness) { enginetest.TestColumnDefaults(t, h) }},
	{name: "ShowTableStatus", run: func(t *testing.T, h harness) { enginetest.TestShowTableStatus(t, h) }},
	{name: "CreateCheckConstraints", run: func(t *testing.T, h harness) { enginetest.TestCreateCheckConstraints(t, h) }},
	{name: "ChecksOnInsert", short: true, run: func(t *testing.T, h harness) { enginetest.TestChecksOnInsert(t, h) }},
	{name: "ChecksOnUpdate", run: func(t *testing.T, h harness) { enginetest.TestChecksOnUpdate(t, h) }},
	{name: "DisallowedCheckConstraints", run: func(t *testing.T, h harness) { enginetest.TestDisallowedCheckConstraints(t, h) }},
	{name: "DropCheckConstraints", run: func(t *testing.T, h harness) { enginetest.TestDropCheckConstraints(t, h) }},
	{name: "CreateForeignKeys", run: func(t *testing.T, h harness) { enginetest.TestCreateForeignKeys(t, h) }},
	{name: "DropForeignKeys", run: func(t *testing.T, h harness) { enginetest.TestDropForeignKeys(t, h) }},
	{name: "ForeignKeys", short: true, run: func(t *testing.T, h harness) { enginetest.TestForeignKeys(t, h) }},

	// indexes
	{name: "Indexes", short: true, run: func(t *testing.T, h harness) { enginetest.TestIndexes(t, h) }},
	{name: "IndexPrefix", short: true, run: func(t *testing.T, h harness) { enginetest.TestIndexPrefix(t, h) }},
	{name: "IndexedExpressions", run: func(t *testing.T, h harness) { enginetest.TestIndexedExpressions(t, h) }},
	{name: "FulltextIndexes", skip: reasonFulltext, run: func(t *testing.T, h harness) { enginetest.TestFulltextIndexes(t, h) }},
	{name: "VectorIndexes", run: func(t *testing.T, h harness) { enginetest.TestVectorIndexes(t, h) }},
	{name: "VectorFunctions", run: func(t *testing.T, h harness) { enginetest.TestVectorFunctions(t, h) }},
	{name: "VectorType", run: func(t *testing.T, h harness) { enginetest.TestVectorType(t, h) }},

	// spatial
	{name: "SpatialInsertInto", run: func(t *testing.T, h harness) { enginetest.TestSpatialInsertInto(t, h) }},
	{name: "SpatialUpdate", memory: memoryWithPartitions, run: func(t *testing.T, h harness) { enginetest.TestSpatialUpdate(t, h) }},
	{name: "SpatialDelete", memory: memoryWithPartitions, run: func(t *testing.T, h harness) { enginetest.TestSpatialDelete(t, h) }},
	{name: "SpatialScripts", memory: memoryWithPartitions, run: func(t *testing.T, h harness) { enginetest.TestSpatialScripts(t, h) }},
	{name: "LargeGeometryScripts", memory: memoryWithPartitions, run: func(t *testing.T, h harness) { enginetest.TestLargeGeometryScripts(t, h) }},
	{name: "SpatialIndexScripts", memory: memoryWithPartitions, run: func(t *testing.T, h harness) { enginetest.TestSpatialIndexScripts(t, h) }},
	{name: "SpatialIndexPlans", skip: reasonSpatial, memory: memoryWithPartitions, run: func(t *testing.T, h harness) { enginetest.TestSpatialIndexPlans(t, h) }},

	// transactions, users, sessions
	{name: "TransactionScripts", short: true, memory: skippingMemory, run: transactionScripts},
	{name: "ConcurrentTransactions", noMemory: true, run: func(t *testing.T, h harness) { enginetest.TestConcurrentTransactions(t, h) }},
	{name: "UserPrivileges", memory: memoryWithPartitions, run: func(t *testing.T, h harness) { enginetest.TestUserPrivileges(t, h) }},
	{name: "UserAuthentication", testdata: true, memory: memoryWithPartitions, run: func(t *testing.T, h harness) { enginetest.TestUserAuthentication(t, h) }},
	{name: "PrivilegePersistence", memory: memoryWithPartitions, run: func(t *testing.T, h harness) { enginetest.TestPrivilegePersistence(t, h) }},
}
