package sqlengine

import (
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
)

// TestAbortedConnectionIsAWarning: a client reset is logged as an aborted
// connection at warning level; other errors keep their level and text.
func TestAbortedConnectionIsAWarning(t *testing.T) {
	f := abortedAsWarning{&logrus.TextFormatter{DisableTimestamp: true}}
	for _, tc := range []struct {
		level logrus.Level
		msg   string
		want  string
	}{
		{logrus.ErrorLevel, "Error reading packet from client 11 (127.0.0.1:34684): connection reset by peer\nio.ReadFull(header size) failed",
			`level=warning msg="aborted connection (client 11 (127.0.0.1:34684): connection reset by peer\nio.ReadFull(header size) failed)"`},
		{logrus.ErrorLevel, "Error reading packet from client 3 (127.0.0.1:1): write: broken pipe",
			`level=warning msg="aborted connection (client 3 (127.0.0.1:1): write: broken pipe)"`},
		{logrus.ErrorLevel, "Error reading packet from client 4 (127.0.0.1:2): unexpected header", `level=error msg="Error reading packet from client 4 (127.0.0.1:2): unexpected header"`},
		{logrus.ErrorLevel, "something else: connection reset by peer", `level=error msg="something else: connection reset by peer"`},
	} {
		out, err := f.Format(&logrus.Entry{Level: tc.level, Message: tc.msg, Data: logrus.Fields{}})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(string(out)); got != tc.want {
			t.Errorf("Format(%q)\n got %s\nwant %s", tc.msg, got, tc.want)
		}
	}
}
