package cli

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/knee-dev/knee/internal/simserver"
	"github.com/knee-dev/knee/internal/simserver/simservertest"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/store"
	"github.com/knee-dev/knee/internal/sweep"
)

func TestSweepGuidedBadFlags(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"resolution without guided", []string{"--resolution", "5%"}, "--resolution applies to a guided sweep"},
		{"budget without guided", []string{"--budget", "100"}, "--budget applies to a guided sweep"},
		{"list", []string{"--guided", "--concurrency", "1,2,4"}, "--guided chooses the loads itself"},
		{"factor", []string{"--guided", "--factor", "3"}, "--factor steers an automatic sweep"},
		{"resolution", []string{"--guided", "--resolution", "0.1%"}, `--resolution "0.1%": want a step from 1% to 100%`},
		{"budget", []string{"--guided", "--budget", "lots"}, `--budget "lots": want a number of requests (2000) or a duration (10m)`},
		{"negative budget", []string{"--guided", "--budget", "-5"}, `--budget "-5"`},
		{"step scale with url", []string{"--guided", "--url", "http://127.0.0.1:1", "--model", "m", "--step-time-scale", "2"}, "--step-time-scale configures knee's embedded"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, errs := kneeCmd(t, append([]string{"sweep", "--no-store"}, c.args...)...)
			if code != ExitUsage || !strings.Contains(errs, c.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, errs, c.want)
			}
		})
	}
}

// guidedArgs: long prompts, so TTFT grows with the load on the embedded
// H100 within a few requests in flight, and short outputs, so steps are
// quick.
var guidedArgs = []string{"--guided", "--requests", "24", "--input-tokens", "2048", "--output-tokens", "4", "--seed", "1", "--quiet", "--json"}

func guidedResult(t *testing.T, out string) *sweep.Result {
	t.Helper()
	var r sweep.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if r.Guided == nil || len(r.Guided.Steps) != len(r.Steps) {
		t.Fatalf("guided log %+v for %d steps", r.Guided, len(r.Steps))
	}
	return &r
}

// checkMeasuredBracket: the SLO-safe point is a measured step meeting the
// SLOs, and the grid's next load is measured and fails.
func checkMeasuredBracket(t *testing.T, r *sweep.Result, p sweep.GuidedPlan) {
	t.Helper()
	if !r.SLOSafe.Found() {
		t.Fatalf("no SLO-safe point: %s", r.SLOSafe.Reason)
	}
	grid := p.Grid()
	i := slices.Index(grid, r.SLOSafe.Load)
	if i < 0 || i+1 >= len(grid) {
		t.Fatalf("SLO-safe %v not inside the grid %v", r.SLOSafe.Load, grid)
	}
	var safe, next *sweep.Step
	for j := range r.Steps {
		switch r.Steps[j].Load.Value {
		case grid[i]:
			safe = &r.Steps[j]
		case grid[i+1]:
			next = &r.Steps[j]
		}
	}
	if safe == nil || next == nil || !safe.SLOMet || next.SLOMet {
		t.Fatalf("bracket %v–%v not measured as met and failed: %+v %+v", grid[i], grid[i+1], safe, next)
	}
}

