package report

import (
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
