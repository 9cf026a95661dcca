package sqlengine

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestStatements runs testdata/statements: what the handler learns of a
// statement's text (inspect) and the text go-mysql-server is given
// (rewrite). Run with -rewrite to update the expected answers.
func TestStatements(t *testing.T) {
	datadriven.RunTest(t, "testdata/statements", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "inspect":
			return describe(inspect(d.Input)) + "\n"
		case "rewrite":
			out, skipped := rewriteText(d.Input, true)
			if skipped {
				out += "\n(comments MySQL would not run were blanked)"
			}
			return out + "\n"
		}
		return fmt.Sprintf("unknown command %q", d.Cmd)
	})
}

// answerNames names the answerers for describe.
var answerNames = map[uintptr]string{}

func init() {
	for name, a := range map[string]answerer{
		"flush": answerFlush, "engine-status": answerEngineStatus, "log-table": answerLogTable,
		"diagnostics": answerDiagnostics, "kill": answerKill, "reload-tls": answerReloadTLS,
		"checksum": answerChecksum, "do": answerDo, "optimize": answerOptimize, "check": answerCheck,
		"password": answerPassword, "alter-user": answerAlterUser, "show-create-user": answerShowCreateUser,
	} {
		answerNames[reflect.ValueOf(a).Pointer()] = name
	}
}

// describe lists what info says, in a fixed order.
func describe(info stmtInfo) string {
	var out []string
	if k := map[int]string{kindRead: "read", kindUpdate: "update", kindInsert: "insert", kindShow: "show"}[info.kind]; k != "" {
		out = append(out, "kind="+k)
	}
	for _, f := range []struct {
		name string
		on   bool
	}{
		{"locking", info.locking}, {"non-primary-ok", info.nonPrimaryOK}, {"commit", info.commit},
		{"empty", info.empty}, {"begin", info.begin}, {"implicit-commit", info.implicitCommit},
	} {
		if f.on {
			out = append(out, f.name)
		}
	}
	if info.special != nil {
		out = append(out, "special="+info.special.name)
	}
	if info.answer != nil {
		out = append(out, "answer="+answerNames[reflect.ValueOf(info.answer).Pointer()])
	}
	if len(out) == 0 {
		return "(nothing)"
	}
	return strings.Join(out, " ")
}