// On the embedded server, closed loop: a stored sweep marked guided whose
// steps carry their predictions, bracketing the SLO-safe point.
func TestSweepGuidedEmbedded(t *testing.T) {
	db := filepath.Join(t.TempDir(), "k.db")
	code, out, errs := kneeCmd(t, append([]string{"sweep", "--max", "24", "--slo", "p95(ttft)<120ms", "--db", db}, guidedArgs...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	validate(t, compileSchema(t, "sweep.schema.json"), "knee sweep --guided --json", out)
	r := guidedResult(t, out)
	checkMeasuredBracket(t, r, sweep.GuidedPlan{Kind: sweep.Concurrency, Min: 1, Max: 24, Resolution: 0.1})
	if len(r.Steps) >= len((&sweep.GuidedPlan{Kind: sweep.Concurrency, Min: 1, Max: 24, Resolution: 0.1}).Grid()) {
		t.Errorf("%d steps: the guided sweep measured the whole grid", len(r.Steps))
	}
	for i, g := range r.Guided.Steps {
		if i > 0 && (g.Predicted == nil || g.InRange == nil) {
			t.Errorf("step %d (%s) has no prediction: %+v", i+1, g.Load, g)
		}
	}
	st, runs := lastRuns(t, db, 1)
	var cfg map[string]string
	if err := json.Unmarshal(runs[0].Config, &cfg); err != nil || cfg["guided"] != "true" {
		t.Fatalf("stored config %s: want guided=true (%v)", runs[0].Config, err)
	}
	stored, err := st.SweepResult(runs[0].ID)
	if err != nil || len(stored.Steps) != len(r.Steps) || stored.Steps[1].Guided == nil || stored.Steps[1].Guided.Predicted == nil {
		t.Fatalf("stored sweep %+v, %v: want every step with its prediction", stored, err)
	}
}

// A budget that runs out: the steps measured are stored, the exit is 1
// and the message names what is unknown.
func TestSweepGuidedBudget(t *testing.T) {
	db := filepath.Join(t.TempDir(), "k.db")
	code, out, errs := kneeCmd(t, append([]string{"sweep", "--max", "24", "--slo", "p95(ttft)<120ms", "--db", db, "--budget", "20"}, guidedArgs...)...)
	// The light step runs half of --requests 24: 12; another like it
	// would pass 20.
	if code != 1 || !strings.Contains(errs, "budget exhausted after 12 requests") || !strings.Contains(errs, "the SLO-safe point lies between") {
		t.Fatalf("exit %d, stderr %q; want 1 naming what is unknown", code, errs)
	}
	r := guidedResult(t, out)
	if len(r.Steps) != 1 || r.Guided.Unknown == "" {
		t.Fatalf("steps %d, unknown %q", len(r.Steps), r.Guided.Unknown)
	}
	st, runs := lastRuns(t, db, 1)
	if stored, err := st.SweepResult(runs[0].ID); err != nil || len(stored.Steps) != 1 {
		t.Fatalf("stored %+v, %v", stored, err)
	}
}

// A traffic mix with no run-wide SLO: the classes' own objectives decide
// (the class that breaks first), the guided sweep brackets where the
// first class breaks, and the model predicted the classes' verdicts.
func TestSweepGuidedMix(t *testing.T) {
	if testing.Short() {
		t.Skip("about 35 s of real-time steps (the mix's answers are long)")
	}
	code, out, errs := kneeCmd(t, "sweep", "--guided", "--mix", mixExample, "--min", "2", "--max", "16", "--requests", "16", "--seed", "1", "--no-store", "--json", "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	r := guidedResult(t, out)
	if r.BreaksFirst == nil {
		t.Fatalf("no class breaks first: %+v", r.SLOSafe)
	}
	checkMeasuredBracket(t, r, sweep.GuidedPlan{Kind: sweep.Concurrency, Min: 2, Max: 16, Resolution: 0.1})
	if r.BreaksFirst.Load > r.SLOSafe.Load && !slices.ContainsFunc(r.Steps, func(s sweep.Step) bool { return s.Load.Value == r.BreaksFirst.Load && !s.SLOMet }) {
		t.Fatalf("breaks first at %v, not a measured failing step", r.BreaksFirst.Load)
	}
	// Per class: every predicted step states each class's objectives with
	// a range around the value, beside the measured values.
	for _, g := range r.Guided.Steps[1:] {
		if g.Predicted == nil || len(g.Predicted.Classes) == 0 || len(g.Predicted.Classes) != len(g.Measured.Classes) {
			t.Fatalf("step %d (%s): classes predicted %+v, measured %+v", g.Order, g.Load, g.Predicted, g.Measured.Classes)
		}
		for k, c := range g.Predicted.Classes {
			m := g.Measured.Classes[k]
			if c.Name != m.Name || len(c.SLOs) == 0 || len(c.SLOs) != len(m.SLOs) {
				t.Fatalf("step %d class %d: predicted %+v, measured %+v", g.Order, k, c, m)
			}
			for _, f := range c.SLOs {
				if f.Value > 0 && !(f.Low < f.Value && f.Value < f.High) {
					t.Errorf("step %d %s %s: %v not inside its range %v–%v", g.Order, c.Name, f.Name, f.Value, f.Low, f.High)
				}
			}
		}
	}
}

// --save-profile: the guided sweep's refitted host profile, against a
// server twice as slow as the preset the sweep starts from, is one knee sim
// --profile reads, and it reproduces every measured step's throughput,
// median TTFT and TPOT within the range the profile states.
func TestSweepGuidedSaveProfile(t *testing.T) {
	url, srv := simservertest.Start(t, func(c *simserver.Config) { c.Engine.StepTimeScale = 2 })
	prof := filepath.Join(t.TempDir(), "host.yaml")
	code, out, errs := kneeCmd(t, "sweep", "--url", url, "--model", srv.Model(), "--max", "24", "--slo", "p95(ttft)<250ms", "--no-store",
		"--request-timeout", "30s", "--save-profile", prof, "--guided", "--requests", "32", "--input-tokens", "512", "--output-tokens", "32", "--seed", "1", "--quiet", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	r := guidedResult(t, out)
	if !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, "refitted host profile is saved in "+prof) }) {
		t.Errorf("no note names the saved profile: %q", r.Notes)
	}
	data, err := os.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`TTFT ±(\d+)%, TPOT ±(\d+)%, throughput ±(\d+)%`).FindStringSubmatch(string(data))
	if m == nil {
		t.Fatalf("the profile states no range:\n%s", data)
	}
	stated := func(i int) float64 { v, _ := strconv.ParseFloat(m[i], 64); return v / 100 }
	for _, s := range r.Steps {
		code, simOut, simErr := kneeCmd(t, "sim", "--profile", prof, "--concurrency", strconv.Itoa(int(s.Load.Value)), "--requests", "200",
			"--input-tokens", "512", "--output-tokens", "32", "--seed", "1", "--json", "--no-store")
		if code != 0 {
			t.Fatalf("knee sim --profile: exit %d: %s", code, simErr)
		}
		var sim stats.Summary
		if err := json.Unmarshal([]byte(simOut), &sim); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name          string
			measured, got float64
			rng           float64
		}{
			{"TTFT p50", s.Summary.TTFT.P50, sim.TTFT.P50, stated(1)},
			{"TPOT p50", s.Summary.TPOT.P50, sim.TPOT.P50, stated(2)},
			{"output tok/s", s.Summary.OutputTokenThroughputTPS, sim.OutputTokenThroughputTPS, stated(3)},
		} {
			t.Logf("%s: %s measured %.3g, knee sim --profile %.3g (stated ±%.0f%%)", s.Load, c.name, c.measured, c.got, 100*c.rng)
			// Under the race detector the measured steps run slower,
			// unevenly (a race pass measured TPOT 21.3 ms where the
			// profile, fitted on those same slowed steps, says 14.9): the
			// profile is checked in the plain pass; here it is logged.
			if rel := math.Abs(c.got/c.measured - 1); !(rel <= c.rng) && !raceEnabled {
				t.Errorf("%s: %s measured %.3g, knee sim --profile %.3g: %.0f%% off, outside the stated ±%.0f%%", s.Load, c.name, c.measured, c.got, 100*rel, 100*c.rng)
			}
		}
	}
	if code, _, errs := kneeCmd(t, "sweep", "--guided", "--bisect", "--save-profile", prof, "--no-store"); code != 2 || !strings.Contains(errs, "--bisect runs without a model") {
		t.Errorf("--bisect --save-profile: exit %d, %q; want 2", code, errs)
	}
}

