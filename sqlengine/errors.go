package sqlengine

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/analyzer/analyzererrors"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	goerrors "gopkg.in/src-d/go-errors.v1"

	"github.com/certusdb/certus/sqlengine/internal/gmstable"
	"github.com/certusdb/certus/storage"
	"github.com/certusdb/certus/txn"
	"github.com/certusdb/certus/writeset"
)

// Errors of the cluster layer, as the SQL layer reports them.
var (
	// ErrNotPrimary is Galera's ER_UNKNOWN_COM_ERROR (1047, 08S01) for a
	// node outside the primary component.
	ErrNotPrimary = mysql.NewSQLError(mysql.ERUnknownComError, "08S01", "WSREP has not yet prepared node for application use")
	// ErrSyncWaitTimeout is returned when wsrep_sync_wait could not
	// complete in time (Galera reports ER_LOCK_WAIT_TIMEOUT).
	ErrSyncWaitTimeout = mysql.NewSQLError(mysql.ERLockWaitTimeout, mysql.SSUnknownSQLState, "Lock wait timeout exceeded; try restarting transaction")
	// ErrEmptyQuery is MySQL's answer to a statement with no SQL in it.
	ErrEmptyQuery = mysql.NewSQLError(mysql.EREmptyQuery, "42000", "Query was empty")
	// ErrSetGlobalDenied is MySQL's answer to SET GLOBAL or SET PERSIST
	// from a user without the privilege (go-mysql-server checks none).
	ErrSetGlobalDenied = mysql.NewSQLError(mysql.ERSpecifiedAccessDenied, "42000", "Access denied; you need (at least one of) the SUPER or SYSTEM_VARIABLES_ADMIN privilege(s) for this operation")
	// ErrProcessDenied is MySQL's answer to SHOW ENGINE ... STATUS from a
	// user without the PROCESS privilege.
	ErrProcessDenied = mysql.NewSQLError(mysql.ERSpecifiedAccessDenied, "42000", "Access denied; you need (at least one of) the PROCESS privilege(s) for this operation")
	// ErrReloadDenied is MySQL's answer to FLUSH from a user without
	// RELOAD.
	ErrReloadDenied = mysql.NewSQLError(mysql.ERSpecifiedAccessDenied, "42000", "Access denied; you need (at least one of) the RELOAD privilege(s) for this operation")
	// errInterrupted is MySQL's answer to a statement stopped by KILL
	// QUERY (the statement's context was cancelled).
	errInterrupted = mysql.NewSQLError(mysql.ERQueryInterrupted, "70100", "Query execution was interrupted")
	// errExecutionTime is MySQL's answer to a SELECT stopped by
	// max_execution_time (the statement's context deadline passed).
	errExecutionTime = mysql.NewSQLError(mysql.ERQueryTimeout, "HY000", "Query execution was interrupted, maximum statement execution time exceeded")
	// ErrPacketTooLarge is returned for a statement longer than
	// max_allowed_packet.
	ErrPacketTooLarge = mysql.NewSQLError(mysql.ERNetPacketTooLarge, "08S01", "Got a packet bigger than 'max_allowed_packet' bytes")
)

// sqlState gives the SQLSTATE MySQL uses for codes go-mysql-server
// reports with a generic one.
var sqlState = map[int]string{
	mysql.ERDupEntry:                    "23000",
	mysql.ERParseError:                  "42000",
	mysql.ERNoSuchTable:                 "42S02",
	mysql.ERBadFieldError:               "42S22",
	mysql.ERLockDeadlock:                "40001",
	mysql.ERLockWaitTimeout:             "HY000",
	mysql.ERUnknownComError:             "08S01",
	mysql.ERBadDb:                       "42000",
	mysql.ERDbCreateExists:              "HY000",
	mysql.ERTableExists:                 "42S01",
	mysql.ERBadNullError:                "23000",
	mysql.ERWrongValueForVar:            "42000",
	mysql.ERWrongTypeForVar:             "42000",
	mysql.ERUnknownSystemVariable:       "HY000",
	mysql.ErNoReferencedRow2:            "23000",
	mysql.ERRowIsReferenced2:            "23000",
	mysql.ERNonUniq:                     "23000",
	mysql.ERSubqueryNo1Row:              "21000",
	mysql.EROperandColumns:              "21000",
	mysql.ERMixOfGroupFuncAndFields:     "42000",
	mysql.ERDupFieldName:                "42S21",
	mysql.ERDupKeyName:                  "42000",
	mysql.ERSPDoesNotExist:              "42000",
	mysql.ERNoDb:                        "3D000",
	mysql.ERAccessDeniedError:           "28000",
	mysql.ERDBAccessDenied:              "42000",
	mysql.ERTruncatedWrongValueForField: "HY000",
	mysql.ERDataTooLong:                 "22001",
	mysql.ERWarnDataOutOfRange:          "22003",
	mysql.ERNetPacketTooLarge:           "08S01",
	1792:                                "25006", // read-only transaction
}

