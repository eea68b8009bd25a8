package cpuclock

import (
	"runtime"
	"testing"
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
