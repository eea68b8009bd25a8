package report

import (
	"encoding/json"
	"testing"

	"github.com/knee-dev/knee/internal/scrape"
	"github.com/knee-dev/knee/internal/stats"
)

// histRow renders v's server-distribution table and returns the row named
// name.
func histRow(t *testing.T, v *scrape.View, s *stats.Summary, name string) []string {
	t.Helper()
	for _, sec := range serverSections(v, s) {
		if sec.table == nil {
			continue
		}
		for _, r := range sec.table.rows {
			if r[0] == name {
				return r
			}
		}
	}
	t.Fatalf("no %s row", name)
	return nil
}

// TestServerPercentilesNeverAboveWhatIsKnown: a server TTFT p99
// interpolated to 475 ms in its 250-500 ms bucket, where the client's TTFT
// maximum is 358 ms, shows as ≤358; a p99 whose rank falls in the +Inf
// bucket shows as ≥ the last bound, not as that bound.
func TestServerPercentilesNeverAboveWhatIsKnown(t *testing.T) {
	sum := &stats.Summary{Requests: 100, Completed: 100, TTFT: stats.Dist{Max: 358}, E2E: stats.Dist{Max: 3606}}
	ttft := scrape.HistStats{Count: 100, Buckets: true, LEMS: []float64{100, 250, 500, 1000},
		P50MS: 100, P90MS: 250, P95MS: 375, P99MS: 475}
	// 50 at most 100 ms, 40 in 100-250, 5 in 250-1000, 5 over 1 s.
	e2e := scrape.HistStats{Count: 100, Buckets: true, LEMS: []float64{100, 250, 1000}, CountOverLastBound: 5,
		P50MS: 100, P90MS: 250, P95MS: 1000, P99MS: 1000}
	v := &scrape.View{Window: &scrape.Window{Hists: map[scrape.Metric]scrape.HistStats{scrape.TTFT: ttft, scrape.E2E: e2e}}}

	if got := histRow(t, v, sum, "TTFT")[6]; got != "≤358" {
		t.Errorf("TTFT p99 shown as %q, want ≤358 (the client's maximum)", got)
	}
	row := histRow(t, v, sum, "E2E")
	if got := row[6]; got != "≥1000" {
		t.Errorf("E2E p99 shown as %q, want ≥1000 (its rank is in the +Inf bucket)", got)
	}
	if got := row[4]; got == "≥1000" {
		t.Errorf("E2E p90 shown as %q: its rank is within the finite buckets", got)
	}

	// A failed request may have run longer at the server than anything
	// the client measured: no client bound then, only the bucket's.
	sum.Completed = 99
	if got := histRow(t, v, sum, "TTFT")[6]; got != "475.0" {
		t.Errorf("with a failed request, TTFT p99 shown as %q, want the interpolated 475.0", got)
	}
}

// TestServerPercentilesMatchText: summary.json's "server_percentiles_ms"
// carries each server percentile as the text report shows it (≤358 is
// 358 at_most, ≥1000 is 1000 at_least), not only the raw interpolation
// (issue 31 item 5); and "error_kind_shares" the Errors table's shares.
func TestServerPercentilesMatchText(t *testing.T) {
	sum := stats.Summary{Requests: 100, Completed: 100, TTFT: stats.Dist{Max: 358}, E2E: stats.Dist{Max: 3606}}
	ttft := scrape.HistStats{Count: 100, Buckets: true, LEMS: []float64{100, 250, 500, 1000},
		P50MS: 100, P90MS: 250, P95MS: 375, P99MS: 475}
	e2e := scrape.HistStats{Count: 100, Buckets: true, LEMS: []float64{100, 250, 1000}, CountOverLastBound: 5,
		P50MS: 100, P90MS: 250, P95MS: 1000, P99MS: 1000}
	v := &scrape.View{Window: &scrape.Window{Hists: map[scrape.Metric]scrape.HistStats{scrape.TTFT: ttft, scrape.E2E: e2e}}}
	b, err := MarshalJSON(&Run{Kind: "bench", Summary: sum, Server: v})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Percentiles map[string]map[string]ServerPercentile `json:"server_percentiles_ms"`
		Shares      map[string]float64                     `json:"error_kind_shares"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	for _, m := range []scrape.Metric{scrape.TTFT, scrape.E2E} {
		row := histRow(t, v, &sum, histNames[m])
		for i, p := range []string{"p50", "p90", "p95", "p99"} {
			js, ok := got.Percentiles[string(m)][p]
			if !ok {
				t.Errorf("%s %s: not in server_percentiles_ms:\n%s", m, p, b)
				continue
			}
			shown := fnum(js.ValueMS, 1)
			switch js.Bound {
			case boundAtMost:
				shown = "≤" + fnum(js.ValueMS, 0)
			case boundAtLeast:
				shown = "≥" + fnum(js.ValueMS, 0)
			}
			if text := row[3+i]; shown != text {
				t.Errorf("%s %s: JSON %+v reads %q, the text shows %q", m, p, js, shown, text)
			}
		}
	}
	if p := got.Percentiles[string(scrape.TTFT)]["p99"]; p.ValueMS != 358 || p.Bound != boundAtMost {
		t.Errorf("TTFT p99 in JSON: %+v, want 358 at_most", p)
	}
	if p := got.Percentiles[string(scrape.E2E)]["p99"]; p.ValueMS != 1000 || p.Bound != boundAtLeast {
		t.Errorf("E2E p99 in JSON: %+v, want 1000 at_least", p)
	}
	failed := stats.Summary{Requests: 50, Completed: 48, Errors: 2, ErrorKinds: map[string]int{"http_500": 2}}
	if b, err = MarshalJSON(&Run{Kind: "bench", Summary: failed}); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &got); err != nil || got.Shares["http_500"] != 0.04 {
		t.Errorf("error_kind_shares: %v %v, want http_500 0.04 (2 of 50 measured)", err, got.Shares)
	}
}

// TestTTFTSplitInJSON: "ttft_split_parts" holds every row of the text's
// TTFT split table (the derived server front end and the shares included)
// with the same figures.
func TestTTFTSplitInJSON(t *testing.T) {
	sum := stats.Summary{Requests: 10, Completed: 10}
	v := &scrape.View{Split: &scrape.TTFTSplit{Source: scrape.SourcePerRequest, Requests: 10, ClientLagMS: 2, ClientTTFTMS: 98,
		ServerTTFTMS: 70, ServerQueueMS: 20, ServerPrefillMS: 40, HasPhases: true, OverheadMS: 28}}
	b, err := MarshalJSON(&Run{Kind: "bench", Summary: sum, Server: v})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Parts []TTFTPart `json:"ttft_split_parts"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	var rows [][]string
	for _, sec := range serverSections(v, &sum) {
		if sec.table != nil && sec.table.header[0] == "part" {
			rows = sec.table.rows[:len(sec.table.rows)-1] // the last is the total
		}
	}
	if len(rows) != 5 || len(got.Parts) != len(rows) {
		t.Fatalf("%d parts in JSON, %d rows in the text (want 5: lag, overhead, queue, prefill, front end):\n%s", len(got.Parts), len(rows), b)
	}
	for i, p := range got.Parts {
		if fnum(p.MS, 2) != rows[i][1] || pct(p.Share) != rows[i][2] {
			t.Errorf("part %d: JSON %+v, text row %v", i, p, rows[i])
		}
	}
	if fe := got.Parts[4]; fe.Part != "server_front_end" || fe.MS != 10 || fe.Share != 0.1 {
		t.Errorf("server front end: %+v, want 10 ms, 0.1 of TTFT (sched)", fe)
	}
}
