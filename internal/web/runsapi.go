//go:build !js

package web

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/runs"
	"github.com/knee-dev/knee/internal/sse"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/store"
)

// livePoll is how often the live view reads the database. A bench in
// another process flushes its records every store.FlushEvery, so polling at
// that pace shows each batch as it lands.
const livePoll = store.FlushEvery

// liveRecordsPerPoll is how many stored records the live view re-reads per
// poll interval before it slows its polling down.
const liveRecordsPerPoll = 20000

// runRow is one stored run on the runs page: knee runs' row, with the
// page's columns.
type runRow struct {
	runs.Row
	Requests  int      `json:"requests"`
	RPS       *float64 `json:"throughput_rps,omitempty"`
	TTFTP95MS *float64 `json:"ttft_p95_ms,omitempty"`
}

func rowOf(r *store.RunInfo) runRow {
	row := runRow{Row: runs.RowOf(r), Requests: r.Records}
	if s := r.Summary; s != nil {
		row.Requests = s.Requests
		rps := s.RequestThroughputRPS
		row.RPS = &rps
		if s.TTFT.Count > 0 && finiteOK(s.TTFT.P95) {
			v := s.TTFT.P95
			row.TTFTP95MS = &v
		}
	}
	return row
}

func (s *Server) needStore(w http.ResponseWriter) bool {
	if s.cfg.Store == nil {
		apiError(w, http.StatusServiceUnavailable, "knee ui was started without a run database")
		return false
	}
	return true
}

// apiRuns lists runs with the filters of knee runs: kind, label, target,
// model (substrings), since (RFC 3339; the page turns "last 24h" into a
// time) and limit.
func (s *Server) apiRuns(w http.ResponseWriter, r *http.Request) {
	if !s.needStore(w) {
		return
	}
	q := r.URL.Query()
	f := store.Filter{Kind: q.Get("kind"), Label: q.Get("label"), Target: q.Get("target"), Model: q.Get("model"), Limit: 100}
	switch f.Kind {
	case "", store.KindBench, store.KindSweep, store.KindSim, store.KindLab, store.KindImport:
	default:
		reply(w, nil, badf("kind %q: want bench, sweep, sim, lab or import", f.Kind))
		return
	}
	if v := q.Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			reply(w, nil, badf("since %q: want an RFC 3339 time such as 2026-11-01T00:00:00Z", v))
			return
		}
		f.Since = t
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 10000 {
			reply(w, nil, badf("limit %q: want 0 to 10000 (0: all)", v))
			return
		}
		f.Limit = n
	}
	runs, err := s.cfg.Store.ListRuns(f)
	rows := make([]runRow, 0, len(runs))
	for i := range runs {
		rows = append(rows, rowOf(&runs[i]))
	}
	reply(w, rows, err)
}

func runID(r *http.Request) (int64, error) {
	v := r.PathValue("id")
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id < 1 {
		return 0, badf("run id %q: want a positive number from the runs list", v)
	}
	return id, nil
}

// storedRun is the id of the stored run the request's path names; when the
// database is missing, the id is malformed or no such run exists it has
// answered and returns false.
func (s *Server) storedRun(w http.ResponseWriter, r *http.Request) (int64, bool) {
	if !s.needStore(w) {
		return 0, false
	}
	id, err := runID(r)
	if err == nil {
		_, err = s.cfg.Store.Run(id)
	}
	if err != nil {
		reply(w, nil, err)
		return 0, false
	}
	return id, true
}

func (s *Server) apiRun(w http.ResponseWriter, r *http.Request) {
	id, ok := s.storedRun(w, r)
	if !ok {
		return
	}
	info, err := s.cfg.Store.Run(id)
	reply(w, rowOf(info), err)
}

// runGPU is a stored run's GPU panel: its energy figures and what its
// GPUs' dcgm-exporters showed (each nil when the run kept none).
type runGPU struct {
	Energy json.RawMessage `json:"energy"`
	GPU    json.RawMessage `json:"gpu"`
}

// apiRunGPU answers the GPU panel of a run's report page: the energy and
// GPU view the run kept with its configuration (runs.EnergyKey, GPUKey),
// as stored.
func (s *Server) apiRunGPU(w http.ResponseWriter, r *http.Request) {
	id, ok := s.storedRun(w, r)
	if !ok {
		return
	}
	info, err := s.cfg.Store.Run(id)
	if err != nil {
		reply(w, nil, err)
		return
	}
	out := runGPU{Energy: json.RawMessage("null"), GPU: json.RawMessage("null")}
	for _, kv := range runs.ConfigPairs(info.Config) {
		// An unreadable value leaves its part out, as the report does.
		switch v := json.RawMessage(kv[1]); {
		case kv[0] == runs.EnergyKey && json.Valid(v):
			out.Energy = v
		case kv[0] == runs.GPUKey && json.Valid(v):
			out.GPU = v
		}
	}
	reply(w, out, nil)
}

