package web

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/store"
	"github.com/knee-dev/knee/internal/store/shardtest"
)

// The live view numbers a sharded sweep's requests within their step, as
// knee records does (runs.TestExportShardedSweepNumbersWithinStep), and
// names the step: the stored key, step × 2^44 + number, is no request's
// number. Two shards store steps 0 and 1 of four requests each, step 1's
// ten times slower. The summary and series are the latest step's, named:
// each step counts its send times from its own start, so the two together
// would overlay (8 requests, a TTFT p50 between the steps').
func TestLiveShardedSweepNumbersWithinStep(t *testing.T) {
	sw := shardtest.Start(t, "live", 2)
	st, writers, joins := sw.Store, sw.Writers, sw.Joins
	runID := joins[0].RunID
	for step := range 2 {
		for _, w := range writers {
			w.SetStep(step)
		}
		for id := range int64(4) {
			at := time.Duration(id+1) * time.Millisecond * time.Duration(1+9*step)
			writers[id%2].Add(&record.Request{ID: store.SweepRecordID(step, id), Scheduled: at, Sent: at, FirstToken: 2 * at, Done: 3 * at, StreamEnd: 3 * at, OutputTokens: 4, InputTokens: 8})
		}
		for _, w := range writers {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	s, err := New(Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	_, ts := newTestServerWith(t, s)
	res, err := ts.Client().Get(ts.URL + "/api/runs/" + itoa(runID) + "/live")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var u liveUpdate
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "data: ") {
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &u); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	seen := map[[2]int64]int{}
	for _, p := range u.New {
		if p.Step == nil {
			t.Errorf("request %d: no step", p.ID)
			continue
		}
		seen[[2]int64{int64(*p.Step), p.ID}]++
	}
	for step := range int64(2) {
		for id := range int64(4) {
			if seen[[2]int64{step, id}] != 1 {
				t.Errorf("step %d request %d listed %d times, want once; the live view's requests: %+v", step, id, seen[[2]int64{step, id}], u.New)
			}
		}
	}
	if len(u.New) != 8 {
		t.Errorf("%d requests in the live view, want 8", len(u.New))
	}
	if u.Step == nil || *u.Step != 1 {
		t.Errorf("the live summary names step %v, want the latest, 1", u.Step)
	}
	if u.Summary.Requests != 4 || u.Summary.TTFT.Count != 4 || u.Summary.TTFT.P50 < 10 {
		t.Errorf("the live summary holds %d requests, TTFT p50 %.1f ms; want step 1's 4, its TTFTs 10 to 40 ms", u.Summary.Requests, u.Summary.TTFT.P50)
	}
	// The page shows the step beside the number.
	js, err := ts.Client().Get(ts.URL + "/static/lifecycle.js")
	if err != nil {
		t.Fatal(err)
	}
	defer js.Body.Close()
	b, _ := io.ReadAll(js.Body)
	if !strings.Contains(string(b), "`request ${r.id} of step ${r.step}`") {
		t.Errorf("lifecycle.js served does not name a sweep request's step")
	}
	rjs, err := ts.Client().Get(ts.URL + "/static/runs.js")
	if err != nil {
		t.Fatal(err)
	}
	defer rjs.Body.Close()
	if b, _ := io.ReadAll(rjs.Body); !strings.Contains(string(b), "step ${u.step}, the latest") {
		t.Errorf("runs.js served does not name the step the live figures cover")
	}
}
