package sqlengine

import (
	"context"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/certusdb/certus/sqlengine/internal/sqlvalue"
)

// TestSessionVariableMemo checks that the session's memo of its variables
// follows every way they change: SET, initialisation, a new default, and
// SET GLOBAL of a global-only variable (never memoized).
func TestSessionVariableMemo(t *testing.T) {
	s := NewSession(nil, sql.NewBaseSession())
	ctx := sql.NewContext(context.Background(), sql.WithSession(s))
	get := func(name string) any {
		t.Helper()
		v, err := s.GetSessionVariable(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v, ok := sqlvalue.AsInt(get("sql_select_limit")); !ok || v == 5 {
		t.Fatalf("sql_select_limit starts at %v", v)
	}
	if err := s.SetSessionVariable(ctx, "sql_select_limit", int64(5)); err != nil {
		t.Fatal(err)
	}
	if v, _ := sqlvalue.AsInt(get("sql_select_limit")); v != 5 {
		t.Fatalf("after SET sql_select_limit = 5 the session reads %v", v)
	}
	get("autocommit")
	if err := s.SetSessionVariable(ctx, "autocommit", false); err != nil {
		t.Fatal(err)
	}
	if sqlvalue.Truthy(get("autocommit")) {
		t.Fatalf("autocommit still reads ON after SET autocommit = 0")
	}
	if err := s.InitSessionVariableDefault(ctx, "wait_timeout", int64(77)); err != nil {
		t.Fatal(err)
	}
	if v, _ := sqlvalue.AsInt(get("wait_timeout")); v != 77 {
		t.Fatalf("wait_timeout reads %v after a new default of 77", v)
	}
	const global = "max_connections"
	if !isGlobalOnly(global) {
		t.Fatalf("%s is expected to be global-only", global)
	}
	_, old, _ := sql.SystemVariables.GetGlobal(global)
	defer func() { _ = sql.SystemVariables.SetGlobal(ctx, global, old) }()
	get(global)
	if err := sql.SystemVariables.SetGlobal(ctx, global, int64(123)); err != nil {
		t.Fatal(err)
	}
	if v, _ := sqlvalue.AsInt(get(global)); v != 123 {
		t.Fatalf("%s reads %v after SET GLOBAL 123", global, v)
	}
}
