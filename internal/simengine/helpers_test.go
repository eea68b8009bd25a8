package simengine

import (
	"math"
	"testing"
)

// mustConfig is the default configuration of model on tp of gpu: this
// package's engine set-up (other packages' tests use enginetest, which
// imports simengine and so cannot serve its own tests).
func mustConfig(t testing.TB, gpu, model string, tp int) Config {
	t.Helper()
	g, err := LookupGPU(gpu)
	if err != nil {
		t.Fatal(err)
	}
	m, err := LookupModel(model)
	if err != nil {
		t.Fatal(err)
	}
	return DefaultConfig(g, m, tp)
}

// mustEngine is mustConfig's engine, after mod (when not nil).
func mustEngine(t testing.TB, gpu, model string, tp int, mod func(*Config)) *Engine {
	t.Helper()
	cfg := mustConfig(t, gpu, model, tp)
	if mod != nil {
		mod(&cfg)
	}
	e, err := NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// single runs one request alone and returns its TTFT and TPOT in ms.
func single(t testing.TB, e *Engine, in, out int) (ttft, tpot float64) {
	t.Helper()
	if err := e.Submit(1, in, out); err != nil {
		t.Fatal(err)
	}
	start := e.Now()
	var first, last int64
	for e.HasWork() {
		e.Step(func(em Emission) {
			if em.Index == 0 {
				first = em.Time
			}
			last = em.Time
		})
	}
	ttft = float64(first-start) / 1e6
	if out > 1 {
		tpot = float64(last-first) / 1e6 / float64(out-1)
	}
	return
}

func within(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	err := math.Abs(got-want) / want
	t.Logf("%s: got %.2f ms, published %.2f ms, error %+.1f%%", what, got, want, (got-want)/want*100)
	if err > tol {
		t.Errorf("%s = %.2f ms, want within %.0f%% of %.2f ms", what, got, tol*100, want)
	}
}

// The published measurements the cost model is held to are in
// internal/sim/validation_test.go (TestValidationTable), where whole serving
// runs can be simulated.
