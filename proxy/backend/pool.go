package backend

import (
	"context"
	"sync"
	"time"

	"github.com/certusdb/certus/proxy/mysqlproto"
)

// idleTimeout is how long a pooled connection may sit unused.
const idleTimeout = 5 * time.Minute

// poolKey separates connections by node address, account and sync-wait
// mode.
type poolKey struct {
	addr     string
	user     string
	syncWait bool
}

// Pool keeps idle connections per node and account.
type Pool struct {
	maxIdle int

	mu     sync.Mutex
	idle   map[poolKey][]*Conn
	closed bool
}

// NewPool returns a pool keeping at most maxIdle idle connections per
// node, account and mode.
func NewPool(maxIdle int) *Pool {
	return &Pool{maxIdle: maxIdle, idle: map[poolKey][]*Conn{}}
}

// Get returns a connection to the node (node name, SQL address) logged in
// as opt.User. It prefers an idle connection whose session state Key is
// stateKey, then any idle one (the caller adjusts its state), then dials.
// Idle connections that sat too long or that the node closed are closed
// on the way. syncWait connections run every statement with
// wsrep_sync_wait=1.
func (p *Pool) Get(ctx context.Context, node, addr string, opt Options, syncWait bool, stateKey string) (*Conn, error) {
	k := poolKey{addr, opt.User, syncWait}
	for {
		c := p.take(k, stateKey)
		if c == nil {
			return p.Dial(ctx, node, addr, opt, syncWait)
		}
		if time.Since(c.lastUsed) < idleTimeout && c.alive() {
			c.setIdle(false)
			return c, nil
		}
		c.Close()
	}
}

// take removes an idle connection of k from the pool, one with state
// stateKey if there is one (nil if none is idle).
func (p *Pool) take(k poolKey, stateKey string) *Conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	list := p.idle[k]
	var c *Conn
	for i := len(list) - 1; i >= 0; i-- {
		if list[i].key == stateKey {
			c = list[i]
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if c == nil && len(list) > 0 {
		c = list[len(list)-1]
		list = list[:len(list)-1]
	}
	p.idle[k] = list
	return c
}

// Dial opens a new connection to the node for the pool (it joins the
// pool on Put).
func (p *Pool) Dial(ctx context.Context, node, addr string, opt Options, syncWait bool) (*Conn, error) {
	c, err := Dial(ctx, node, addr, opt)
	if err != nil {
		return nil, err
	}
	if syncWait {
		if _, err := c.Exec("SET SESSION wsrep_sync_wait = 1"); err != nil {
			c.Close()
			return nil, err
		}
		c.SyncWait = true
	}
	return c, nil
}

// Put returns a connection to the pool (or closes it when it is broken,
// in a transaction, or the pool is full).
func (p *Pool) Put(c *Conn) {
	if c.Conditions && !c.Broken {
		// the next session must not read this one's warnings or error
		// (SHOW WARNINGS): a statement that names a table clears them
		if _, err := c.Exec("SELECT 1 FROM DUAL"); err != nil {
			c.Broken = true
		}
		c.Conditions = false
	}
	if c.Broken || c.Status&mysqlproto.StatusInTrans != 0 {
		c.Close()
		return
	}
	c.lastUsed = time.Now()
	k := poolKey{c.Addr, c.User, c.SyncWait}
	p.mu.Lock()
	if p.closed || len(p.idle[k]) >= p.maxIdle {
		p.mu.Unlock()
		c.Close()
		return
	}
	c.setIdle(true)
	p.idle[k] = append(p.idle[k], c)
	p.mu.Unlock()
}

// Drop closes the idle connections to addr (a node that went away).
func (p *Pool) Drop(addr string) {
	p.mu.Lock()
	var victims []*Conn
	for k, list := range p.idle {
		if k.addr == addr {
			victims = append(victims, list...)
			delete(p.idle, k)
		}
	}
	p.mu.Unlock()
	for _, c := range victims {
		c.Close()
	}
}

// Idle returns how many idle connections the pool holds for addr.
func (p *Pool) Idle(addr string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for k, list := range p.idle {
		if k.addr == addr {
			n += len(list)
		}
	}
	return n
}

// Close closes every idle connection; later Puts close theirs.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	all := p.idle
	p.idle = map[poolKey][]*Conn{}
	p.mu.Unlock()
	for _, list := range all {
		for _, c := range list {
			c.Close()
		}
	}
}
