package cli

import (
	"net"
	"strings"
	"testing"
	"time"
)

// TestBenchDeadTargetStopsAtOnce: knee bench --url with nothing listening
// exits 1 at the start-up check, saying it cannot connect, instead of
// running its whole --duration of connect failures.
func TestBenchDeadTargetStopsAtOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	began := time.Now()
	code, _, stderr := kneeCmd(t, "bench", "--url", url, "--model", "m", "--rate", "5", "--duration", "60s", "--quiet", "--no-store")
	took := time.Since(began)
	if code != ExitFailure {
		t.Errorf("exit %d, want %d; stderr: %s", code, ExitFailure, stderr)
	}
	if !strings.Contains(stderr, "cannot connect") {
		t.Errorf("stderr does not say it cannot connect: %s", stderr)
	}
	if took > 20*time.Second {
		t.Errorf("took %v for a dead target, want seconds", took)
	}
}

// TestBenchStopsWhenTargetDiesAtStart: a target that accepts the start-up
// check and then goes away leaves a run whose every request fails to
// connect: bench stops it after its first stretch (5 s), not its 60 s,
// and exits 1 saying why.
func TestBenchStopsWhenTargetDiesAtStart(t *testing.T) {
	parallelUntimed(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		if c, err := ln.Accept(); err == nil { // the start-up check's dial
			c.Close()
		}
		ln.Close()
	}()
	began := time.Now()
	code, _, stderr := kneeCmd(t, "bench", "--url", "http://"+ln.Addr().String(), "--model", "m", "--rate", "5", "--duration", "60s",
		"--ignore-eos", "false", "--quiet", "--no-store")
	took := time.Since(began)
	if code != ExitFailure {
		t.Errorf("exit %d, want %d; stderr: %s", code, ExitFailure, stderr)
	}
	if !strings.Contains(stderr, "stopped early: every request of the first 5s failed to connect") {
		t.Errorf("stderr does not say the run stopped early and why: %s", stderr)
	}
	if took > 40*time.Second {
		t.Errorf("took %v, want it stopped after about 5s", took)
	}
}
