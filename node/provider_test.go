package node

import (
	"strings"
	"testing"

	"github.com/certusdb/certus/flowcontrol"
)

func TestProviderOptions(t *testing.T) {
	base := providerOptions{flow: flowcontrol.Defaults(), gcache: 128 << 20}
	for _, tc := range []struct {
		in, want, err string
	}{
		{in: "", want: "gcache.size = 134217728; gcs.fc_factor = 1; gcs.fc_limit = 100"},
		{in: "gcs.fc_limit=200", want: "gcache.size = 134217728; gcs.fc_factor = 1; gcs.fc_limit = 200"},
		{in: " GCS.FC_LIMIT = 16 ; gcs.fc_factor = 0.8; ", want: "gcache.size = 134217728; gcs.fc_factor = 0.8; gcs.fc_limit = 16"},
		{in: "gcs.fc_limit=0", err: "gcs.fc_limit must be"},
		{in: "gcs.fc_limit=-3", err: "gcs.fc_limit must be"},
		{in: "gcs.fc_factor=1.5", err: "gcs.fc_factor must be"},
		{in: "gcs.fc_factor=NaN", err: "gcs.fc_factor must be"},
		{in: "gcs.fc_limit=5; gcs.fc_limit=6", err: "given twice"},
		{in: "gcs.fc_limit", err: "not key = value"},
		{in: "evs.suspect_timeout=PT5S", err: "unknown provider option"},
		{in: "gcache.size=1G", err: "--gcache-size"},
		// a bad option changes nothing, not even the good ones before it
		{in: "gcs.fc_limit=7; bogus=1", err: "unknown provider option"},
	} {
		got, err := base.apply(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("apply(%q): err %v, want one containing %q", tc.in, err, tc.err)
			}
			if got != base {
				t.Errorf("apply(%q) failed but changed the options to %s", tc.in, got)
			}
			continue
		}
		if err != nil || got.String() != tc.want {
			t.Errorf("apply(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}
