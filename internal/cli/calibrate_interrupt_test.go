package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// cancelOn is an output that cancels a context when a line containing
// marker is written (the calibration's progress).
type cancelOn struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	marker string
	cancel context.CancelFunc
}

func (c *cancelOn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p)
	if strings.Contains(string(p), c.marker) {
		c.cancel()
	}
	return len(p), nil
}

// TestCalibrateInterruptKeepsPoints: Ctrl-C in calibrate keeps the points
// measured, and a profile from them once there are enough.
func TestCalibrateInterruptKeepsPoints(t *testing.T) {
	for _, c := range []struct {
		marker      string
		wantProfile bool
	}{{"decode: 1 concurrent", false}, {"held-out step", true}} {
		t.Run(c.marker, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			out := &cancelOn{marker: c.marker, cancel: cancel}
			var errb bytes.Buffer
			prof := filepath.Join(t.TempDir(), "p.yaml")
			env := &Env{Stdin: strings.NewReader(""), Stdout: out, Stderr: &errb, Getenv: func(string) string { return "" }}
			code := MainEnv(ctx, env, []string{"calibrate", "--gpu", "h100", "--model", "llama-3.1-8b", "--decode-duration", "300ms",
				"--decode-output-tokens", "64", "--decode-points", "1x64,16x64", "--holdout-duration", "500ms",
				"--prefill-requests", "2", "--prefill-lengths", "128,1024", "--out", prof})
			if code == ExitOK {
				t.Fatalf("an interrupted calibration exited 0")
			}
			if !strings.Contains(out.buf.String(), "points measured before the stop") || !strings.Contains(out.buf.String(), "prefill") {
				t.Errorf("the measured points are not shown:\n%s\n%s", out.buf.String(), errb.String())
			}
			_, err := os.Stat(prof)
			if got := err == nil; got != c.wantProfile {
				t.Errorf("profile written: %v, want %v (stderr: %s)", got, c.wantProfile, errb.String())
			}
		})
	}
}
