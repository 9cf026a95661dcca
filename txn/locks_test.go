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
	go func() { ch <- l.Lock(context.Background(), o, key, mode, 10*time.Second) }()
	return ch
}

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
			l := NewLocks()
			a, b, c := &lockOwner{id: 1}, &lockOwner{id: 2}, &lockOwner{id: 3}
			keys := make([]string, n)
			for i := range keys {
				keys[i] = fmt.Sprintf("k%06d", i)
				if err := l.Lock(context.Background(), a, keys[i], Exclusive, time.Second); err != nil {
					t.Fatal(err)
				}
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
	l := NewLocks()
	a, b, c := &lockOwner{id: 1}, &lockOwner{id: 2}, &lockOwner{id: 3}
	for _, o := range []*lockOwner{a, b} {
		if err := l.Lock(context.Background(), o, "k", Shared, time.Second); err != nil {
			t.Fatal(err)
		}
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
