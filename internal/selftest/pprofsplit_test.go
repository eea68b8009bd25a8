package selftest

import (
	"bytes"
	"context"
	"runtime/pprof"
	"testing"
	"time"
)

func spin(d time.Duration) {
	end := time.Now().Add(d)
	x := 0
	for time.Now().Before(end) {
		x++
	}
	_ = x
}

// TestCPUByLabel profiles two labelled busy loops and checks the split.
func TestCPUByLabel(t *testing.T) {
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		t.Skip("profiling unavailable:", err)
	}
	done := make(chan struct{})
	go pprof.Do(context.Background(), pprof.Labels("knee", "server"), func(context.Context) {
		spin(300 * time.Millisecond)
		done <- struct{}{}
	})
	pprof.Do(context.Background(), pprof.Labels("knee", "client"), func(context.Context) { spin(300 * time.Millisecond) })
	<-done
	pprof.StopCPUProfile()
	got, err := cpuByLabel(buf.Bytes(), "knee")
	if err != nil {
		t.Fatal(err)
	}
	if got["server"] <= 0 || got["client"] <= 0 {
		t.Fatalf("split %v: want CPU under both labels", got)
	}
	if _, err := cpuByLabel([]byte("not gzip"), "knee"); err == nil {
		t.Error("garbage accepted")
	}
}
