// Package stats keeps the proxy's per-digest query statistics.
package stats

import (
	"sort"
	"sync"
	"time"
)

// maxDigests bounds the number of digests kept; statements beyond it are
// counted under Overflow.
const maxDigests = 10000

// Overflow is the digest that collects statements once maxDigests
// distinct digests are kept.
const Overflow = "<other digests>"

// Digest is the statistics of one normalised statement.
type Digest struct {
	Digest    string        `json:"digest"`
	Count     int64         `json:"count"`
	Errors    int64         `json:"errors"`
	Total     time.Duration `json:"-"`
	Max       time.Duration `json:"-"`
	Rows      int64         `json:"rows_sent"`
	Affected  int64         `json:"rows_affected"`
	FirstSeen time.Time     `json:"first_seen"`
	LastSeen  time.Time     `json:"last_seen"`
	// TotalUS, AvgUS and MaxUS are the times in microseconds (filled by
	// Snapshot).
	TotalUS int64 `json:"total_time_us"`
	AvgUS   int64 `json:"avg_time_us"`
	MaxUS   int64 `json:"max_time_us"`
}

// Registry holds the statistics.
type Registry struct {
	mu sync.Mutex
	m  map[string]*Digest
}

// New returns an empty registry.
func New() *Registry { return &Registry{m: map[string]*Digest{}} }

// Record adds one execution of digest d.
func (r *Registry) Record(d string, took time.Duration, rows int64, affected uint64, failed bool) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.m[d]
	if e == nil {
		if len(r.m) >= maxDigests {
			d = Overflow
			e = r.m[d]
		}
		if e == nil {
			e = &Digest{Digest: d, FirstSeen: now}
			r.m[d] = e
		}
	}
	e.Count++
	if failed {
		e.Errors++
	}
	e.Total += took
	if took > e.Max {
		e.Max = took
	}
	e.Rows += rows
	e.Affected += int64(affected)
	e.LastSeen = now
}

// Snapshot returns a copy of all entries, by total time, highest first.
func (r *Registry) Snapshot() []Digest {
	r.mu.Lock()
	out := make([]Digest, 0, len(r.m))
	for _, e := range r.m {
		out = append(out, *e)
	}
	r.mu.Unlock()
	for i := range out {
		out[i].TotalUS = out[i].Total.Microseconds()
		out[i].MaxUS = out[i].Max.Microseconds()
		if out[i].Count > 0 {
			out[i].AvgUS = out[i].TotalUS / out[i].Count
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Total != out[j].Total {
			return out[i].Total > out[j].Total
		}
		return out[i].Digest < out[j].Digest
	})
	return out
}

// Reset clears all statistics.
func (r *Registry) Reset() {
	r.mu.Lock()
	r.m = map[string]*Digest{}
	r.mu.Unlock()
}
