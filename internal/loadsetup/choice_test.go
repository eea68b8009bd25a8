package loadsetup

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/workload"
)

// base is the flags' defaults for bench: a closed loop of 32, 300 requests.
func base() Choice {
	return Choice{Input: "512", Output: "128", Tokenizer: "cl100k_base", Concurrency: 32, Arrival: "poisson", Burstiness: 1,
		Requests: 300, Replay: defaultReplay(), Given: Given{}}
}

func defaultReplay() (r workload.Replay) { r.Speedup, r.Sample = 1, 1; return r }

func TestValidateRefusesWithTheFlagNamed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		edit func(*Choice)
		want string // "" : accepted
	}{
		{"defaults", func(*Choice) {}, ""},
		{"rate and concurrency", func(c *Choice) { c.Rate = 5; c.Given["rate"], c.Given["concurrency"] = true, true }, "give --concurrency (closed loop) or --rate (open loop), not both"},
		{"rate zero given", func(c *Choice) { c.Given["rate"] = true }, "--rate 0: want a positive number"},
		{"rate over the bound", func(c *Choice) { c.Rate = MaxRateRPS + 1 }, "at most 100000 requests per second"},
		{"burstiness without gamma", func(c *Choice) { c.Rate = 3; c.Given["rate"], c.Given["burstiness"] = true, true }, "--burstiness applies to --arrival gamma (got --arrival poisson)"},
		{"arrival in a closed loop", func(c *Choice) { c.Given["arrival"] = true }, "--arrival applies to an open loop"},
		{"unbounded", func(c *Choice) { c.Requests = 0 }, "give --requests or --duration"},
		{"groups without tokens", func(c *Choice) { c.PrefixGroups = 3 }, "--prefix-groups 3 needs --prefix-tokens"},
		{"shared prefix and groups", func(c *Choice) { c.SharedPrefix, c.PrefixTokens = 10, 10 }, "--shared-prefix is --prefix-groups 1"},
		{"bad warm-up", func(c *Choice) { c.Warmup = "xx" }, `--warmup "xx": want a duration`},
		{"trace option without trace", func(c *Choice) { c.Given["trace-rate"] = true }, "--trace-rate needs --trace FILE"},
		{"lengths with a trace", func(c *Choice) { c.TracePath = "t.jsonl"; c.Given["input-tokens"] = true }, "--input-tokens does not apply with --trace"},
		{"sweep lists are the sweep's", func(c *Choice) { c.LoadLists = true; c.Given["rate"], c.Given["concurrency"] = true, true }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := base()
			tc.edit(&c)
			err := c.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			case err != nil && !badinput.Is(err):
				t.Fatalf("%v is not bad input (exit 2)", err)
			}
		})
	}
}

// A --duration alone is a time limit: the default request count does not
// cut it short; given both, both hold.
func TestValidateDurationAloneDropsTheDefaultRequests(t *testing.T) {
	t.Parallel()
	c := base()
	c.Duration = 10 * time.Second
	if err := c.Validate(); err != nil || c.Requests != 0 {
		t.Fatalf("--duration alone: requests %d, err %v; want 0, nil", c.Requests, err)
	}
	c = base()
	c.Duration, c.Given["requests"] = 10*time.Second, true
	if err := c.Validate(); err != nil || c.Requests != 300 {
		t.Fatalf("--duration with --requests: requests %d, err %v; want 300, nil", c.Requests, err)
	}
}

func TestCheckOpenFiles(t *testing.T) {
	t.Parallel()
	c := base()
	c.Requests = 0
	if err := c.CheckOpenFiles(1000, true, 1024); err == nil || !strings.Contains(err.Error(), "--concurrency 1000: this process may open 1024 files") ||
		!strings.Contains(err.Error(), "at most 384 here") {
		t.Fatalf("embedded, 1000 in flight, ulimit 1024: %v", err)
	}
	if err := c.CheckOpenFiles(700, false, 1024); err != nil {
		t.Fatalf("a URL target, 700 in flight, ulimit 1024: %v", err)
	}
	c.Requests = 10 // no more at once than there are requests
	if err := c.CheckOpenFiles(1000, true, 1024); err != nil {
		t.Fatalf("10 requests: %v", err)
	}
}