// engineErr converts the errors of Certus's own layers (lock waits,
// deadlocks, certification, quorum) to MySQL errors where they enter
// go-mysql-server, which would otherwise report them as 1105. Other errors
// pass unchanged so go-mysql-server can still act on them.
func engineErr(err error) error {
	if err == nil {
		return nil
	}
	var dup *storage.DuplicateKeyError
	if errors.As(err, &dup) {
		// a unique index built over duplicates, refused at apply: keep
		// go-mysql-server's error kind (ToSQLError reports 1062)
		return gmstable.DupErr(err)
	}
	switch {
	case errors.Is(err, txn.ErrCertification), errors.Is(err, txn.ErrDeadlock),
		errors.Is(err, txn.ErrLockWaitTimeout), errors.Is(err, txn.ErrReadOnly),
		errors.Is(err, storage.ErrApplyRejected), errors.Is(err, writeset.ErrCorrupt),
		errors.Is(err, writeset.ErrNotPrimary), errors.Is(err, writeset.ErrOutcomeUnknown):
		return ToSQLError(err)
	}
	return err
}

// kindCode maps a go-mysql-server error kind to MySQL's code and SQLSTATE.
type kindCode struct {
	re    *regexp.Regexp
	code  int
	state string
}

// kindCodes recognise go-mysql-server errors by their message pattern:
// its protocol handler turns them into 1105 before Certus sees them, so the
// error value is gone by then.
var kindCodes = buildKindCodes([]struct {
	kind  *goerrors.Kind
	code  int
	state string
}{
	{sql.ErrColumnNotFound, mysql.ERBadFieldError, "42S22"},
	{sql.ErrTableColumnNotFound, mysql.ERBadFieldError, "42S22"},
	{sql.ErrTableAlreadyExists, mysql.ERTableExists, "42S01"},
	{sql.ErrInsertIntoMismatchValueCount, mysql.ERWrongValueCountOnRow, "21S01"},
	{types.ErrLengthBeyondLimit, mysql.ERDataTooLong, "22001"},
	{types.ErrBadCharsetString, mysql.ERTruncatedWrongValueForField, "HY000"},
	{sql.ErrAmbiguousColumnName, mysql.ERNonUniq, "23000"},
	{sql.ErrNoDatabaseSelected, mysql.ERNoDb, "3D000"},
	{sql.ErrGeneratedColumnValue, 3105, "HY000"}, // ER_NON_DEFAULT_VALUE_FOR_GENERATED_COLUMN
	{sql.ErrValueOutOfRange, mysql.ERWarnDataOutOfRange, "22003"},
	{sql.ErrIdentifierIsTooLong, mysql.ERTooLongIdent, "42000"},
	{sql.ErrInvalidIdentifier, mysql.ERTooLongIdent, "42000"},
	{sql.ErrUnknownSystemVariable, mysql.ERUnknownSystemVariable, "HY000"},
	{sql.ErrCollationUnknown, mysql.ERUnknownCollation, "HY000"},
	{sql.ErrInvalidSystemVariableValue, mysql.ERWrongValueForVar, "42000"},
	{sql.ErrSystemVariableReadOnly, mysql.ERIncorrectGlobalLocalVar, "HY000"},
	{sql.ErrSystemVariableSessionOnly, mysql.ERIncorrectGlobalLocalVar, "HY000"},
	{sql.ErrSystemVariableGlobalOnly, mysql.ERIncorrectGlobalLocalVar, "HY000"},
	{sql.ErrSavepointDoesNotExist, mysql.ERSPDoesNotExist, "42000"},
	{sql.ErrFunctionNotFound, mysql.ERSPDoesNotExist, "42000"}, // FUNCTION x does not exist
	{sql.ErrUnknownTable, mysql.ERBadTable, "42S02"},
	{sql.ErrTableNotFound, mysql.ERNoSuchTable, "42S02"},
	{sql.ErrDatabaseNotFound, mysql.ERBadDb, "42000"},
	{sql.ErrDuplicateKey, mysql.ERDupKeyName, "42000"},
	{sql.ErrDuplicateColumn, mysql.ERDupFieldName, "42S21"},
	{sql.ErrColumnExists, mysql.ERDupFieldName, "42S21"},
	{sql.ErrStoredProcedureDoesNotExist, mysql.ERSPDoesNotExist, "42000"},
	{sql.ErrIndexNotFound, mysql.ERCantDropFieldOrKey, "42000"},
	{sql.ErrInsertIntoNonNullableProvidedNull, mysql.ERBadNullError, "23000"},
	{sql.ErrPrivilegeCheckFailed, erTableAccessDenied, "42000"},
	{sql.ErrTableAccessDeniedForUser, erTableAccessDenied, "42000"},
	{sql.ErrDatabaseAccessDeniedForUser, mysql.ERDBAccessDenied, "42000"},
	{analyzererrors.ErrValidationGroupBy, mysql.ERWrongFieldWithGroup, "42000"},
	{sql.ErrCheckConstraintViolated, erCheckConstraintViolated, "HY000"},
	{sql.ErrShowGrantsUserDoesNotExist, erNonexistingGrant, "42000"},
	{sql.ErrRevokeUserDoesNotExist, erNonexistingGrant, "42000"},
	// values a column of a type cannot take (found by bench/difftest)
	{types.ErrConvertingToTime, mysql.ERTruncatedWrongValue, "22007"},
	{types.ErrConvertingToTimeOutOfRange, mysql.ERTruncatedWrongValue, "22007"},
	{types.ErrConvertingToTimeType, mysql.ERTruncatedWrongValue, "22007"},
	{types.ErrConvertingToYear, mysql.ERWarnDataOutOfRange, "22003"},
	{types.ErrConvertingToDecimal, mysql.ERTruncatedWrongValueForField, "HY000"},
	{types.ErrConvertingToEnum, mysql.ERWarnDataTruncated, "01000"},
	{sql.ErrConvertingToSet, mysql.ERWarnDataTruncated, "01000"},
})

