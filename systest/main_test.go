// Package systest holds system tests: they start real certus processes and
// talk to them over TCP with real MySQL clients.
package systest

import (
	"io"
	"log"
	"os"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/certusdb/certus/internal/testcluster"
)

func TestMain(m *testing.M) {
	// the driver logs every connection a killed node resets; tests check
	// errors themselves
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))
	code := m.Run()
	testcluster.Cleanup()
	os.Exit(code)
}
