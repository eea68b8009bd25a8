package web

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/knee-dev/knee/internal/diagnose"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/knee-dev/knee/internal/sweep"
)

// The seed lesson's own worked examples, exactly as it states them, put
// through knee's own code: the pair of requests through diagnose (no
// baseline, as a reader with one file has), the load table through the
// sweep analysis that knee sweep --from FILE.csv runs. The pages show these
// beside knee's simulated versions.

// lessonRequest is one of the lesson's two requests, in seconds.
type lessonRequest struct {
	Name     string  `json:"name"`
	QueueS   float64 `json:"queue_s"`
	PrefillS float64 `json:"prefill_s"`
	DecodeS  float64 `json:"decode_s"`
}

var lessonPair = [2]lessonRequest{
	{Name: "A", QueueS: 2.5, PrefillS: 0.4, DecodeS: 1.1},
	{Name: "B", QueueS: 0.1, PrefillS: 0.4, DecodeS: 3.5},
}

// lessonOutputTokens is the output length the lesson's requests are given
// (it states none; 200 makes B's decode 17.6 ms a token).
const lessonOutputTokens = 200

// lessonTable is the lesson's load table: offered load, measured
// throughput (req/s) and p95 TTFT (s). The lesson calls its first column
// "load" without a unit; read as users in flight its rows break Little's
// law (45 users at 24.3 req/s would wait 1.9 s each, not a p95 TTFT of
// 12.4 s), read as offered requests per second they fit (45 offered, 24.3
// served: the rest queue and the wait grows). So knee reads it as an
// offered rate, and the page says why (lessonLoadNote).
var lessonTable = []struct{ Load, RPS, TTFTP95S float64 }{
	{5, 5.0, 0.7}, {15, 14.8, 0.9}, {25, 23.0, 1.6}, {35, 24.1, 5.8}, {45, 24.3, 12.4},
}

// lessonLoadNote says on the page why the load column is read as offered
// requests per second.
const lessonLoadNote = "The lesson calls its first column \"load\". Read as users in flight, its rows would break Little's law: 45 users served at 24.3 req/s would each wait about 1.9 s, not a p95 TTFT of 12.4 s. Read as offered requests per second they fit: past about 25 req/s the server serves no more, and the extra arrivals wait in a queue that grows. So knee reads the load as offered req/s."

// lessonSLO is the objective the lesson judges its table by.
const lessonSLO = "p95(ttft)<2s"

type lessonSide struct {
	lessonRequest
	TotalS    float64            `json:"total_s"`
	Diagnosis diagnose.Diagnosis `json:"diagnosis"`
}

type lessonRow struct {
	Load     float64 `json:"load"`
	RPS      float64 `json:"throughput_rps"`
	TTFTP95S float64 `json:"ttft_p95_s"`
	SLOMet   bool    `json:"slo_met"`
}

type lessonResult struct {
	Pair  [2]lessonSide `json:"pair"`
	Table struct {
		SLO  string      `json:"slo"`
		Rows []lessonRow `json:"rows"`
		// Knee and SLOSafe are where knee's sweep analysis puts them;
		// Highest is the row with the most throughput, and Why says why it
		// is not a healthy operating point.
		Knee    sweep.Point `json:"knee"`
		SLOSafe sweep.Point `json:"slo_safe"`
		Highest float64     `json:"highest_load"`
		Why     string      `json:"highest_why"`
		// LoadUnit names the load column; LoadNote says why it is read so.
		LoadUnit string `json:"load_unit"`
		LoadNote string `json:"load_note"`
	} `json:"table"`
}

// lessonRecords is n identical requests of r, one a second, each alone in
// flight as the lesson describes one request.
func lessonRecords(r lessonRequest, n int) []record.Request {
	sec := func(v float64) time.Duration { return time.Duration(v * float64(time.Second)) }
	out := make([]record.Request, n)
	for i := range out {
		sent := time.Duration(i) * time.Second
		q := &out[i]
		*q = record.Request{ID: int64(i), Scheduled: sent, Sent: sent, InputTokens: 512, OutputTokens: lessonOutputTokens, InFlightAtSend: 1,
			ServerPhases: &record.Phases{Queue: sec(r.QueueS), Prefill: sec(r.PrefillS), Decode: sec(r.DecodeS)}}
		q.FirstToken = sent + sec(r.QueueS+r.PrefillS)
		for k := 0; k < lessonOutputTokens; k++ {
			q.TokenTimes = append(q.TokenTimes, q.FirstToken+sec(r.DecodeS)*time.Duration(k)/time.Duration(lessonOutputTokens-1))
		}
		q.Done = q.FirstToken + sec(r.DecodeS)
		q.StreamEnd = q.Done
	}
	return out
}

func buildLesson() (*lessonResult, error) {
	var out lessonResult
	for i, r := range lessonPair {
		out.Pair[i] = lessonSide{lessonRequest: r, TotalS: r.QueueS + r.PrefillS + r.DecodeS,
			Diagnosis: diagnose.Diagnose(lessonRecords(r, 30), diagnose.Options{})}
	}
	var csv strings.Builder
	csv.WriteString("rate_rps,throughput_rps,ttft_p95_s\n")
	for _, row := range lessonTable {
		fmt.Fprintf(&csv, "%g,%g,%g\n", row.Load, row.RPS, row.TTFTP95S)
	}
	t, err := sweep.ReadCSV(strings.NewReader(csv.String()))
	if err != nil {
		return nil, fmt.Errorf("the lesson's table: %w", err)
	}
	set, err := slo.ParseAll([]string{lessonSLO})
	if err != nil {
		return nil, err
	}
	if err := sweep.JudgeTable(t, set); err != nil {
		return nil, err
	}
	res, err := sweep.Analyze(t.Steps, sweep.Options{SLOs: sweep.Objectives(set)})
	if err != nil {
		return nil, err
	}
	tab := &out.Table
	tab.SLO, tab.Knee, tab.SLOSafe = lessonSLO, res.Knee, res.SLOSafe
	tab.LoadUnit, tab.LoadNote = "offered req/s", lessonLoadNote
	best := 0
	for i, row := range lessonTable {
		met := i < len(res.Steps) && res.Steps[i].SLOMet
		tab.Rows = append(tab.Rows, lessonRow{Load: row.Load, RPS: row.RPS, TTFTP95S: row.TTFTP95S, SLOMet: met})
		if row.RPS > lessonTable[best].RPS {
			best = i
		}
	}
	h := lessonTable[best]
	tab.Highest = h.Load
	tab.Why = fmt.Sprintf("The most throughput (%.1f req/s at %g req/s offered) is not a healthy operating point: its p95 TTFT is %.1f s against the objective's 2 s.", h.RPS, h.Load, h.TTFTP95S)
	if res.SLOSafe.Found() {
		s := lessonTable[res.SLOSafe.Index]
		tab.Why += fmt.Sprintf(" It serves only %.0f%% more than the SLO-safe load of %g req/s offered (p95 TTFT %.1f s): past the knee the extra requests wait in the queue.",
			100*(h.RPS/s.RPS-1), s.Load, s.TTFTP95S)
	}
	return &out, nil
}

// apiLesson answers the lesson's pair and table (cheap: nothing simulated).
func (s *Server) apiLesson(w http.ResponseWriter, _ *http.Request) {
	l, err := buildLesson()
	reply(w, l, err)
}
