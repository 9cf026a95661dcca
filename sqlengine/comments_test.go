package sqlengine

import "testing"

func TestVersionComments(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		skipped  bool
	}{
		{"SELECT 1", "SELECT 1", false},
		{"/*!40101 SET @x=1 */", "/*!40101 SET @x=1 */", false},
		{"/*!80031 SET @x=1 */", "/*!80031 SET @x=1 */", false},
		{"/*!80032 SET @x=1 */", "/* 80032 SET @x=1 */", true},
		{"/*!99999 enable the sandbox mode */", "/* 99999 enable the sandbox mode */", true},
		{"/*M!999999 enable the sandbox mode */\n/*!40101 SET @a=1 */", "/*M 999999 enable the sandbox mode */\n/*!40101 SET @a=1 */", true},
		{"/*M!100616 SET NOTE_VERBOSITY=0 */", "/*M 100616 SET NOTE_VERBOSITY=0 */", true},
		{"SELECT '/*!99999 x */', `/*M!1 y */`, \"/*!99999\"", "SELECT '/*!99999 x */', `/*M!1 y */`, \"/*!99999\"", false},
		{"SELECT 'it\\'s /*M!1 */'", "SELECT 'it\\'s /*M!1 */'", false},
		{"SELECT 1 -- /*!99999 x */\n", "SELECT 1 -- /*!99999 x */\n", false},
		{"SELECT 1 # /*M!1 x */", "SELECT 1 # /*M!1 x */", false},
		{"/* /*!99999 */ SELECT 1", "/* /*!99999 */ SELECT 1", false},
		{"/*!40101 SELECT '/*M!' */ /*M!1 x */", "/*!40101 SELECT '/*M!' */ /*M 1 x */", true},
		{"/*!999", "/*!999", false},
		{"/*M!", "/*M ", true},
	} {
		got, skipped := versionComments(tc.in)
		if got != tc.want || skipped != tc.skipped {
			t.Errorf("versionComments(%q) = %q, %v; want %q, %v", tc.in, got, skipped, tc.want, tc.skipped)
		}
	}
}
