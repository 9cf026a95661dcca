package rules

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/certusdb/certus/proxy/sqltext"
)

func TestCompileErrors(t *testing.T) {
	cases := []struct {
		name string
		spec Spec
	}{
		{"no match", Spec{Name: "x"}},
		{"bad regex", Spec{Match: "("}},
		{"bad hostgroup", Spec{Match: "x", Hostgroup: "primary"}},
		{"bad critical", Spec{Match: "x", Critical: "always"}},
		{"negative rate", Spec{Match: "x", RateLimit: -1}},
		{"bad delay", Spec{Match: "x", Delay: "soon"}},
	}
	for _, tc := range cases {
		if _, err := Compile([]Spec{tc.spec}); !errors.Is(err, ErrInvalidRule) {
			t.Errorf("%s: err = %v, want ErrInvalidRule", tc.name, err)
		}
	}
}

func TestMatchOrder(t *testing.T) {
	set, err := Compile([]Spec{
		{Name: "critical-orders", Match: `(?i)FROM orders`, Digest: "SELECT * FROM orders WHERE id = ?", Critical: CriticalWriter},
		{Name: "reports", Match: `(?i)^select .* from report_`, Hostgroup: HostgroupReader, AllowStale: true},
		{Name: "orders", Match: `(?i)orders`, RateLimit: 10},
		{Digest: "select count(*) from t"},
	})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		q    string
		want string
	}{
		{"SELECT * FROM orders WHERE id = 7", "critical-orders"},
		{"select * from orders where id=8", "critical-orders"},
		{"SELECT id FROM orders", "orders"},
		{"SELECT a FROM report_daily", "reports"},
		{"SELECT COUNT(*) FROM t", "rule4"},
		{"SELECT COUNT(*) FROM u", ""},
	}
	for _, tc := range cases {
		r := set.Match(tc.q, sqltext.Digest(tc.q))
		got := ""
		if r != nil {
			got = r.Name
		}
		if got != tc.want {
			t.Errorf("Match(%q) = %q, want %q", tc.q, got, tc.want)
		}
	}
	if h := set.Rules[0].Hits(); h != 2 {
		t.Errorf("hits of the first rule = %d, want 2", h)
	}
	if set.Rules[0].Critical != CriticalWriter || set.Rules[1].Critical != CriticalNone {
		t.Errorf("critical modes: %q %q", set.Rules[0].Critical, set.Rules[1].Critical)
	}
}

// TestAdmitSchedule checks the rate limiter's schedule: statements are
// given start times 1/rate apart, and a cancelled wait returns the
// context's error.
func TestAdmitSchedule(t *testing.T) {
	set, err := Compile([]Spec{{Match: "x", RateLimit: 1}})
	if err != nil {
		t.Fatal(err)
	}
	r := set.Rules[0]
	if err := r.Admit(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	first := r.next
	r.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.Admit(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Admit: %v", err)
	}
	r.mu.Lock()
	second := r.next
	r.mu.Unlock()
	if got := second.Sub(first); got != time.Second {
		t.Fatalf("slots %v apart, want 1s", got)
	}
	if r.Waited() <= 0 {
		t.Fatal("waiting time not counted")
	}
}
