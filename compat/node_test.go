package compat

import (
	"context"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/certusdb/certus/replication"
	"github.com/certusdb/certus/sqlengine"
	"github.com/certusdb/certus/storage"
	"github.com/certusdb/certus/txn"
)

// node is a single-node Certus cluster wired like node.Node does it:
// storage, a replication core of one voter (no transport), the
// transaction manager and the SQL provider. Its pebble database lives in
// an in-memory filesystem, so a fresh node per engine costs milliseconds
// and leaves nothing on disk.
type node struct {
	eng  *storage.Engine
	repl *replication.Node
	mgr  *txn.Manager
	p    *sqlengine.Provider
}

// startNode starts a node and waits until it is primary.
func startNode() (*node, error) {
	eng, err := storage.Open(storage.Config{Dir: "certus", FS: vfs.NewMem(), CacheBytes: 8 << 20, MemTableBytes: 4 << 20})
	if err != nil {
		return nil, err
	}
	repl, err := replication.Start(replication.Config{
		Self:        replication.Member{ID: 1, Name: "n1"},
		ClusterName: "certus",
		Engine:      eng,
		Bootstrap:   true,
		SyncLog:     true, // a no-op on the in-memory filesystem; avoids the background syncer
		// a single node elects itself on its first tick: a short tick
		// makes a new node ready in milliseconds, not one 50ms tick
		TickInterval: 2 * time.Millisecond,
		Logger:       quietLog,
	})
	if err != nil {
		eng.Close()
		return nil, err
	}
	n := &node{eng: eng, repl: repl}
	deadline := time.Now().Add(10 * time.Second)
	for !repl.Primary() {
		if time.Now().After(deadline) {
			n.stop()
			return nil, fmt.Errorf("compat: node not primary after 10s")
		}
		time.Sleep(time.Millisecond)
	}
	n.mgr = txn.NewManager(txn.Config{Engine: eng, Replicator: repl})
	n.p = sqlengine.NewProvider(n.mgr)
	return n, nil
}

// stop stops replication and closes the storage.
func (n *node) stop() {
	n.repl.Stop()
	n.eng.Close()
}

// clusterView adapts the node to sqlengine.Cluster (the wsrep functions).
type clusterView struct{ n *node }

func (c clusterView) Primary() bool { return c.n.repl.Primary() }
func (c clusterView) StartSyncWait() func(context.Context) error {
	return c.n.repl.StartSyncWait()
}
func (c clusterView) WaitApplied(ctx context.Context, seqno uint64) error {
	return c.n.repl.WaitApplied(ctx, seqno)
}
func (c clusterView) ClusterUUID() string { return c.n.repl.ClusterUUID() }
func (c clusterView) Applied() uint64     { return c.n.eng.Applied() }
