package cli

import (
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/store"
	"github.com/knee-dev/knee/internal/sweep"
)

// A measured sweep is stored whole: its per-request records (tagged by
// step), its steps, knee and SLO-safe point, and the resolved engine
// settings; every report format opens with the sweep and names the step
// whose full summary follows.
func TestStoredSweepIsComplete(t *testing.T) {
	db := filepath.Join(t.TempDir(), "knee.db")
	code, _, errs := kneeEnv(t, nil, "sweep", "--db", db, "--concurrency", "1,2", "--requests", "4", "--output-tokens", "8",
		"--input-tokens", "64", "--slo", "p95(ttft)<5s", "--seed", "3")
	if code != 0 {
		t.Fatalf("sweep: exit %d\n%s", code, errs)
	}
	_, out, _ := kneeEnv(t, nil, "runs", "--db", db, "--json")
	var runs []struct {
		Records int               `json:"records"`
		Model   string            `json:"model"`
		Config  map[string]string `json:"config"`
	}
	if err := json.Unmarshal([]byte(out), &runs); err != nil || len(runs) != 1 {
		t.Fatalf("runs --json: %v\n%s", err, out)
	}
	if runs[0].Records != 8 {
		t.Errorf("stored %d records, want the 8 requests of both steps", runs[0].Records)
	}
	for _, k := range []string{"sim_max_num_seqs", "sim_max_num_batched_tokens", "sim_max_model_len"} {
		if v := runs[0].Config[k]; v == "" || v == "0" {
			t.Errorf("stored config %s = %q, want the resolved value", k, v)
		}
	}

	_, out, _ = kneeEnv(t, nil, "report", "last", "--db", db, "--format", "json")
	var rep struct {
		Steps       []map[string]any         `json:"steps"`
		Knee        *struct{ Reason string } `json:"knee"`
		SLOSafe     *struct{ Load *float64 } `json:"slo_safe"`
		SummaryStep string                   `json:"summary_step"`
		Requests    int                      `json:"requests"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("report json: %v", err)
	}
	if len(rep.Steps) != 2 || rep.Knee == nil || rep.SLOSafe == nil || rep.SLOSafe.Load == nil || *rep.SLOSafe.Load != 2 ||
		!strings.Contains(rep.SummaryStep, "2 in flight") || rep.Requests != 4 {
		t.Errorf("report json: %d steps, knee %+v, slo_safe %+v, summary_step %q, requests %d", len(rep.Steps), rep.Knee, rep.SLOSafe, rep.SummaryStep, rep.Requests)
	}

	_, out, _ = kneeEnv(t, nil, "report", "last", "--db", db, "--format", "csv")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "concurrency,") || !strings.HasPrefix(lines[3], "# knee:") || !strings.HasPrefix(lines[4], "# slo_safe: 2 in flight") {
		t.Errorf("report csv, want a header, 2 steps, the knee and the SLO-safe point:\n%s", out)
	}

	_, out, _ = kneeEnv(t, nil, "report", "last", "--db", db)
	sweepAt, stepAt, sumAt := strings.Index(out, "Sweep over concurrency"), strings.Index(out, "Step 2 in flight (the SLO-safe point)"), strings.Index(out, "\nThroughput")
	if sweepAt < 0 || stepAt < sweepAt || sumAt < stepAt || !strings.Contains(out, "SLO-safe:  2 in flight") {
		t.Errorf("text report should open with the sweep, then name the step summarised:\n%s", out)
	}

	_, out, _ = kneeEnv(t, nil, "report", "last", "--db", db, "--format", "html")
	sweepAt, stepAt, sumAt = strings.Index(out, "<h2>Sweep over concurrency"), strings.Index(out, "Step 2 in flight (the SLO-safe point)"), strings.Index(out, "<h2>Throughput")
	if sweepAt < 0 || stepAt < sweepAt || sumAt < stepAt || !strings.Contains(out, "<th>concurrency</th>") {
		t.Errorf("html report should open with the sweep table, then name the step summarised")
	}

	// A simulated sweep and a simulated run store the engine settings they
	// ran with, not the flags' zeros.
	for _, args := range [][]string{{"sim", "sweep", "--rate", "1,2", "--requests", "20"}, {"sim", "--rate", "2", "--requests", "20"}} {
		code, _, errs = kneeEnv(t, nil, append(args, "--db", db)...)
		if code != 0 {
			t.Fatalf("%v: exit %d %s", args, code, errs)
		}
		_, out, _ = kneeEnv(t, nil, "report", "last", "--db", db, "--format", "json")
		var sim struct {
			Run struct{ Config map[string]string } `json:"run"`
		}
		json.Unmarshal([]byte(out), &sim)
		for _, k := range []string{"max_num_seqs", "max_num_batched_tokens", "max_model_len"} {
			if v := sim.Run.Config[k]; v == "" || v == "0" {
				t.Errorf("%v stored %s = %q, want the resolved value", args, k, v)
			}
		}
	}
}

// A sweep stores its steps as they finish, so a sweep killed between steps
// keeps them; its records' steps follow the stored (load) order throughout,
// an automatic sweep's refinement between earlier steps included.
func TestSweepCheckpoints(t *testing.T) {
	db := filepath.Join(t.TempDir(), "knee.db")
	env := &Env{Stdout: io.Discard, Stderr: io.Discard, Getenv: func(string) string { return "" }}
	ss, err := beginSweepStore(env, &storeFlags{db: db}, runMeta{Kind: "sweep", Target: "embedded", Load: "sweep (running)"})
	if err != nil {
		t.Fatal(err)
	}
	var steps []sweep.Step
	for k, load := range []float64{1, 4, 2} { // 2 refines between 1 and 4
		l := sweep.Load{Kind: sweep.Concurrency, Value: load}
		ss.Step(l)
		var recs []record.Request
		for i := 0; i <= k; i++ {
			r := record.Request{ID: int64(10*k + i), Sent: time.Duration(i) * time.Millisecond, FirstToken: time.Duration(i+5) * time.Millisecond,
				Done: time.Duration(i+9) * time.Millisecond, TokenTimes: []time.Duration{time.Duration(i+5) * time.Millisecond, time.Duration(i+9) * time.Millisecond},
				OutputTokens: 2, InputTokens: 10, MaxTokens: int(load)} // MaxTokens marks the step
			recs = append(recs, r)
			ss.Add(&r)
		}
		steps = append(steps, sweep.Step{Load: l, Summary: stats.Summarize(recs, stats.Options{}), Full: true, SLOMet: true})
		ss.Checkpoint(steps, sweep.Options{})
	}
	st, err := store.OpenReadOnly(db)
	if err != nil {
		t.Fatal(err)
	}
	res, err := st.SweepResult(1)
	if err != nil || res == nil || len(res.Steps) != 3 || res.Steps[1].Load.Value != 2 {
		t.Fatalf("checkpointed sweep: %+v %v", res, err)
	}
	check := func(when string) {
		err := st.StepRecords(1, func(step int, r *record.Request) error {
			if want := map[int]int{1: 0, 2: 1, 4: 2}[r.MaxTokens]; step != want {
				t.Errorf("%s: a record of load %d is tagged step %d, want %d", when, r.MaxTokens, step, want)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	check("before the end")
	if info, _ := st.Run(1); info.Summary == nil {
		t.Error("no summary stored while the sweep runs")
	}
	st.Close()
	res2, _ := sweep.Analyze(steps, sweep.Options{})
	if _, err := ss.Finish(runMeta{Kind: "sweep", Load: "concurrency sweep over 3 steps"}, res2, "complete"); err != nil {
		t.Fatal(err)
	}
	st, _ = store.OpenReadOnly(db)
	defer st.Close()
	check("after the end")
}
