package selftest

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/simserver"
)

func serverConfig(t *testing.T) simserver.Config {
	gpu, err := simengine.LookupGPU("h100")
	if err != nil {
		t.Fatal(err)
	}
	model, err := simengine.LookupModel("llama-3.1-8b")
	if err != nil {
		t.Fatal(err)
	}
	ec := simengine.DefaultConfig(gpu, model, 1)
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
