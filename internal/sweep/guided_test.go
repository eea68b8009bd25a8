package sweep

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/slo"
	"github.com/knee-dev/knee/internal/stats"
)

// fakeServer is a closed-loop server in virtual time: each user gets
// perUser tok/s until the server's capacity, past which the queue grows
// TTFT in proportion to the excess. Past cliff (0: none) it collapses: half
// the throughput and TTFT ×20, a change no smooth model foresees.
type fakeServer struct {
	perUser, capacity, baseTTFT float64
	cliff                       float64
	loads                       []float64 // every load measured, in order
	requests                    int
}

func (f *fakeServer) at(load float64) (tps, ttft float64) {
	tps = math.Min(load*f.perUser, f.capacity)
	ttft = f.baseTTFT * (1 + 0.01*load)
	if over := load * f.perUser / f.capacity; over > 1 {
		ttft *= 1 + 4*(over-1)
	}
	if f.cliff > 0 && load > f.cliff {
		tps, ttft = tps/2, ttft*20
	}
	return tps, ttft
}

func (f *fakeServer) Run(_ context.Context, load Load) (Step, error) {
	f.loads = append(f.loads, load.Value)
	tps, ttft := f.at(load.Value)
	n := f.requests
	if n == 0 {
		n = 100
	}
	return Step{Load: load, Full: true, Summary: stats.Summary{Requests: n, Completed: n, DurationS: 10,
		OutputTokenThroughputTPS: tps, RequestThroughputRPS: tps / 100, TTFT: stats.Dist{Count: n, P50: ttft, P95: ttft}}}, nil
}

// fakeModel predicts the same shape with its own capacity, which Refit
// sets from the measured steps: the best throughput of a step that
// looked saturated, else the prior.
type fakeModel struct {
	srv      fakeServer // the shape it believes; capacity refitted
	prior    float64
	refits   int
	rangeRel float64
}

func (m *fakeModel) Refit(_ context.Context, measured []Step) error {
	m.refits++
	m.srv.capacity = m.prior
	saturated := false
	for _, s := range measured {
		t := s.Summary.OutputTokenThroughputTPS
		if t < 0.95*s.Load.Value*m.srv.perUser {
			m.srv.capacity, saturated = t, true
		} else if !saturated {
			m.srv.capacity = max(m.srv.capacity, 1.05*t)
		}
	}
	return nil
}

func (m *fakeModel) Predict(ctx context.Context, load Load) (Prediction, error) {
	s, _ := m.srv.Run(ctx, load)
	r := m.rangeRel
	if r == 0 {
		r = 0.2
	}
	return Prediction{Step: s, Ranges: Ranges{TTFT: r, TPOT: r, Throughput: r}}, nil
}

