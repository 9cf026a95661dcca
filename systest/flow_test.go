package systest

import (
	"context"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/certusdb/certus/internal/testcluster"
)

// TestFlowControlHoldsASlowNodeNearTheCluster makes node 3's apply stage
// slow (5 ms per write-set: about 200 write-sets/s, below what the clients
// on node 1 commit) while clients write on node 1. Flow control must keep
// node 3's receive queue near its limit by slowing the writers, never
// stopping them, and the data must end identical. Flow control off (a
// limit no queue reaches) is the comparison: node 3 then falls far behind.
func TestFlowControlHoldsASlowNodeNearTheCluster(t *testing.T) {
	const limit = 50
	c := testcluster.StartCluster(t, 3, "--enable-fault-injection")
	n1, n3 := c.Nodes[0], c.Nodes[2]
	mustExec(t, n1.DB(""), "CREATE DATABASE fc")
	mustExec(t, n1.DB(""), "CREATE TABLE fc.t (id INT PRIMARY KEY, v INT)")
	for i := 0; i < 1000; i += 100 {
		q := "INSERT INTO fc.t VALUES "
		for j := i; j < i+100; j++ {
			if j > i {
				q += ","
			}
			q += fmt.Sprintf("(%d, 0)", j)
		}
		mustExec(t, n1.DB(""), q)
	}
	awaitApplied(t, c)

	// run writes on node 1 for 8 s with node 3's flow control limit set to
	// fcLimit; it returns node 3's largest receive queue, the largest in
	// the last 2 s (once flow control had time to act), node 1's commits
	// and the longest time without one.
	type result struct {
		maxQueue, lateQueue int64
		commits             int
		maxGap              time.Duration
		timeline            []string
	}
	run := func(fcLimit int) (res result) {
		mustExec(t, n3.DB(""), fmt.Sprintf("SET GLOBAL wsrep_provider_options = 'gcs.fc_limit = %d'", fcLimit))
		mustExec(t, n3.DB(""), "FLUSH STATUS")
		const length = 8 * time.Second
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), length)
		defer cancel()
		var wg sync.WaitGroup
		var mu sync.Mutex
		last := time.Now()
		db := n1.DB("fc")
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func(seed int64) {
				defer wg.Done()
				r := rand.New(rand.NewSource(seed))
				for ctx.Err() == nil {
					_, err := db.ExecContext(ctx, "UPDATE t SET v = v + 1 WHERE id = ?", r.Intn(1000))
					if err != nil {
						continue // the deadline, or a certification conflict
					}
					mu.Lock()
					res.commits++
					res.maxGap = max(res.maxGap, time.Since(last))
					last = time.Now()
					mu.Unlock()
				}
			}(int64(w))
		}
		for ctx.Err() == nil {
			time.Sleep(500 * time.Millisecond)
			q := qStatus(t, n3, "wsrep_local_recv_queue")
			res.timeline = append(res.timeline, fmt.Sprintf("%.1fs:q=%d,rate=%d", time.Since(start).Seconds(), q, qStatus(t, n1, "certus_flow_control_rate")))
			if time.Since(start) > length-2*time.Second {
				res.lateQueue = max(res.lateQueue, q)
			}
		}
		wg.Wait()
		res.maxQueue = qStatus(t, n3, "wsrep_local_recv_queue_max")
		return res
	}

	// with flow control first: after the run without it node 3 catches up
	// at full speed, and a node's estimate of what it applies would start
	// from that rate, 300 times what it applies once slowed
	faultHTTP(t, n3, "apply_delay=5ms")
	recv0 := qStatus(t, n1, "wsrep_flow_control_recv")
	paused0 := qStatus(t, n1, "wsrep_flow_control_paused_ns")
	on := run(limit)
	recv1 := qStatus(t, n1, "wsrep_flow_control_recv")
	paused1 := qStatus(t, n1, "wsrep_flow_control_paused_ns")
	sent := qStatus(t, n3, "wsrep_flow_control_sent")
	faultHTTP(t, n3, "apply_delay=0")
	awaitApplied(t, c)
	faultHTTP(t, n3, "apply_delay=5ms")
	off := run(1 << 30)
	t.Logf("flow control off: node 3's receive queue reached %d, %d commits on node 1, longest gap %v", off.maxQueue, off.commits, off.maxGap.Round(time.Millisecond))
	t.Logf("flow control on (limit %d): node 3's receive queue reached %d (%d in the last 2 s), %d commits on node 1, longest gap %v",
		limit, on.maxQueue, on.lateQueue, on.commits, on.maxGap.Round(time.Millisecond))
	t.Logf("timeline with flow control: %s", strings.Join(on.timeline, " "))
	if off.maxQueue < 10*limit {
		t.Fatalf("without flow control node 3 fell only %d behind: the load does not outrun its apply stage", off.maxQueue)
	}
	if sent == 0 {
		t.Errorf("node 3 never asked the cluster to slow down (wsrep_flow_control_sent 0)")
	}
	if recv1 == recv0 {
		t.Errorf("node 1 received no flow control report")
	}
	if paused1 == paused0 {
		t.Errorf("node 1's commits never waited for flow control")
	}
	if on.lateQueue > 6*limit || on.maxQueue >= off.maxQueue {
		t.Errorf("node 3's receive queue reached %d (%d late) with flow control (limit %d), %d without: not held back", on.maxQueue, on.lateQueue, limit, off.maxQueue)
	}
	if on.maxGap > 2*time.Second {
		t.Errorf("writers on node 1 stalled %v under flow control: it must slow them, not stop them", on.maxGap)
	}
	faultHTTP(t, n3, "apply_delay=0")
	awaitApplied(t, c)
	requireIdentical(t, c)
}

// qStatus reads a numeric global status variable of node n.
func qStatus(t testing.TB, n *testcluster.Node, name string) int64 {
	t.Helper()
	return int64(qStatusFloat(t, n, name))
}

// qStatusFloat reads a numeric status variable of n.
func qStatusFloat(t testing.TB, n *testcluster.Node, name string) float64 {
	t.Helper()
	var k, v string
	if err := adhoc(n, "").QueryRow("SHOW GLOBAL STATUS LIKE '"+name+"'").Scan(&k, &v); err != nil {
		t.Fatalf("%s: %s: %v", n.Name, name, err)
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil {
		t.Fatalf("%s: %s = %q: %v", n.Name, name, v, err)
	}
	return x
}