// The plan repeats with its seed, and its loadgen configuration is the
// choice's: an open loop has no concurrency, the bounds and warm-up carry.
func TestPlanAndLoadgenConfig(t *testing.T) {
	t.Parallel()
	c := base()
	c.Rate, c.Seed, c.SeedSet, c.Warmup, c.MaxConcurrency = 4, 42, true, "20", 8
	p, err := c.Plan(context.Background(), Prompts{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	q, err := c.Plan(context.Background(), Prompts{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Gen.Item(5).Prompt != q.Gen.Item(5).Prompt || p.Arrivals.Next() != q.Arrivals.Next() {
		t.Fatal("two plans of one seed differ")
	}
	cfg := p.LoadgenConfig(Target{BaseURL: "http://h", Model: "m", API: "chat", RequestTimeout: time.Minute, Grace: -1})
	if cfg.Concurrency != 0 || cfg.Arrivals == nil || cfg.RateRPS != 4 || cfg.MaxConcurrency != 8 || cfg.Requests != 300 ||
		cfg.WarmupRequests != 20 || cfg.BaseURL != "http://h" || cfg.Grace != -1 || cfg.RequestTimeout != time.Minute {
		t.Fatalf("open-loop config: %+v", cfg)
	}
	c.Rate = 0
	p, err = c.Plan(context.Background(), Prompts{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg := p.LoadgenConfig(Target{}); cfg.Concurrency != 32 || cfg.Arrivals != nil {
		t.Fatalf("closed-loop config: concurrency %d, arrivals %v", cfg.Concurrency, cfg.Arrivals)
	}
	c.Input = "zero"
	if _, err := c.Plan(context.Background(), Prompts{}, nil); err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), "--input-tokens") {
		t.Fatalf("a bad length: %v", err)
	}
}

// Settings of how requests are sent reach every request through the
// configuration, and the stored config says so.
func TestContinuousUsageReachesTheLoad(t *testing.T) {
	t.Parallel()
	c := base()
	c.ContinuousUsage, c.StopOversaturated = true, true
	p, err := c.Plan(context.Background(), Prompts{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg := p.LoadgenConfig(Target{}); !cfg.ContinuousUsage || !cfg.StopOversaturated {
		t.Errorf("bench's config: continuous usage %v, stop oversaturated %v; want both", cfg.ContinuousUsage, cfg.StopOversaturated)
	}
	if cfg := c.StepTemplate(Target{}); !cfg.ContinuousUsage || !cfg.StopOversaturated {
		t.Errorf("a sweep's step template: continuous usage %v, stop oversaturated %v; want both", cfg.ContinuousUsage, cfg.StopOversaturated)
	}
	kv := c.Config(nil, Prompts{})
	if last := kv[len(kv)-1]; last != [2]string{"continuous_usage", "true"} {
		t.Errorf("config ends %v, want continuous_usage true", last)
	}
}

func TestSessionsParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s     Sessions
		given Given
		want  string // "": accepted
	}{
		{Sessions{Turns: "4", Think: "0s"}, Given{}, ""},
		{Sessions{Turns: "4", Think: "0s"}, Given{"turns": true}, "--turns needs --sessions N"},
		{Sessions{Count: 2, Turns: "2:8", Think: "1s:5s"}, Given{}, ""},
		{Sessions{Count: 2, Turns: "4", Think: "0s"}, Given{"rate": true}, "--rate does not apply with --sessions"},
		{Sessions{Count: MaxInFlight + 1, Turns: "4", Think: "0s"}, Given{}, "--sessions 100001: want 1 to 100000"},
		{Sessions{Count: 2, Turns: "4", Think: "soon"}, Given{}, `--think-time "soon"`},
	} {
		_, _, err := tc.s.Parse(tc.given)
		if (tc.want == "") != (err == nil) || (err != nil && (!strings.Contains(err.Error(), tc.want) || !badinput.Is(err))) {
			t.Errorf("%+v given %v: %v, want %q", tc.s, tc.given, err, tc.want)
		}
	}
}

func TestCheckFits(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in, out, dataset string
		maxLen, limit    int
		want             string
	}{
		{"512", "128", "", 4096, 0, ""},
		{"4000", "200", "", 4096, 0, "average 4000 + 200 = 4200 tokens per request, over the max model len 4096 of m"},
		{"3000", "10", "", 4096, 2048, "averages 3000 prompt tokens, over the 2048 a step holds"},
		{"4000", "200", "prompts.jsonl", 4096, 0, ""},
	} {
		ch := Choice{Input: c.in, Output: c.out, Dataset: c.dataset}
		err := ch.CheckFits(c.maxLen, "m", c.limit)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s/%s on %d (limit %d): %v, want %q", c.in, c.out, c.maxLen, c.limit, err, c.want)
		}
	}
}
