package web

import (
	"bufio"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/store"
	"github.com/knee-dev/knee/internal/sweep"
)

// guidedSweepSteps are n steps of a guided sweep as the loop logs them:
// measured at concurrency 1, 4, 2, … in that order, each after the first
// with the prediction made before it, each with the curve its refit drew,
// the range ratio r/order (narrowing as steps land).
func guidedSweepSteps(n int) []sweep.Step {
	loads := []float64{1, 4, 2, 3}
	fig := func(v, r float64) sweep.Figure { return sweep.Figure{Value: v, Low: v / (1 + r), High: v * (1 + r)} }
	var out []sweep.Step
	for i := range n {
		l := sweep.Load{Kind: sweep.Concurrency, Value: loads[i]}
		s := sweep.Step{Load: l, Full: true, SLOMet: true, Summary: stats.Summary{Requests: 10, Completed: 10,
			OutputTokenThroughputTPS: 40 * loads[i], TTFT: stats.Dist{Count: 10, P50: 50, P95: 60 * loads[i]}}}
		r := 0.5 / float64(i+1)
		var curve []sweep.CurvePoint
		for _, g := range []float64{1, 2, 3, 4} {
			curve = append(curve, sweep.CurvePoint{Load: g, Throughput: fig(40*g, r), TTFTP95: fig(60*g, r)})
		}
		gs := &sweep.GuidedStep{Order: i + 1, Load: l, Why: "test", Curve: curve,
			Measured: sweep.MeasuredFigures{Throughput: 40 * loads[i], SLOMet: true, Requests: 10, ElapsedS: 1}}
		if i > 0 {
			gs.Predicted = &sweep.PredictedFigures{Throughput: fig(38*loads[i], 2*r)}
		}
		s.Guided = gs
		out = append(out, s)
	}
	return out
}

// The live view of a running guided sweep carries its steps as the sweep
// checkpoints them, in measuring order, with each refit's curve: the page
// redraws the band as steps land. The run's page reads the same from
// /api/runs/ID/guided; a run that is no guided sweep has none.
func TestLiveGuidedBandAsStepsLand(t *testing.T) {
	path := filepath.Join(t.TempDir(), "knee.db")
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := New(Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	_, ts := newTestServerWith(t, s)
	rw, err := st.BeginRun(store.RunMeta{Kind: store.KindSweep, Target: "embedded", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	opts := sweep.Options{Metric: sweep.MetricOutputTPS}
	land := func(n int) {
		rw.SetStep(n - 1)
		at := time.Duration(n) * time.Millisecond
		rw.Add(&record.Request{ID: store.SweepRecordID(n-1, 0), Scheduled: at, Sent: at, FirstToken: 2 * at, Done: 3 * at, StreamEnd: 3 * at, OutputTokens: 4, InputTokens: 8})
		if err := rw.Flush(); err != nil {
			t.Fatal(err)
		}
		res, err := sweep.Analyze(guidedSweepSteps(n), opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.SaveSweepResult(rw.ID(), res); err != nil {
			t.Fatal(err)
		}
	}
	land(1)
	res, err := ts.Client().Get(ts.URL + "/api/runs/" + itoa(rw.ID()) + "/live")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	next := func() (u liveUpdate) {
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "data: ") {
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &u); err != nil {
					t.Fatal(err)
				}
				return u
			}
		}
		t.Fatalf("stream ended: %v", sc.Err())
		return
	}
	check := func(g *guidedView, n int) {
		t.Helper()
		want := guidedSweepSteps(n)
		if g == nil || len(g.Steps) != n || g.LoadKind != sweep.Concurrency {
			t.Fatalf("guided view %+v, want %d steps over concurrency", g, n)
		}
		for i, s := range g.Steps {
			w := want[i].Guided
			if s.Order != i+1 || s.Load != w.Load || len(s.Curve) != len(w.Curve) || s.Curve[0] != w.Curve[0] || s.MeasuredTTFTP95 != want[i].Summary.TTFT.P95 ||
				(s.Predicted == nil) != (w.Predicted == nil) || (w.Predicted != nil && s.Predicted.Throughput != w.Predicted.Throughput) {
				t.Errorf("step %d: %+v, want %+v (measured TTFT p95 %v)", i+1, s, *w, want[i].Summary.TTFT.P95)
			}
		}
	}
	check(next().Guided, 1)
	land(2)
	land(3)
	u := next()
	// A poll may fall between a step's records and its checkpoint: each
	// event is a whole prefix of the steps, never a step out of order.
	for u.Guided == nil || len(u.Guided.Steps) < 3 {
		if u.Guided != nil {
			check(u.Guided, len(u.Guided.Steps))
		}
		u = next()
	}
	check(u.Guided, 3)

	getJSON := func(ts *httptest.Server, path string, v any) error {
		res, err := ts.Client().Get(ts.URL + path)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		return json.NewDecoder(res.Body).Decode(v)
	}
	var g *guidedView
	if err := getJSON(ts, "/api/runs/"+itoa(rw.ID())+"/guided", &g); err != nil {
		t.Fatal(err)
	}
	check(g, 3)

	bench, err := st.BeginRun(store.RunMeta{Kind: store.KindBench, Target: "embedded", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	g = &guidedView{}
	if err := getJSON(ts, "/api/runs/"+itoa(bench.ID())+"/guided", &g); err != nil || g != nil {
		t.Errorf("a bench run's guided view: %+v, %v; want null", g, err)
	}
}
