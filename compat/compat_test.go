package compat

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"

	"github.com/dolthub/go-mysql-server/enginetest"
	"github.com/dolthub/go-mysql-server/enginetest/queries"
)

// full reports whether every suite runs (CERTUS_COMPAT=full), not only
// the short ones.
func full() bool { return os.Getenv("CERTUS_COMPAT") == "full" }

// TestCertus runs the suites on Certus.
func TestCertus(t *testing.T) {
	for _, s := range suites {
		t.Run(s.name, func(t *testing.T) {
			switch {
			case s.skip != "":
				t.Skip(s.skip)
			case !s.short && !full():
				t.Skip("runs with CERTUS_COMPAT=full")
			}
			// statements name files relative to secure_file_priv and the
			// tests relative to the working directory: both are the
			// enginetest directory for the suites that read its files,
			// a new directory for the others
			h := NewHarness(s.name)
			h.filesDir = t.TempDir()
			if s.testdata {
				h.filesDir = enginetestDir(t)
			}
			t.Chdir(h.filesDir)
			s.run(t, h)
		})
	}
}

// TestMemory runs the same suites on go-mysql-server's memory harness,
// for the comparison bench/compat.sh prints (CERTUS_COMPAT_MEMORY=1).
func TestMemory(t *testing.T) {
	if os.Getenv("CERTUS_COMPAT_MEMORY") == "" {
		t.Skip("runs with CERTUS_COMPAT_MEMORY=1")
	}
	for _, s := range suites {
		t.Run(s.name, func(t *testing.T) {
			switch {
			case s.noMemory:
				t.Skip("go-mysql-server does not run this suite on its memory harness")
			case !s.short && !full():
				t.Skip("runs with CERTUS_COMPAT=full")
			}
			h := defaultMemory
			if s.memory != nil {
				h = s.memory
			}
			if s.testdata {
				t.Chdir(enginetestDir(t))
			}
			s.run(t, h())
		})
	}
}

// enginetestDir is the directory of go-mysql-server's enginetest package
// in the module cache, found from the source position of one of its
// functions.
func enginetestDir(t *testing.T) string {
	pc := reflect.ValueOf(enginetest.TestLoadData).Pointer()
	file, _ := runtime.FuncForPC(pc).FileLine(pc)
	if !filepath.IsAbs(file) {
		t.Skipf("go-mysql-server's source is not available (%q)", file)
	}
	return filepath.Dir(file)
}

// isMemory reports whether h is go-mysql-server's memory harness, whose
// provider has the external stored procedures TestReadOnly calls when
// asked to.
func isMemory(h harness) bool {
	_, ok := h.(*enginetest.MemoryHarness)
	return ok
}

// transactionScripts is enginetest.TestTransactionScripts, script by
// script, so the skip table can name a whole script (the harness is only
// asked about single statements there).
func transactionScripts(t *testing.T, h harness) {
	for _, script := range queries.TransactionTests {
		if sh, ok := h.(enginetest.SkippingHarness); ok && sh.SkipQueryTest(script.Name) {
			t.Run(script.Name, func(t *testing.T) { t.Skip() })
			continue
		}
		enginetest.TestTransactionScript(t, h, script)
	}
}
