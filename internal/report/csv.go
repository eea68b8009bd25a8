package report

import (
	"encoding/csv"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/knee-dev/knee/internal/redact"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/sweep"
)

// CSV writes the run's figures as metric,stat,value rows: run metadata
// (stat "text"), counts and rates (stat "value"), each distribution's
// count/mean/p50/…/max, and each SLO's value and verdict. Units are in the
// metric names; an infinite statistic is written "inf".
//
// A sweep run is written as its steps instead, one row per load in the
// columns knee sweep --from reads (so the file can be analysed again), then
// the knee and the SLO-safe point with their reasons as # comment lines.
func CSV(w io.Writer, run *Run) error {
	if run.Sweep != nil {
		return sweepCSV(w, run.Sweep)
	}
	cw := csv.NewWriter(w)
	s := &run.Summary
	rows := [][]string{{"metric", "stat", "value"}}
	text := func(k, v string) {
		if v != "" {
			rows = append(rows, []string{k, "text", redact.Control(v)})
		}
	}
	num := func(k string, v float64) { rows = append(rows, []string{k, "value", csvNum(v)}) }
	text("run_id", run.ID)
	text("kind", run.Kind)
	text("knee_version", run.Version)
	text("target", run.Target)
	text("model", run.Model)
	text("load", run.Load)
	text("workload", run.Workload)
	text("label", run.Label)
	text("status", run.Status)
	if !run.Start.IsZero() {
		text("start", run.Start.UTC().Format("2006-01-02T15:04:05.000Z07:00"))
	}
	num("requests", float64(s.Requests))
	num("completed", float64(s.Completed))
	num("errors", float64(s.Errors))
	num("rejected", float64(s.Rejected))
	num("excluded_warmup", float64(s.Window.ExcludedWarmup))
	num("excluded_cooldown", float64(s.Window.ExcludedCooldown))
	num("duration_s", s.DurationS)
	num("request_throughput_rps", s.RequestThroughputRPS)
	num("output_token_throughput_tps", s.OutputTokenThroughputTPS)
	num("input_token_throughput_tps", s.InputTokenThroughputTPS)
	num("total_token_throughput_tps", s.TotalTokenThroughputTPS)
	if s.GoodputRPS != nil {
		num("goodput_rps", *s.GoodputRPS)
	}
	if s.OfferedRateRPS > 0 {
		num("offered_rate_rps", s.OfferedRateRPS)
	}
	num("achieved_rate_rps", s.AchievedRateRPS)
	num("peak_in_flight", float64(s.PeakInFlight))
	num("error_rate", s.ErrorRate)
	num("rejection_rate", s.RejectionRate)
	dist := func(name string, d stats.Dist) {
		rows = append(rows, []string{name, "count", strconv.Itoa(d.Count)})
		for _, st := range stats.StatNames {
			v, _ := d.Stat(st)
			rows = append(rows, []string{name, st, csvNum(v)})
		}
	}
	dist("ttft_ms", s.TTFT)
	dist("ttft_sched_ms", s.TTFTSched)
	dist("itl_ms", s.ITL)
	dist("tpot_ms", s.TPOT)
	dist("e2e_ms", s.E2E)
	dist("lag_ms", s.Lag)
	dist("adjusted_ttft_ms", s.AdjustedTTFT)
	dist("failed_e2e_ms", s.FailedE2E)
	for _, p := range []struct {
		name string
		d    *stats.Dist
	}{{"server_queue_ms", s.ServerQueue}, {"server_prefill_ms", s.ServerPrefill}, {"server_decode_ms", s.ServerDecode}} {
		if p.d != nil {
			dist(p.name, *p.d)
		}
	}
	dist("input_tokens", s.Shape.InputTokens)
	dist("output_tokens", s.Shape.OutputTokens)
	for _, k := range sortedKeys(s.ErrorKinds) {
		rows = append(rows, []string{"error_kind", k, strconv.Itoa(s.ErrorKinds[k])})
	}
	for _, r := range run.SLOs {
		name := "slo:" + r.Objective.String()
		v := csvNum(r.Value)
		if r.NoData {
			v = ""
		}
		rows = append(rows, []string{name, "value_" + sloUnit(r.Objective), v},
			[]string{name, "met", strconv.FormatBool(r.Met)})
	}
	if err := cw.WriteAll(rows); err != nil {
		return err
	}
	cw.Flush()
	return cw.Error()
}

func csvNum(v float64) string {
	if math.IsInf(v, 1) {
		return "inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func sweepCSV(w io.Writer, r *sweep.Result) error {
	if err := sweep.WriteCSV(w, r.LoadKind, r.Steps); err != nil {
		return err
	}
	for _, p := range []struct {
		name string
		pt   sweep.Point
	}{{"knee", r.Knee}, {"slo_safe", r.SLOSafe}} {
		line := "# " + p.name + ": " + pointLine(p.pt, r.LoadKind)
		if _, err := io.WriteString(w, strings.ReplaceAll(line, "\n", " ")+"\n"); err != nil {
			return err
		}
	}
	return nil
}
