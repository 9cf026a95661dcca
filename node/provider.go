package node

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/certusdb/certus/flowcontrol"
)

// providerOptions are the settings of Galera's wsrep_provider_options that
// a Certus node understands.
type providerOptions struct {
	flow   flowcontrol.Config
	gcache uint64 // gcache.size: shown, set by --gcache-size
}

// String formats the options as Galera shows wsrep_provider_options.
func (o providerOptions) String() string {
	return fmt.Sprintf("gcache.size = %d; gcs.fc_factor = %s; gcs.fc_limit = %d",
		o.gcache, strconv.FormatFloat(o.flow.Factor, 'f', -1, 64), o.flow.Limit)
}

// apply parses "key = value; key = value" and returns o with those options
// changed. An unknown option or a bad value is an error and changes
// nothing.
func (o providerOptions) apply(s string) (providerOptions, error) {
	out := o
	seen := map[string]bool{}
	for _, item := range strings.Split(s, ";") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		k, v, ok := strings.Cut(item, "=")
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
		if !ok || k == "" || v == "" {
			return o, fmt.Errorf("provider option %q is not key = value", item)
		}
		if seen[k] {
			return o, fmt.Errorf("provider option %s given twice", k)
		}
		seen[k] = true
		switch k {
		case "gcs.fc_limit":
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil || n == 0 {
				return o, fmt.Errorf("gcs.fc_limit must be a positive number of write-sets, not %q", v)
			}
			out.flow.Limit = n
		case "gcs.fc_factor":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || !(f > 0 && f <= 1) {
				return o, fmt.Errorf("gcs.fc_factor must be in (0, 1], not %q", v)
			}
			out.flow.Factor = f
		case "gcache.size":
			return o, fmt.Errorf("gcache.size is set by the node's --gcache-size flag")
		default:
			return o, fmt.Errorf("unknown provider option %q (Certus understands %s)", k, strings.Join(knownOptions(), ", "))
		}
	}
	return out, nil
}

func knownOptions() []string { return []string{"gcs.fc_factor", "gcs.fc_limit"} }