// With --url the guided sweep's prior is what the flags say the server
// runs: --model-config's model, --server-profile's engine; with none of
// them and a served name that is no preset, a generic prior, said so.
// The stored run keeps what the prior was given.
func TestSweepGuidedPriorFlags(t *testing.T) {
	url, _ := simservertest.Start(t, func(c *simserver.Config) { c.ModelName = "served-name" })
	hf := filepath.Join("..", "hfconfig", "testdata", "qwen2.5-7b-instruct.json")
	args := []string{"sweep", "--url", url, "--model", "served-name", "--max", "8", "--slo", "p95(ttft)<250ms", "--no-store", "--request-timeout", "30s",
		"--guided", "--requests", "8", "--input-tokens", "256", "--output-tokens", "4", "--seed", "1", "--quiet", "--json"}
	for _, c := range []struct {
		name  string
		extra []string
		note  string
	}{
		{"model config", []string{"--model-config", hf}, "the model starts from the simulator's qwen2.5-7b-instruct on H100-SXM×1 and"},
		{"server profile", []string{"--server-profile", "sglang"}, "on H100-SXM×1 as sglang and"},
		{"generic", nil, `--model "served-name" is no simulator preset and nothing says what the server runs`},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := kneeCmd(t, append(slices.Clip(args), c.extra...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			r := guidedResult(t, out)
			if !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, c.note) }) {
				t.Errorf("no note %q in %q", c.note, r.Notes)
			}
		})
	}
	for _, c := range []struct{ args []string }{
		{[]string{"sweep", "--guided", "--server-profile", "sglang", "--no-store"}},
		{[]string{"sweep", "--guided", "--model-config", hf, "--no-store"}},
	} {
		if code, _, errs := kneeCmd(t, c.args...); code != 2 || !strings.Contains(errs, "say what a --url server runs") {
			t.Errorf("%v: exit %d, %q; want 2", c.args, code, errs)
		}
	}
	// The profile is resolved, not only named.
	if code, _, errs := kneeCmd(t, append(slices.Clip(args), "--server-profile", "no-such-engine")...); code != 2 || !strings.Contains(errs, "no-such-engine") {
		t.Errorf("--server-profile no-such-engine: exit %d, %q; want 2 naming it", code, errs)
	}
	if code, _, errs := kneeCmd(t, "sweep", "--server-profile", "sglang", "--no-store"); code != 2 || !strings.Contains(errs, "--server-profile applies to a guided sweep") {
		t.Errorf("--server-profile without --guided: exit %d, %q", code, errs)
	}
}

