package systest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/certusdb/certus/internal/testcluster"
)

// TestProxyNoUsers: the proxy has no default account, so without users
// (no configuration file, or one that lists none) it refuses to start and
// says why.
func TestProxyNoUsers(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "proxy.json")
	if err := os.WriteFile(empty, []byte(`{"rules": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"proxy", "--listen", testcluster.FreePort(t), "--cluster", "127.0.0.1:9"},
		{"proxy", "--listen", testcluster.FreePort(t), "--cluster", "127.0.0.1:9", "--config", empty},
	} {
		out, err := testcluster.Command(t, args...)
		if err == nil || !strings.Contains(out, "no users") || !strings.Contains(out, "no default account") {
			t.Fatalf("certus %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
