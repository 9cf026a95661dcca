// Package rules holds the proxy's query rules: an ordered list matched by
// regular expression or by digest, first match wins. A rule can route
// the statements it matches to a hostgroup, make reads critical or allow
// them to be stale, limit their rate and delay them.
package rules

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/certusdb/certus/proxy/sqltext"
)

// Hostgroups a rule routes to.
const (
	HostgroupWriter = "writer"
	HostgroupReader = "reader"
)

// Critical modes of a rule: how a read it matches is made to see every
// write committed before it started.
const (
	// CriticalNone: the read is causal (it sees the session's own writes).
	CriticalNone = "none"
	// CriticalWriter: the read runs on the writer.
	CriticalWriter = "writer"
	// CriticalSyncWait: the read runs on a reader with wsrep_sync_wait=1.
	CriticalSyncWait = "sync_wait"
)

// ErrInvalidRule is returned (wrapped) for a rule that does not validate.
var ErrInvalidRule = errors.New("invalid query rule")

// Spec is a rule as written in the configuration file.
type Spec struct {
	// Name identifies the rule in statistics.
	Name string `json:"name"`
	// Match is a regular expression (Go syntax) over the statement text.
	Match string `json:"match,omitempty"`
	// Digest matches the normalised statement exactly (it is normalised
	// itself before comparing, so it may be written in any case).
	Digest string `json:"digest,omitempty"`
	// Hostgroup routes matching statements: "writer" or "reader"; empty
	// keeps the proxy's read/write split.
	Hostgroup string `json:"hostgroup,omitempty"`
	// Critical is "none" (default), "writer" or "sync_wait".
	Critical string `json:"critical,omitempty"`
	// AllowStale lets matching reads skip causal waits.
	AllowStale bool `json:"allow_stale,omitempty"`
	// RateLimit is the highest rate (statements per second) at which
	// matching statements start; 0 is unlimited. Statements over the rate
	// wait for their turn.
	RateLimit float64 `json:"rate_limit,omitempty"`
	// Delay is added before each matching statement ("10ms").
	Delay string `json:"delay,omitempty"`
}

// Rule is a compiled rule with its counters.
type Rule struct {
	Spec
	re     *regexp.Regexp
	digest string
	delay  time.Duration

	mu   sync.Mutex
	next time.Time

	hits    atomic.Int64
	waitedN atomic.Int64
}

// Set is an ordered list of compiled rules.
type Set struct {
	Rules []*Rule
}

// Compile validates and compiles specs in order.
func Compile(specs []Spec) (*Set, error) {
	s := &Set{}
	for i, sp := range specs {
		r := &Rule{Spec: sp}
		if r.Name == "" {
			r.Name = fmt.Sprintf("rule%d", i+1)
		}
		if sp.Match == "" && sp.Digest == "" {
			return nil, fmt.Errorf("%w %s: needs match or digest", ErrInvalidRule, r.Name)
		}
		if sp.Match != "" {
			re, err := regexp.Compile(sp.Match)
			if err != nil {
				return nil, fmt.Errorf("%w %s: %v", ErrInvalidRule, r.Name, err)
			}
			r.re = re
		}
		if sp.Digest != "" {
			r.digest = sqltext.Digest(sp.Digest)
		}
		switch sp.Hostgroup {
		case "", HostgroupWriter, HostgroupReader:
		default:
			return nil, fmt.Errorf("%w %s: hostgroup %q (want writer or reader)", ErrInvalidRule, r.Name, sp.Hostgroup)
		}
		switch sp.Critical {
		case "":
			r.Critical = CriticalNone
		case CriticalNone, CriticalWriter, CriticalSyncWait:
		default:
			return nil, fmt.Errorf("%w %s: critical %q (want none, writer or sync_wait)", ErrInvalidRule, r.Name, sp.Critical)
		}
		if sp.RateLimit < 0 {
			return nil, fmt.Errorf("%w %s: negative rate_limit", ErrInvalidRule, r.Name)
		}
		if sp.Delay != "" {
			d, err := time.ParseDuration(sp.Delay)
			if err != nil || d < 0 {
				return nil, fmt.Errorf("%w %s: delay %q", ErrInvalidRule, r.Name, sp.Delay)
			}
			r.delay = d
		}
		s.Rules = append(s.Rules, r)
	}
	return s, nil
}

// Match returns the first rule matching the statement text q with digest
// d, or nil.
func (s *Set) Match(q, d string) *Rule {
	if s == nil {
		return nil
	}
	for _, r := range s.Rules {
		if r.digest != "" && r.digest != d {
			continue
		}
		if r.re != nil && !r.re.MatchString(q) {
			continue
		}
		r.hits.Add(1)
		return r
	}
	return nil
}

// Admit waits for the statement's turn under the rule's rate limit and
// delay. It returns early with ctx's error.
func (r *Rule) Admit(ctx context.Context) error {
	wait := r.delay
	if r.RateLimit > 0 {
		interval := time.Duration(float64(time.Second) / r.RateLimit)
		r.mu.Lock()
		now := time.Now()
		at := r.next
		if at.Before(now) {
			at = now
		}
		r.next = at.Add(interval)
		r.mu.Unlock()
		wait += at.Sub(now)
	}
	if wait <= 0 {
		return nil
	}
	r.waitedN.Add(int64(wait))
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Hits is how many statements matched the rule.
func (r *Rule) Hits() int64 { return r.hits.Load() }

// Waited is the total time statements waited on the rule's rate limit and
// delay.
func (r *Rule) Waited() time.Duration { return time.Duration(r.waitedN.Load()) }
