package txn

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// lockAsync requests key for o on a goroutine and returns where its
// result arrives.
func lockAsync(l *Locks, o *lockOwner, key string, mode LockMode) <-chan error {
	ch := make(chan error, 1)
	go func() {
		_, err := l.Lock(context.Background(), o, []byte(key), mode, 10*time.Second)
		ch <- err
	}()
	return ch
}

// lockNow takes key for o and returns its position; it fails the test if
// the lock is not granted.
func lockNow(t *testing.T, l *Locks, o *lockOwner, key string, mode LockMode) uint64 {
	t.Helper()
	pos, err := l.Lock(context.Background(), o, []byte(key), mode, time.Second)
	if err != nil {
		t.Fatalf("lock %q: %v", key, err)
	}
	return pos
}

// fixedPos is a position source for tests: it returns *p.
func fixedPos(p *uint64) func() uint64 { return func() uint64 { return *p } }

var zeroPos uint64

// waitQueued waits until n requests queue for key.
func waitQueued(t *testing.T, l *Locks, key string, n int) {
	t.Helper()
	for range 1000 {
		l.mu.Lock()
		ls := l.table[key]
		queued := ls != nil && len(ls.queue) == n
		l.mu.Unlock()
		if queued {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("%d requests never queued for %q", n, key)
}

// ReleaseAll frees a transaction's locks in chunks (releaseChunk per hold
// of the mutex); every lock is freed and every waiter woken, in the first
// chunk and the last alike, and the table ends empty.
func TestReleaseAllAcrossChunks(t *testing.T) {
	for _, n := range []int{2, releaseChunk, releaseChunk + 1, 3*releaseChunk + 5} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			l := NewLocks(fixedPos(&zeroPos))
			a, b, c := &lockOwner{id: 1}, &lockOwner{id: 2}, &lockOwner{id: 3}
			keys := make([]string, n)
			for i := range keys {
				keys[i] = fmt.Sprintf("k%06d", i)
				lockNow(t, l, a, keys[i], Exclusive)
			}
			first := lockAsync(l, b, keys[0], Exclusive)
			last := lockAsync(l, c, keys[n-1], Shared)
			waitQueued(t, l, keys[0], 1)
			waitQueued(t, l, keys[n-1], 1)
			l.ReleaseAll(a)
			for _, ch := range []<-chan error{first, last} {
				if err := <-ch; err != nil {
					t.Fatalf("waiter: %v", err)
				}
			}
			if len(a.held) != 0 {
				t.Fatalf("owner still lists %d locks", len(a.held))
			}
			if got := l.Len(); got != 2 {
				t.Fatalf("%d keys in the table after the release, want the waiters' 2", got)
			}
			l.ReleaseAll(b)
			l.ReleaseAll(c)
			if got := l.Len(); got != 0 {
				t.Fatalf("%d keys in the table at the end, want 0", got)
			}
		})
	}
}

// Two shared holders of one key: releasing one keeps the other's lock; an
// exclusive request waits for the second.
func TestSharedHoldersReleaseApart(t *testing.T) {
	l := NewLocks(fixedPos(&zeroPos))
	a, b, c := &lockOwner{id: 1}, &lockOwner{id: 2}, &lockOwner{id: 3}
	for _, o := range []*lockOwner{a, b} {
		lockNow(t, l, o, "k", Shared)
	}
	excl := lockAsync(l, c, "k", Exclusive)
	waitQueued(t, l, "k", 1)
	l.ReleaseAll(a)
	select {
	case err := <-excl:
		t.Fatalf("exclusive lock granted (%v) while b still holds a shared one", err)
	case <-time.After(20 * time.Millisecond):
	}
	l.ReleaseAll(b)
	if err := <-excl; err != nil {
		t.Fatal(err)
	}
	l.ReleaseAll(c)
	if got := l.Len(); got != 0 {
		t.Fatalf("%d keys in the table at the end, want 0", got)
	}
}

// A lock's position is read when the lock is first granted to an owner:
// taking it again or upgrading it keeps that position, a waiter gets the
// position of the moment it is granted, and a new grant after a release
// reads a new one.
func TestLockPositionIsTheFirstGrants(t *testing.T) {
	applied := uint64(10)
	l := NewLocks(fixedPos(&applied))
	a, b := &lockOwner{id: 1}, &lockOwner{id: 2}
	steps := []struct {
		o    *lockOwner
		mode LockMode
		want uint64
	}{
		{a, Shared, 10},
		{a, Shared, 10},
		{a, Exclusive, 10}, // upgrade
		{a, Shared, 10},    // already held in a stronger mode
	}
	for i, s := range steps {
		if got := lockNow(t, l, s.o, "k", s.mode); got != s.want {
			t.Fatalf("step %d: position %d, want %d", i, got, s.want)
		}
		applied += 5
	}
	waiting := make(chan uint64, 1)
	go func() {
		pos, err := l.Lock(context.Background(), b, []byte("k"), Exclusive, 10*time.Second)
		if err != nil {
			t.Error(err)
		}
		waiting <- pos
	}()
	waitQueued(t, l, "k", 1)
	applied = 42
	l.ReleaseAll(a)
	if got := <-waiting; got != 42 {
		t.Fatalf("waiter's position %d, want 42 (read when granted)", got)
	}
	l.ReleaseAll(b)
	applied = 50
	if got := lockNow(t, l, a, "k", Shared); got != 50 {
		t.Fatalf("position after a release %d, want 50", got)
	}
}
