package gcfloor

import (
	"os"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mb = 1 << 20
	for _, tc := range []struct {
		name        string
		live, floor uint64
		want        int
	}{
		{"off", 20 * mb, 0, 100},
		{"before the first collection", 0, 256 * mb, 100},
		{"small heap grows to the floor", 20 * mb, 256 * mb, 1180},
		{"just under half the floor", 127 * mb, 256 * mb, 101},
		{"half the floor", 128 * mb, 256 * mb, 100},
		{"above the floor", 1024 * mb, 256 * mb, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Percent(tc.live, tc.floor); got != tc.want {
				t.Fatalf("Percent(%d, %d) = %d, want %d", tc.live, tc.floor, got, tc.want)
			}
		})
	}
}

func gogc() uint64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func TestStartRaisesAndRestores(t *testing.T) {
	if os.Getenv("GOGC") != "" {
		t.Skip("GOGC is set: the floor is off")
	}
	runtime.GC() // the live heap is known from here on
	stop := Start(1<<30, time.Millisecond)
	deadline := time.Now().Add(5 * time.Second)
	for gogc() <= 100 {
		if time.Now().After(deadline) {
			t.Fatalf("GOGC is still %d with a 1 GiB floor", gogc())
		}
		time.Sleep(time.Millisecond)
	}
	stop()
	for gogc() != 100 {
		if time.Now().After(deadline) {
			t.Fatalf("GOGC is %d after stop, want 100", gogc())
		}
		time.Sleep(time.Millisecond)
	}
}

func TestStartOffWithGOGC(t *testing.T) {
	t.Setenv("GOGC", "100")
	runtime.GC()
	stop := Start(1<<30, time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	stop()
	if got := gogc(); got != 100 {
		t.Fatalf("GOGC = %d with GOGC set in the environment, want 100", got)
	}
}