// The UI's live view draws a guided sweep's band from the steps it stored
// (issue 42): the refit after a step logs its curve once the step was
// checkpointed, so the steps are stored again as the next one starts.
// A proxy in front of the server reads the run database at each request:
// from the second step on, the latest step stored carries its curve.
func TestSweepGuidedStoresEachRefitBeforeTheNextStep(t *testing.T) {
	url, srv := simservertest.Start(t, nil)
	db := filepath.Join(t.TempDir(), "k.db")
	target, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	var mu sync.Mutex
	var st *store.Store
	seen := map[int]bool{} // latest stored step's order → whether it had its curve
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if st == nil {
			st, _ = store.OpenReadOnly(db)
		}
		if st != nil {
			if res, err := st.SweepResult(1); err == nil && res != nil {
				var latest *sweep.GuidedStep
				for _, s := range res.Steps {
					if s.Guided != nil && (latest == nil || s.Guided.Order > latest.Order) {
						latest = s.Guided
					}
				}
				if latest != nil {
					seen[latest.Order] = seen[latest.Order] || latest.Curve != nil
				}
			}
		}
		mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	defer func() {
		if st != nil {
			st.Close()
		}
	}()
	code, out, errs := kneeCmd(t, append([]string{"sweep", "--url", front.URL, "--model", srv.Model(), "--max", "24", "--slo", "p95(ttft)<120ms", "--db", db, "--request-timeout", "30s"}, guidedArgs...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	r := guidedResult(t, out)
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d steps; while measuring, the latest stored step had its curve: %v", len(r.Guided.Steps), seen)
	if len(r.Guided.Steps) < 3 {
		t.Fatalf("%d guided steps: want at least 3", len(r.Guided.Steps))
	}
	for order := 1; order < len(r.Guided.Steps); order++ {
		if r.Guided.Steps[order-1].Curve != nil && !seen[order] {
			t.Errorf("while step %d ran, the stored step %d lacked the curve its refit drew (seen %v)", order+1, order, seen)
		}
	}
}