// erCheckConstraintViolated is MySQL's ER_CHECK_CONSTRAINT_VIOLATED.
const erCheckConstraintViolated = 3819

// erTableAccessDenied is MySQL's ER_TABLEACCESS_DENIED_ERROR ("SELECT
// command denied to user ... for table ..."), which vitess does not name.
const erTableAccessDenied = 1142

// erNonexistingGrant is MySQL's ER_NONEXISTING_GRANT ("There is no such
// grant defined for user ..."), which vitess does not name.
const erNonexistingGrant = 1141

// erCannotUser is MySQL's ER_CANNOT_USER ("Operation ... failed for
// account"), which vitess does not name.
const erCannotUser = 1396

// MySQL's codes for statements that nest or recurse too far, which vitess
// does not name: ER_STACK_OVERRUN_NEED_MORE, ER_PS_NO_RECURSION,
// ER_SP_RECURSION_LIMIT, ER_VIEW_RECURSIVE, ER_CTE_MAX_RECURSION_DEPTH.
const (
	erStackOverrun     = 1436
	erPSNoRecursion    = 1444
	erSPRecursionLimit = 1456
	erViewRecursive    = 1462
	erCTEMaxRecursion  = 3636
)

// erMultiUpdateKeyConflict is MySQL's ER_MULTI_UPDATE_KEY_CONFLICT: a
// multi-table UPDATE changes a primary key of a table it updates through
// two aliases.
const erMultiUpdateKeyConflict = 1706

var verb = regexp.MustCompile(`%[-+# 0-9.]*[a-zA-Z]`)

func buildKindCodes(kinds []struct {
	kind  *goerrors.Kind
	code  int
	state string
}) []kindCode {
	out := make([]kindCode, 0, len(kinds))
	for _, k := range kinds {
		parts := verb.Split(k.kind.Message, -1)
		for i := range parts {
			parts[i] = regexp.QuoteMeta(parts[i])
		}
		out = append(out, kindCode{re: regexp.MustCompile(strings.Join(parts, "(?s:.*)")), code: k.code, state: k.state})
	}
	return out
}

// byMessage finds the MySQL code of a go-mysql-server message.
func byMessage(msg string) (kindCode, bool) {
	for _, k := range kindCodes {
		if k.re.MatchString(msg) {
			return k, true
		}
	}
	return kindCode{}, false
}

