package selftest

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/simengine/enginetest"
	"github.com/knee-dev/knee/internal/simserver"
)

func serverConfig(t *testing.T) simserver.Config {
	ec := enginetest.H100Llama8B(t, 1)
	ec.MaxModelLen = 4096
	return simserver.Config{Engine: ec}
}

// TestRunSmall runs a short self-check and checks the figures are
// coherent; bounds are loose because the machine may be busy.
func TestRunSmall(t *testing.T) {
	var steps []Step
	res, err := Run(context.Background(), Config{
		Server: serverConfig(t), Concurrency: []int{1, 8}, Duration: 700 * time.Millisecond, Warmup: 200 * time.Millisecond,
		InputTokens: 16, OutputTokens: 8, API: "chat", Progress: func(s Step) { steps = append(steps, s) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Steps) != 2 || len(steps) != 2 {
		t.Fatalf("%d steps", len(res.Steps))
	}
	for _, s := range res.Steps {
		if s.Requests == 0 || s.Errors != 0 || s.TTFTError.Count != s.Requests || s.ITLError.Count != s.Requests*7 {
			t.Errorf("step %d: %+v", s.Concurrency, s)
		}
		// knee's client records the server's write times, so the step is
		// judged against them, not against the intended times.
		if s.Truth != TruthWriteTimes || s.RequestsWithWriteTimes != s.Requests || s.TTFTErrorVsIntended.Count != s.TTFTError.Count {
			t.Errorf("step %d: truth %q, %d of %d requests with write times", s.Concurrency, s.Truth, s.RequestsWithWriteTimes, s.Requests)
		}
		if s.TokenRateTPS <= 0 || s.CPUPerTokenUS <= 0 || s.PacingLag.Tokens == 0 {
			t.Errorf("step %d: rate %v cpu %v lag %+v", s.Concurrency, s.TokenRateTPS, s.CPUPerTokenUS, s.PacingLag)
		}
		// Reported TTFT includes the request's trip to the server, so it
		// is never much below the truth; and it is not wildly above.
		if s.TTFTError.Min < -1 || s.TTFTError.P50 > 50 || math.Abs(s.ITLError.P50) > 50 {
			t.Errorf("step %d: ttft error %+v itl error %+v", s.Concurrency, s.TTFTError, s.ITLError)
		}
	}
	if res.Steps[1].TokenRateTPS <= res.Steps[0].TokenRateTPS {
		t.Errorf("8 streams gave %v tok/s, 1 stream %v", res.Steps[1].TokenRateTPS, res.Steps[0].TokenRateTPS)
	}
}

func TestSummarise(t *testing.T) {
	d := summarise([]float64{-2, 1, 0, 3})
	if d.Count != 4 || d.Min != -2 || d.Max != 3 || d.Mean != 0.5 || d.P50 != 0 || d.AbsP99 != 3 {
		t.Fatalf("%+v", d)
	}
	if (summarise(nil) != ErrDist{}) {
		t.Fatal("empty summary not zero")
	}
}

func TestBadConfig(t *testing.T) {
	for _, c := range []Config{
		{Concurrency: []int{0}, InputTokens: 1, OutputTokens: 2},
		{InputTokens: 0, OutputTokens: 2},
		{InputTokens: 1, OutputTokens: 1},
		{InputTokens: 1, OutputTokens: 2, Warmup: -1},
	} {
		c.Server = serverConfig(t)
		if _, err := Run(context.Background(), c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

// judge holds the client to the server's actual write times, and reports
// the errors against the intended times (which include pacing lag) apart.
func TestJudgeSeparatesMeasurementFromPacing(t *testing.T) {
	msd := func(f float64) time.Duration { return time.Duration(f * 1e6) }
	// The server meant tokens at 10, 20, 30 ms after receipt but wrote
	// them at 12, 25, 31 ms (pacing lag 2, 5, 1 ms); the client saw each
	// 0.25 ms after its write (the request took no time to arrive).
	withWrites := record.Request{
		ID: 1, Sent: msd(100), FirstToken: msd(112.25),
		TokenTimes:       []time.Duration{msd(112.25), msd(125.25), msd(131.25)},
		ServerTokenTimes: []time.Duration{msd(10), msd(20), msd(30)},
		ServerWriteTimes: []time.Duration{msd(12), msd(25), msd(31)},
		CoalescedChunks:  1,
	}
	var st Step
	judge(&st, []record.Request{withWrites,
		{ID: 2, Error: record.ErrCanceled},
		{ID: 3, Warmup: true, TokenTimes: []time.Duration{1}, ServerTokenTimes: []time.Duration{1}},
		{ID: 4, Error: record.ErrHTTP5xx}})
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if st.Requests != 1 || st.Errors != 1 || st.RequestsWithWriteTimes != 1 || st.Truth != TruthWriteTimes {
		t.Fatalf("requests %d errors %d with writes %d truth %q", st.Requests, st.Errors, st.RequestsWithWriteTimes, st.Truth)
	}
	if !near(st.CoalescedChunkShare, 1.0/3) {
		t.Errorf("coalesced share %v, want 1/3", st.CoalescedChunkShare)
	}
	if !near(st.TTFTError.Max, 0.25) || !near(st.ITLError.Max, 0) || !near(st.ITLError.Min, 0) {
		t.Errorf("measurement error: ttft %+v itl %+v; want 0.25 and 0", st.TTFTError, st.ITLError)
	}
	// Against intended: TTFT 12.25 − 10; gaps 13 − 10 and 6 − 10.
	if !near(st.TTFTErrorVsIntended.Max, 2.25) || !near(st.ITLErrorVsIntended.Max, 3) || !near(st.ITLErrorVsIntended.Min, -4) {
		t.Errorf("vs intended: ttft %+v itl %+v", st.TTFTErrorVsIntended, st.ITLErrorVsIntended)
	}

	// A client that does not record write times falls back to the
	// intended times, and says so.
	noWrites := withWrites
	noWrites.ServerWriteTimes = nil
	st = Step{}
	judge(&st, []record.Request{noWrites})
	if st.Truth != TruthIntendedTimes || st.RequestsWithWriteTimes != 0 || !near(st.TTFTError.Max, 2.25) {
		t.Errorf("fallback: truth %q ttft %+v", st.Truth, st.TTFTError)
	}
	st = Step{}
	judge(&st, []record.Request{withWrites, noWrites})
	if st.Truth != TruthMixed || st.RequestsWithWriteTimes != 1 || st.Requests != 2 {
		t.Errorf("mixed: truth %q, %d of %d with writes", st.Truth, st.RequestsWithWriteTimes, st.Requests)
	}
	st = Step{}
	judge(&st, nil)
	if st.Truth != "" {
		t.Errorf("no requests: truth %q", st.Truth)
	}
}

// TestSlowSteps forces every step to miss the bound, so the highest
// concurrency is repeated with the engine twice as slow, on a server of
// its own, with twice the duration.
func TestSlowSteps(t *testing.T) {
	sc := serverConfig(t)
	sc.Engine.StepTimeScale = 0.5
	res, err := Run(context.Background(), Config{
		Server: sc, Concurrency: []int{4, 2}, Duration: 400 * time.Millisecond, Warmup: 100 * time.Millisecond,
		InputTokens: 16, OutputTokens: 32, API: "chat", SlowSteps: 1, bound: time.Nanosecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Steps) != 3 {
		t.Fatalf("%d steps, want 2 and one slowed repeat", len(res.Steps))
	}
	for i, s := range res.Steps[:2] {
		if s.Slowed || s.StepTimeScale != 0.5 || s.Within1ms {
			t.Errorf("step %d: slowed %v, scale %v, within %v", i, s.Slowed, s.StepTimeScale, s.Within1ms)
		}
	}
	s := res.Steps[2]
	if !s.Slowed || s.StepTimeScale != 1 || s.Concurrency != 4 || s.Requests == 0 {
		t.Errorf("repeat: %+v", s)
	}
	// Half the token rate, give or take the machine: well below the first
	// step's. 32 tokens an answer, so that decode steps, not the front end,
	// set the rate (with 4, a busy machine measured ×1 above ×0.5).
	t.Logf("token rate: ×0.5 step %.0f tok/s, ×1 repeat %.0f", res.Steps[0].TokenRateTPS, s.TokenRateTPS)
	if s.TokenRateTPS >= 0.8*res.Steps[0].TokenRateTPS {
		t.Errorf("repeat at ×1 made %.0f tok/s, the ×0.5 step %.0f: want about half", s.TokenRateTPS, res.Steps[0].TokenRateTPS)
	}
	if res.MaxTokenRateWithin1msTPS != 0 {
		t.Errorf("max rate within bound %v, want 0 (every step missed)", res.MaxTokenRateWithin1msTPS)
	}
}