func mustSLO(t *testing.T, exprs ...string) slo.Set {
	t.Helper()
	set, err := slo.ParseAll(exprs)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// checkBracket asserts that the SLO-safe point is a measured step that
// meets every SLO, that the next grid load is measured and fails, and
// that they are the loads the true server puts either side of its limit.
func checkBracket(t *testing.T, res *Result, srv *fakeServer, p GuidedPlan, ttftLimit float64) {
	t.Helper()
	grid := p.Grid()
	want := -1
	for i, v := range grid {
		if _, ttft := srv.at(v); ttft < ttftLimit {
			want = i
		} else {
			break
		}
	}
	if !res.SLOSafe.Found() {
		t.Fatalf("no SLO-safe point: %s", res.SLOSafe.Reason)
	}
	if res.SLOSafe.Load != grid[want] {
		t.Fatalf("SLO-safe point %v, want %v (grid %v)", res.SLOSafe.Load, grid[want], grid)
	}
	if !slices.Contains(srv.loads, grid[want]) || !slices.Contains(srv.loads, grid[want+1]) {
		t.Fatalf("bracket %v–%v not both measured (measured %v)", grid[want], grid[want+1], srv.loads)
	}
	for _, s := range res.Steps {
		if !slices.Contains(srv.loads, s.Load.Value) {
			t.Fatalf("step %s in the result was never measured", s.Load)
		}
	}
}

func TestGuidedBracketIsMeasured(t *testing.T) {
	t.Parallel()
	set := mustSLO(t, "p95(ttft)<400ms")
	p := GuidedPlan{Kind: Concurrency, Min: 1, Max: 256, Resolution: 0.1}
	dense := len(p.Grid())
	// The model's prior capacity from a quarter to four times the truth:
	// the refit must pull it in, and the bracket must be measured.
	for _, prior := range []float64{1000, 2000, 4000, 8000, 16000} {
		t.Run(fmt.Sprint(prior), func(t *testing.T) {
			srv := &fakeServer{perUser: 100, capacity: 4000, baseTTFT: 50}
			m := &fakeModel{srv: fakeServer{perUser: 100, baseTTFT: 50}, prior: prior}
			res, err := RunGuided(context.Background(), srv, m, p, set, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkBracket(t, res, srv, p, 400)
			t.Logf("prior %v: steps %v", prior, srv.loads)
			// Within ×2 of the truth the refitted model stays in range; a
			// prior ×4 off may fall back, as long as the bracket is right.
			if res.Guided == nil || (res.Guided.Fallback != "" && prior >= 2000 && prior <= 8000) {
				t.Fatalf("guided log %+v: want guided to the end", res.Guided)
			}
			if res.Guided.Fallback == "" && len(srv.loads) > dense/3 {
				t.Errorf("%d steps measured (%v); the dense grid has %d", len(srv.loads), srv.loads, dense)
			}
			if !res.Knee.Found() || !slices.Contains(srv.loads, res.Knee.Load) {
				t.Fatalf("knee %+v not a measured step (measured %v)", res.Knee, srv.loads)
			}
			// The true knee is at capacity/perUser = 40 in flight. After a
			// fallback the knee is Kneedle on the measured steps alone,
			// which depends on where they lie: only its being measured is
			// asserted then.
			if res.Guided.Fallback == "" && (res.Knee.Load < 36 || res.Knee.Load > 44) {
				t.Errorf("knee at %v, want within one grid step of 40", res.Knee.Load)
			}
			for i, st := range res.Guided.Steps {
				if res.Guided.Fallback == "" && (i == 0) != (st.Predicted == nil) {
					t.Errorf("step %d (%s): predicted %v; only the light step goes without a prediction", i, st.Load, st.Predicted)
				}
			}
		})
	}
}

// A server that collapses past a load the model cannot foresee: the
// guided sweep sees two steps outside its range, says so, and finishes as
// a bisection on measured points, still on the right bracket.
func TestGuidedFallsBackOnAbruptChange(t *testing.T) {
	t.Parallel()
	set := mustSLO(t, "p95(ttft)<400ms")
	p := GuidedPlan{Kind: Concurrency, Min: 1, Max: 256, Resolution: 0.1}
	srv := &fakeServer{perUser: 100, capacity: 4000, baseTTFT: 50, cliff: 20}
	m := &fakeModel{srv: fakeServer{perUser: 100, baseTTFT: 50}, prior: 4000}
	res, err := RunGuided(context.Background(), srv, m, p, set, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Guided.Fallback == "" {
		t.Fatalf("no fallback; steps %v", srv.loads)
	}
	checkBracket(t, res, srv, p, 400)
	if res.SLOSafe.Load != 19 {
		t.Fatalf("SLO-safe %v, want 19 (the grid's last load below the cliff at 20)", res.SLOSafe.Load)
	}
}

func TestGuidedBudgetSaysWhatIsUnknown(t *testing.T) {
	t.Parallel()
	set := mustSLO(t, "p95(ttft)<400ms")
	p := GuidedPlan{Kind: Concurrency, Min: 1, Max: 256, Resolution: 0.1, BudgetRequests: 250}
	srv := &fakeServer{perUser: 100, capacity: 4000, baseTTFT: 50}
	m := &fakeModel{srv: fakeServer{perUser: 100, baseTTFT: 50}, prior: 16000}
	res, err := RunGuided(context.Background(), srv, m, p, set, nil)
	if !errors.Is(err, ErrBudget) {
		t.Fatalf("err %v, want the budget's", err)
	}
	if res == nil || len(res.Steps) != 2 || res.Guided.Requests != 200 {
		t.Fatalf("want the 2 steps the budget allowed, got %+v", res)
	}
	if res.Guided.Unknown == "" || !slices.ContainsFunc(res.Notes, func(n string) bool { return n == "budget exhausted: "+res.Guided.Unknown }) {
		t.Fatalf("unknown %q not in the notes %q", res.Guided.Unknown, res.Notes)
	}
}

// The step sequence is a function of the inputs: shards and reruns agree.
func TestGuidedIsDeterministic(t *testing.T) {
	t.Parallel()
	set := mustSLO(t, "p95(ttft)<400ms")
	p := GuidedPlan{Kind: Rate, Min: 0.5, Max: 64, Resolution: 0.1}
	var seqs [][]float64
	for range 3 {
		srv := &fakeServer{perUser: 100, capacity: 900, baseTTFT: 50}
		m := &fakeModel{srv: fakeServer{perUser: 100, baseTTFT: 50}, prior: 3000}
		if _, err := RunGuided(context.Background(), srv, m, p, set, nil); err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, srv.loads)
	}
	if !slices.Equal(seqs[0], seqs[1]) || !slices.Equal(seqs[0], seqs[2]) {
		t.Fatalf("step sequences differ: %v", seqs)
	}
}

// Without a model: a plain bisection on measured points (doubling, then
// halving the bracket), the baseline the guided sweep is compared with.
func TestBisectionWithoutModel(t *testing.T) {
	t.Parallel()
	set := mustSLO(t, "p95(ttft)<400ms")
	p := GuidedPlan{Kind: Concurrency, Min: 1, Max: 256, Resolution: 0.1}
	srv := &fakeServer{perUser: 100, capacity: 4000, baseTTFT: 50}
	res, err := RunGuided(context.Background(), srv, nil, p, set, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkBracket(t, res, srv, p, 400)
	if !slices.Equal(srv.loads[:4], []float64{1, 2, 4, 8}) {
		t.Fatalf("bisection starts %v, want doubling 1, 2, 4, 8", srv.loads)
	}
}

func TestGuidedPlanValidate(t *testing.T) {
	t.Parallel()
	for _, p := range []GuidedPlan{
		{Kind: "x", Min: 1, Max: 2, Resolution: 0.1},
		{Kind: Rate, Min: 0, Max: 2, Resolution: 0.1},
		{Kind: Rate, Min: 2, Max: 2, Resolution: 0.1},
		{Kind: Rate, Min: 1, Max: 2, Resolution: 0},
		{Kind: Rate, Min: 1, Max: 2, Resolution: 0.1, BudgetRequests: -1},
	} {
		if err := p.Validate(); err == nil {
			t.Errorf("%+v: want an error", p)
		}
	}
	g := (&GuidedPlan{Kind: Concurrency, Min: 1, Max: 10, Resolution: 0.5}).Grid()
	if !slices.Equal(g, []float64{1, 2, 3, 5, 8, 10}) {
		t.Fatalf("grid %v", g)
	}
}

// sharedServer is a fakeServer that notes each step's share.
type sharedServer struct {
	fakeServer
	shares []float64
}

func (s *sharedServer) Run(ctx context.Context, load Load) (Step, error) {
	s.shares = append(s.shares, StepShare(ctx))
	return s.fakeServer.Run(ctx, load)
}

// stubbornModel never refits: it keeps predicting a server four times as
// fast, so only the measured steps can steer the search.
type stubbornModel struct{ fakeModel }

func (m *stubbornModel) Refit(context.Context, []Step) error { return nil }

// A model that keeps aiming too high: after two failures in a row the
// next step is overruled by the measured steps (the secant through the
// bracket's SLO margins, or the bisection's midpoint when higher), and it
// lands within a grid step or two of the true limit.
func TestGuidedOverrulesAStubbornModel(t *testing.T) {
	t.Parallel()
	set := mustSLO(t, "p95(ttft)<400ms")
	p := GuidedPlan{Kind: Concurrency, Min: 1, Max: 256, Resolution: 0.1}
	srv := &fakeServer{perUser: 100, capacity: 4000, baseTTFT: 50}
	m := &stubbornModel{fakeModel{srv: fakeServer{perUser: 100, baseTTFT: 50, capacity: 16000}, prior: 16000, rangeRel: 5}}
	res, err := RunGuided(context.Background(), srv, m, p, set, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkBracket(t, res, srv, p, 400)
	grid := p.Grid()
	limit := slices.Index(grid, res.SLOSafe.Load)
	var sec *GuidedStep
	for i := range res.Guided.Steps {
		if st := res.Guided.Steps[i]; strings.Contains(st.Why, "cross the limit") {
			sec = st
		}
	}
	if sec == nil {
		t.Fatalf("no step chosen by the measured margins: %+v", res.Guided.Steps)
	}
	if at := slices.Index(grid, sec.Load.Value); at < limit-2 || at > limit+2 {
		t.Errorf("the secant chose %s; the limit is at %v (grid %v)", sec.Load, grid[limit], grid)
	}
	t.Logf("steps %v", srv.loads)
}

// The light step and the knee's steps above the measured SLO bracket run
// a share of a whole step (their verdicts decide nothing); every other
// step, the bracket's included, runs whole, and the log says which.
func TestGuidedShortSteps(t *testing.T) {
	t.Parallel()
	set := mustSLO(t, "p95(ttft)<60ms") // the limit (19 in flight) lies below the knee (40)
	p := GuidedPlan{Kind: Concurrency, Min: 1, Max: 256, Resolution: 0.1}
	srv := &sharedServer{fakeServer: fakeServer{perUser: 100, capacity: 4000, baseTTFT: 50}}
	m := &fakeModel{srv: fakeServer{perUser: 100, baseTTFT: 50}, prior: 4000}
	res, err := RunGuided(context.Background(), srv, m, p, set, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkBracket(t, res, &srv.fakeServer, p, 60)
	grid := p.Grid()
	b := grid[slices.Index(grid, res.SLOSafe.Load)+1]
	short := 0
	for i, st := range res.Guided.Steps {
		want := 1.0
		switch {
		case i == 0:
			want = lightShare
		case st.Load.Value > b && strings.Contains(st.Why, "knee"):
			want, short = kneeShare, short+1
		}
		logged := st.Share
		if logged == 0 {
			logged = 1
		}
		if srv.shares[i] != want || logged != want {
			t.Errorf("step %d (%s, %q): ran a share %v (logged %v), want %v", i+1, st.Load, st.Why, srv.shares[i], st.Share, want)
		}
	}
	if short == 0 {
		t.Errorf("no knee step above the bracket at %v: steps %v", b, srv.loads)
	}
	t.Logf("steps %v, shares %v", srv.loads, srv.shares)
}

// When the refits moved the knee past the steps spent on it, the nearest
// measured step within two grid steps stands for it, said so; further
// than that the knee is unknown, never a predicted point.
func TestGuidedKneeStandIn(t *testing.T) {
	t.Parallel()
	srv := fakeServer{perUser: 100, capacity: 4000, baseTTFT: 50}
	place := func(offsets ...int) (Point, float64) {
		g := &guided{p: GuidedPlan{Kind: Concurrency, Min: 1, Max: 256, Resolution: 0.1}, metric: MetricOutputTPS, at: map[int]Step{}}
		g.grid = g.p.Grid()
		for _, v := range g.grid {
			s, _ := srv.Run(context.Background(), Load{Kind: Concurrency, Value: v})
			g.preds = append(g.preds, Prediction{Step: s})
		}
		k := g.modelKnee()
		var steps []Step
		for _, d := range offsets {
			s, _ := srv.Run(context.Background(), Load{Kind: Concurrency, Value: g.grid[k+d]})
			g.at[k+d] = s
			steps = append(steps, s)
		}
		slices.SortFunc(steps, func(a, b Step) int { return int(a.Load.Value - b.Load.Value) })
		res, err := Analyze(steps, Options{})
		if err != nil {
			t.Fatal(err)
		}
		g.placeKnee(res)
		return res.Knee, g.grid[k]
	}
	knee, at := place(-5, -2, 3)
	if !knee.Found() || knee.Load >= at || !strings.Contains(knee.Reason, "2 grid step(s) away") {
		t.Errorf("knee %+v; want the step two grid steps below %v standing in", knee, at)
	}
	if knee, at := place(-5, -3, 3); knee.Found() || !strings.Contains(knee.Reason, "the knee is unknown") {
		t.Errorf("knee %+v with no step within two grid steps of %v; want unknown", knee, at)
	}
}

// The secant's margin is the worst objective over the run's and a mix's
// classes': the class that breaks first decides.
func TestGuidedMarginCountsClasses(t *testing.T) {
	t.Parallel()
	g := &guided{}
	s := Step{SLOs: []Check{{Objective: "p95(ttft)<300ms", Value: 150}},
		Classes: []ClassStep{{Name: "chat", SLOs: []Check{{Objective: "p95(ttft)<200ms", Value: 180}}},
			{Name: "batch", SLOs: []Check{{Objective: "output_throughput>100", Value: 50}}}}}
	if m, ok := g.margin(s); !ok || math.Abs(m-2) > 1e-9 {
		t.Fatalf("margin %v, %v; want 2 (batch's floor 100 against 50)", m, ok)
	}
	s.Classes = s.Classes[:1]
	if m, ok := g.margin(s); !ok || math.Abs(m-0.9) > 1e-9 {
		t.Fatalf("margin %v, %v; want 0.9 (chat's 180 of 200)", m, ok)
	}
}

// Each measured step's guided record is the log's own, curve included:
// the refit after a step logs its curve once, on the record the step, its
// copies and the stored result share.
func TestGuidedStepsShareTheLog(t *testing.T) {
	t.Parallel()
	set := mustSLO(t, "p95(ttft)<400ms")
	p := GuidedPlan{Kind: Rate, Min: 0.5, Max: 64, Resolution: 0.1}
	srv := &fakeServer{perUser: 100, capacity: 900, baseTTFT: 50}
	m := &fakeModel{srv: fakeServer{perUser: 100, baseTTFT: 50}, prior: 3000}
	res, err := RunGuided(context.Background(), srv, m, p, set, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Steps) < 3 || len(res.Steps) != len(res.Guided.Steps) {
		t.Fatalf("%d steps, %d logged", len(res.Steps), len(res.Guided.Steps))
	}
	for i := range res.Steps {
		g := res.Steps[i].Guided
		if g == nil || !slices.Contains(res.Guided.Steps, g) {
			t.Fatalf("step %d (%s): its guided record is not the log's", i, res.Steps[i].Load)
		}
		if len(g.Curve) != len(p.Grid()) {
			t.Errorf("step %d (%s): curve of %d points, want the grid's %d", i, res.Steps[i].Load, len(g.Curve), len(p.Grid()))
		}
	}
}
