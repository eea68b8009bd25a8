package selftest

import (
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/badinput"
)

func TestTextRowsAndFooter(t *testing.T) {
	var b strings.Builder
	WriteHeader(&b)
	s := Step{Concurrency: 64, Slowed: true, StepTimeScale: 4, Requests: 100, Errors: 2, Truth: TruthMixed, RequestsWithWriteTimes: 60,
		Within1ms: true, CoalescedChunkShare: 0.02}
	WriteStep(&b, s)
	WriteFooter(&b, &Result{Server: "embedded", CPUs: 2, GOMAXPROCS: 2, Steps: []Step{s}}, "/tmp/p")
	out := b.String()
	for _, want := range []string{"streams", "64 (×4)", "| yes  | mixed* (60/100 writes), user stamps (0 streams)", "2 request(s) failed",
		"2.0% of chunks arrived in one read", "no step kept TTFT and ITL error within 1 ms", "(×S): the highest concurrency again",
		"* the client did not record", "CPU profiles: /tmp/p/step-N.pprof"} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
}

func TestCheckNamesTheFlag(t *testing.T) {
	ok := Config{Duration: time.Second, InputTokens: 1, OutputTokens: 2, API: "chat"}
	if err := ok.Check(); err != nil {
		t.Fatal(err)
	}
	for want, change := range map[string]func(*Config){
		"--duration 0s":     func(c *Config) { c.Duration = 0 },
		"--warmup -1s":      func(c *Config) { c.Warmup = -time.Second },
		"--input-tokens 0":  func(c *Config) { c.InputTokens = 0 },
		"--output-tokens 1": func(c *Config) { c.OutputTokens = 1 },
		"--slow-steps -1":   func(c *Config) { c.SlowSteps = -1 },
		`--api "messages"`:  func(c *Config) { c.API = "messages" },
	} {
		c := ok
		change(&c)
		if err := c.Check(); !badinput.Is(err) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %v", want, err)
		}
	}
}
