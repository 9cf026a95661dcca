package monitor

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeNode serves a /status document that the test changes.
type fakeNode struct {
	mu  sync.Mutex
	doc map[string]any
	srv *httptest.Server
}

func newFake(name string) *fakeNode {
	f := &fakeNode{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.doc == nil {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		_ = json.NewEncoder(w).Encode(f.doc)
	}))
	f.set(map[string]any{"name": name, "cluster_uuid": "u1", "state": "Synced", "primary": true, "synced": true, "applied": 100, "sql_addr": name + ":3306"})
	return f
}

func (f *fakeNode) addr() string { return strings.TrimPrefix(f.srv.URL, "http://") }

func (f *fakeNode) set(doc map[string]any) {
	f.mu.Lock()
	f.doc = doc
	f.mu.Unlock()
}

func (f *fakeNode) update(k string, v any) {
	f.mu.Lock()
	if f.doc != nil {
		f.doc[k] = v
	}
	f.mu.Unlock()
}

func names(ns []*Node) string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Name)
	}
	return strings.Join(out, ",")
}

func TestHostgroups(t *testing.T) {
	a, b, c := newFake("a"), newFake("b"), newFake("c")
	defer a.srv.Close()
	defer b.srv.Close()
	defer c.srv.Close()
	members := []map[string]any{}
	for _, f := range []*fakeNode{a, b, c} {
		members = append(members, map[string]any{"name": f.doc["name"], "http_addr": f.addr(), "sql_addr": f.doc["sql_addr"]})
	}
	for _, f := range []*fakeNode{a, b, c} {
		f.update("members", members)
	}
	m := New(Config{Seeds: []string{b.addr()}, Interval: time.Second, MaxWriters: 1, WriterIsAlsoReader: true, MaxTransactionsBehind: 10})
	ctx := context.Background()
	steps := []struct {
		name             string
		change           func()
		writers, readers string
	}{
		{"all nodes discovered from one seed", func() {}, "a", "a,b,c"},
		{"lagging reader leaves the reader set", func() { c.update("applied", 80) }, "a", "a,b"},
		{"non-Primary writer is replaced", func() { c.update("applied", 100); a.update("primary", false) }, "b", "b,c"},
		{"writer stays when the old one returns", func() { a.update("primary", true) }, "b", "a,b,c"},
		{"Joined node is not a reader", func() { a.update("synced", false); a.update("state", "Joined") }, "b", "b,c"},
		{"down writer is replaced", func() { b.set(nil) }, "c", "c"},
	}
	for _, st := range steps {
		st.change()
		m.Poll(ctx)
		top := m.Topology()
		if got := names(top.Writers); got != st.writers {
			t.Fatalf("%s: writers %q, want %q", st.name, got, st.writers)
		}
		if got := names(top.Readers); got != st.readers {
			t.Fatalf("%s: readers %q, want %q", st.name, got, st.readers)
		}
	}
	if m.Topology().ClusterUUID != "u1" {
		t.Fatalf("cluster uuid %q", m.Topology().ClusterUUID)
	}
}
