package cpuclock

import (
	"runtime"
	"testing"
	"time"
)

func TestProcessGrowsWithWork(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("not measured here")
	}
	before := Process()
	x := 0
	for i := 0; i < 50_000_000; i++ {
		x += i ^ (x >> 3)
	}
	after := Process()
	if after <= before {
		t.Fatalf("CPU time did not grow across a busy loop: %v then %v (%d)", before, after, x)
	}
}

func TestMachineCountsBusyTime(t *testing.T) {
	before, err := Machine()
	if runtime.GOOS != "linux" {
		if err == nil {
			t.Log("a /proc/stat outside Linux")
		}
		t.Skip("/proc/stat is Linux's")
	}
	if err != nil {
		t.Fatal(err)
	}
	for start := Process(); Process()-start < 50*time.Millisecond; { // 5 ticks of busy time at least
	}
	after, err := Machine()
	if err != nil {
		t.Fatal(err)
	}
	if after.Busy <= before.Busy || after.Total <= before.Total || after.Busy+after.Steal > after.Total {
		t.Fatalf("after 50 ms of CPU: busy %d → %d, total %d → %d, steal %d", before.Busy, after.Busy, before.Total, after.Total, after.Steal)
	}
}

func TestStealShare(t *testing.T) {
	from := MachineTimes{Steal: 100, Total: 10_000}
	if got := (MachineTimes{Steal: 145, Total: 11_000}).StealShare(from); got != 0.045 {
		t.Errorf("45 of 1000 ticks stolen: share %v, want 0.045", got)
	}
	if got := from.StealShare(from); got != 0 {
		t.Errorf("no ticks between the readings: share %v, want 0", got)
	}
	if got := (MachineTimes{Steal: 90, Total: 11_000}).StealShare(from); got != 0 {
		t.Errorf("a steal counter that went back: share %v, want 0", got)
	}
}
