package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/diagnose"
)

func TestIncidentScenarios(t *testing.T) {
	for _, c := range []struct {
		name string
		want diagnose.Verdict
	}{{"queue", diagnose.QueuePressure}, {"decode", diagnose.DecodeSlowdown}, {"prefill", diagnose.PrefillPressure}} {
		t.Run(c.name, func(t *testing.T) {
			r, err := Run(context.Background(), c.name)
			if err != nil {
				t.Fatal(err)
			}
			if r.Diagnosis.Verdict != c.want {
				t.Errorf("verdict %s, want %s", r.Diagnosis.Verdict, c.want)
			}
			var b bytes.Buffer
			if err := Text(&b, r); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), "verdict: "+string(c.want)) || !strings.Contains(b.String(), "server queue") {
				t.Errorf("text:\n%s", b.String())
			}
			// The queue incident teaches "a flat decode rate points to a
			// queue": its decode must stay about flat (issue 44: ×11.5
			// uncapped, more than the decode incident's ×2.4).
			if c.name == "queue" {
				x := r.Incident.Summary.TPOT.P50 / r.Baseline.Summary.TPOT.P50
				t.Logf("queue incident: TPOT p50 %.1f → %.1f ms (×%.2f), TTFT p95 %.0f → %.0f ms", r.Baseline.Summary.TPOT.P50, r.Incident.Summary.TPOT.P50, x,
					r.Baseline.Summary.TTFT.P95, r.Incident.Summary.TTFT.P95)
				if x > 1.3 || r.Incident.Summary.TTFT.P95 < 10*r.Baseline.Summary.TTFT.P95 {
					t.Errorf("queue incident: TPOT ×%.2f, p95 TTFT %.0f → %.0f ms; want the decode about flat and the wait many times longer", x, r.Baseline.Summary.TTFT.P95, r.Incident.Summary.TTFT.P95)
				}
			}
			// Deterministic: a second run gives the same numbers.
			r2, _ := Run(context.Background(), c.name)
			j1, _ := json.Marshal(r)
			j2, _ := json.Marshal(r2)
			if !bytes.Equal(j1, j2) {
				t.Error("two runs of the scenario differ")
			}
		})
	}
}

func TestSweepScenario(t *testing.T) {
	r, err := Run(context.Background(), "sweep")
	if err != nil {
		t.Fatal(err)
	}
	s := r.Sweep
	if !s.Knee.Found() || !s.SLOSafe.Found() || r.HighestUnder2s == nil {
		t.Fatalf("knee %v safe %v", s.Knee, s.SLOSafe)
	}
	if *r.HighestUnder2s != s.SLOSafe.Load {
		t.Errorf("highest rate under 2 s %v, SLO-safe %v", *r.HighestUnder2s, s.SLOSafe.Load)
	}
	// Throughput flattens past the knee while p95 TTFT rises sharply.
	k := s.Knee.Index
	last := s.Steps[len(s.Steps)-1]
	atKnee := s.Steps[k]
	if g := last.Summary.RequestThroughputRPS / atKnee.Summary.RequestThroughputRPS; g > 1.1 {
		t.Errorf("throughput grows ×%.2f past the knee", g)
	}
	if g := last.Summary.TTFT.P95 / atKnee.Summary.TTFT.P95; g < 10 {
		t.Errorf("p95 TTFT grows only ×%.2f past the knee", g)
	}
	if first := s.Steps[0]; atKnee.Summary.RequestThroughputRPS < 5*first.Summary.RequestThroughputRPS {
		t.Errorf("throughput did not grow before the knee: %v → %v", first.Summary.RequestThroughputRPS, atKnee.Summary.RequestThroughputRPS)
	}
	var b bytes.Buffer
	if err := Text(&b, r); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + b.String())
	if !strings.Contains(b.String(), "◀ knee") || !strings.Contains(b.String(), "◀ SLO-safe") {
		t.Errorf("table lacks marks:\n%s", b.String())
	}
}

func TestUnknownScenario(t *testing.T) {
	if _, err := Run(context.Background(), "nope"); err == nil || !strings.Contains(err.Error(), "want one of [queue decode prefill sweep]") {
		t.Errorf("error %v", err)
	}
}

// TestSweepDipIsTheWarmupBacklog holds what the sweep's lesson says of the
// throughput past the knee (issue 44, contradiction 6): it quotes the
// table's figures, and where the last step serves less than the best, the
// cause it names is the one there: steps five times longer, whose warm-up
// backlog is a smaller share of the window, measure the knee's and the
// last load's throughput within a few percent of each other.
func TestSweepDipIsTheWarmupBacklog(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two 300 s simulated steps")
	}
	r, err := Run(context.Background(), "sweep")
	if err != nil {
		t.Fatal(err)
	}
	s := r.Sweep
	knee, last := s.Steps[s.Knee.Index], s.Steps[len(s.Steps)-1]
	best := knee
	for _, st := range s.Steps {
		if st.Summary.RequestThroughputRPS > best.Summary.RequestThroughputRPS {
			best = st
		}
	}
	for _, want := range []string{uiNum(best.Summary.RequestThroughputRPS) + " req/s", uiNum(last.Summary.RequestThroughputRPS) + " req/s",
		uiMS(knee.Summary.TTFT.P95), uiMS(last.Summary.TTFT.P95)} {
		if !strings.Contains(r.Lesson, want) {
			t.Errorf("the lesson does not quote %q: %s", want, r.Lesson)
		}
	}
	if strings.Contains(r.Lesson, "flattens") {
		t.Errorf("the lesson still says a fixed \"flattens\": %s", r.Lesson)
	}
	dip := 1 - last.Summary.RequestThroughputRPS/best.Summary.RequestThroughputRPS
	t.Logf("60 s steps: best %.2f req/s at %v, last %.2f req/s at %v (%.1f%% less)", best.Summary.RequestThroughputRPS, best.Load.Value,
		last.Summary.RequestThroughputRPS, last.Load.Value, 100*dip)
	if explained := strings.Contains(r.Lesson, "warm-up"); explained != (dip > DipExplained) {
		t.Errorf("a %.1f%% dip, yet the lesson explains one: %v: %s", 100*dip, explained, r.Lesson)
	}
	ecfg, err := engineConfig()
	if err != nil {
		t.Fatal(err)
	}
	long, err := sweepOver(context.Background(), ecfg, []float64{knee.Load.Value, last.Load.Value}, 5*RunFor, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, b := long.Steps[0].Summary.RequestThroughputRPS, long.Steps[1].Summary.RequestThroughputRPS
	t.Logf("300 s steps: %.2f req/s at %v, %.2f req/s at %v (%.1f%% less)", a, knee.Load.Value, b, last.Load.Value, 100*(1-b/a))
	if 1-b/a > 0.03 {
		t.Errorf("with steps five times longer the last load still serves %.1f%% less than the knee's: the dip is not the warm-up backlog", 100*(1-b/a))
	}
}