// ToSQLError converts any error to the MySQL error a client should see.
func ToSQLError(err error) *mysql.SQLError {
	if err == nil {
		return nil
	}
	var se *mysql.SQLError
	switch {
	case errors.As(err, &se):
		return fixState(se)
	case errors.Is(err, writeset.ErrNotPrimary):
		return ErrNotPrimary
	case errors.Is(err, writeset.ErrOutcomeUnknown):
		return mysql.NewSQLError(1180 /* ER_ERROR_DURING_COMMIT */, "HY000", "%s", writeset.ErrOutcomeUnknown.Error())
	case errors.Is(err, txn.ErrCertification), errors.Is(err, txn.ErrDeadlock):
		return mysql.NewSQLError(mysql.ERLockDeadlock, mysql.SSLockDeadlock, "Deadlock found when trying to get lock; try restarting transaction")
	case errors.Is(err, txn.ErrLockWaitTimeout):
		return mysql.NewSQLError(mysql.ERLockWaitTimeout, "HY000", "Lock wait timeout exceeded; try restarting transaction")
	case errors.Is(err, txn.ErrReadOnly):
		return mysql.NewSQLError(1792, "25006", "Cannot execute statement in a READ ONLY transaction.")
	case errors.Is(err, storage.ErrApplyRejected):
		var dup *storage.DuplicateKeyError
		if errors.As(err, &dup) {
			return mysql.NewSQLError(mysql.ERDupEntry, "23000", "%s", dup.Error())
		}
		return mysql.NewSQLError(mysql.ERUnknownError, "HY000", "%s", strings.TrimPrefix(err.Error(), "storage: "))
	case errors.Is(err, writeset.ErrCorrupt):
		return mysql.NewSQLError(mysql.ERUnknownError, "HY000", "%s", err.Error())
	case errors.Is(err, context.Canceled):
		return errInterrupted
	case errors.Is(err, context.DeadlineExceeded):
		return errExecutionTime
	}
	var uk sql.UniqueKeyError
	if errors.As(err, &uk) {
		return mysql.NewSQLError(mysql.ERDupEntry, "23000", "%s", uk.Error())
	}
	if k, ok := byMessage(sql.UnwrapError(err).Error()); ok {
		return mysql.NewSQLError(k.code, k.state, "%s", err.Error())
	}
	return fixState(sql.CastSQLError(err))
}

// embedded matches the text of a *mysql.SQLError.
var embedded = regexp.MustCompile(`^(?s)(.*) \(errno (\d+)\) \(sqlstate ([0-9A-Z]{5})\)$`)

// embeddedSQLError recovers the MySQL error whose text msg is, or returns
// nil: go-mysql-server reports the parser's errors, the statement guard's
// among them, as an unknown error of their text.
func embeddedSQLError(msg string) *mysql.SQLError {
	m := embedded.FindStringSubmatch(msg)
	if m == nil {
		return nil
	}
	code, err := strconv.Atoi(m[2])
	if err != nil {
		return nil
	}
	return mysql.NewSQLError(code, m[3], "%s", m[1])
}

// fixState replaces a generic SQLSTATE with MySQL's for known codes, and
// turns go-mysql-server's parse errors (reported as 1105) into 1064.
func fixState(se *mysql.SQLError) *mysql.SQLError {
	code := se.Number()
	msg := se.Message
	if code == mysql.ERUnknownError {
		if inner := embeddedSQLError(msg); inner != nil {
			return inner
		}
		// go-mysql-server passes a statement's context error on as text
		switch msg {
		case context.Canceled.Error():
			return errInterrupted
		case context.DeadlineExceeded.Error():
			return errExecutionTime
		}
	}
	if code == mysql.ERUnknownError && isParseError(msg) {
		return mysql.NewSQLError(mysql.ERParseError, "42000", "%s", msg)
	}
	if code == mysql.ERUnknownError {
		if k, ok := byMessage(msg); ok {
			return mysql.NewSQLError(k.code, k.state, "%s", msg)
		}
	}
	if code == mysql.ERSyntaxError {
		return mysql.NewSQLError(mysql.ERParseError, "42000", "%s", msg)
	}
	if code == mysql.ERDupEntry {
		// go-mysql-server prefixes MySQL's message with its own words
		for _, p := range []string{"duplicate primary key given: ", "duplicate unique key given: "} {
			msg = strings.TrimPrefix(msg, p)
		}
		return mysql.NewSQLError(code, "23000", "%s", msg)
	}
	if want, ok := sqlState[code]; ok && se.SQLState() != want {
		return mysql.NewSQLError(code, want, "%s", msg)
	}
	return se
}

func isParseError(msg string) bool {
	return strings.Contains(msg, "syntax error at position") || strings.HasPrefix(msg, "You have an error in your SQL syntax")
}