// apiRunReport serves the run's HTML report, shown in a sandboxed frame:
// its own scripts run, but it has no origin, so it cannot call this API.
func (s *Server) apiRunReport(w http.ResponseWriter, r *http.Request) {
	id, ok := s.storedRun(w, r)
	if !ok {
		return
	}
	if s.cfg.ReportHTML == nil {
		apiError(w, http.StatusNotImplemented, "reports are not available")
		return
	}
	b, err := s.cfg.ReportHTML(id)
	if err != nil {
		reply(w, nil, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "sandbox allow-scripts; default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'self'")
	w.Write(b)
}

func (s *Server) apiCompare(w http.ResponseWriter, r *http.Request) {
	if !s.needStore(w) {
		return
	}
	var ids [2]int64
	for i, k := range []string{"a", "b"} {
		v := r.URL.Query().Get(k)
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id < 1 {
			reply(w, nil, badf("%s=%q: want two run ids, ?a=ID&b=ID", k, v))
			return
		}
		ids[i] = id
	}
	for _, id := range ids {
		if _, err := s.cfg.Store.Run(id); err != nil {
			reply(w, nil, err)
			return
		}
	}
	if s.cfg.Compare == nil {
		apiError(w, http.StatusNotImplemented, "compare is not available")
		return
	}
	res, err := s.cfg.Compare(ids[0], ids[1])
	reply(w, res, err)
}

// liveUpdate is one event of the live view: the run's state, a summary of
// every record stored so far (with its per-second series; a sweep's of its
// latest step's, which Step names) and the records that arrived since the
// last event.
type liveUpdate struct {
	Run     runRow        `json:"run"`
	Summary stats.Summary `json:"summary"`
	// Step is the sweep step Summary and Items cover, the latest stored:
	// each step counts its send times from its own start, so steps
	// summarised together would overlay. Absent outside sweeps.
	Step *int         `json:"step,omitempty"`
	New  []phaseTimes `json:"new"`
	// Items is the per-second series of answers of items (embeddings,
	// rerank), which the summary's TTFT series cannot show.
	Items []itemSecond `json:"items_series,omitempty"`
	// Guided is a guided sweep's steps as checkpointed so far, with the
	// refitted curve the page draws as a band (absent otherwise).
	Guided *guidedView `json:"guided,omitempty"`
}

// apiRunLive streams a run as it is stored, by any process: every livePoll
// it re-reads the run and, when records were added, sends them. It ends
// when the run has finished (one last event) or the page goes away.
func (s *Server) apiRunLive(w http.ResponseWriter, r *http.Request) {
	id, ok := s.storedRun(w, r)
	if !ok {
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	sw := sse.NewWriter(w)
	sent := -1
	tick := time.NewTicker(livePoll)
	defer tick.Stop()
	for {
		info, err := s.cfg.Store.Run(id)
		if err != nil {
			sw.Event("error", []byte(strconv.Quote(err.Error())))
			sw.Flush()
			return
		}
		if info.Records != sent || info.Finished() {
			var recs []record.Request
			var steps []int
			if info.Records > 0 {
				if recs, steps, err = stepRecords(s.cfg.Store, id); err != nil {
					sw.Event("error", []byte(strconv.Quote(err.Error())))
					sw.Flush()
					return
				}
			}
			cur, step := latestStep(recs, steps)
			u := liveUpdate{Run: rowOf(info), Summary: stats.Summarize(cur, stats.Options{Series: true}), Items: itemSeries(cur), Step: step}
			from := max(sent, 0, len(recs)-maxLifecycle)
			u.New = lifecycleOf(recs[from:], steps[from:])
			if info.Kind == store.KindSweep {
				// Unreadable: the band waits for the next poll; the
				// records stream on.
				u.Guided, _ = guidedOf(s.cfg.Store, id)
			}
			sent = len(recs)
			b, _ := json.Marshal(u)
			if sw.Data(b) != nil {
				return
			}
			sw.Flush()
			if info.Finished() {
				sw.Event("end", []byte(`"`+info.Status+`"`))
				sw.Flush()
				return
			}
		}
		// Re-reading a big run costs in proportion to its size: poll it
		// less often, so a watched million-request run does not keep a
		// core busy.
		for range 1 + sent/liveRecordsPerPoll {
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
			}
		}
	}
}

// latestStep is the records of the latest sweep step among recs and that
// step, or recs and nil outside sweeps (every step -1).
func latestStep(recs []record.Request, steps []int) ([]record.Request, *int) {
	last := -1
	for _, s := range steps {
		last = max(last, s)
	}
	if last < 0 {
		return recs, nil
	}
	var cur []record.Request
	for i, s := range steps {
		if s == last {
			cur = append(cur, recs[i])
		}
	}
	return cur, &last
}

func (s *Server) apiBench(w http.ResponseWriter, r *http.Request) {
	if s.cfg.StartBench == nil || s.cfg.BenchURL == "" {
		apiError(w, http.StatusForbidden, "no target to load: start knee ui with --url URL to offer a bench against that URL")
		return
	}
	var q struct {
		Concurrency  int    `json:"concurrency"`
		Requests     int    `json:"requests"`
		InputTokens  string `json:"input_tokens"`
		OutputTokens string `json:"output_tokens"`
	}
	if err := decodeBody(r, &q); err != nil {
		reply(w, nil, err)
		return
	}
	if q.Concurrency < 1 || q.Concurrency > 256 {
		reply(w, nil, badf("concurrency %d: want 1 to 256", q.Concurrency))
		return
	}
	if q.Requests < 1 || q.Requests > 10000 {
		reply(w, nil, badf("requests %d: want 1 to 10000", q.Requests))
		return
	}
	err := s.cfg.StartBench(BenchParams{Concurrency: q.Concurrency, Requests: q.Requests, InputTokens: q.InputTokens, OutputTokens: q.OutputTokens})
	reply(w, map[string]any{"started": err == nil, "url": s.cfg.BenchURL}, err)
}

// stepRecords is every record of run id with its sweep step (-1 outside
// sweeps), a sweep's numbered within its step as knee records numbers them
// (runs.StepNumbered).
func stepRecords(st *store.Store, id int64) (recs []record.Request, steps []int, err error) {
	err = st.StepRecords(id, func(step int, r *record.Request) error {
		recs, steps = append(recs, *runs.StepNumbered(step, r)), append(steps, step)
		return nil
	})
	return recs, steps, err
}

func finiteOK(v float64) bool { return !math.IsInf(v, 0) && !math.IsNaN(v) }

// runStore is the run database the runs pages read.
type runStore = *store.Store

func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }
