package report

import (
	"bytes"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/stats"
)

func htmlRecords(n int) []record.Request {
	out := make([]record.Request, n)
	for i := range out {
		sent := time.Duration(i) * 50 * time.Millisecond
		r := record.Request{ID: int64(i), Scheduled: sent - time.Millisecond, Sent: sent, InputTokens: 64, OutputTokens: 4,
			ServerPhases: &record.Phases{Queue: 5 * time.Millisecond, Prefill: 20 * time.Millisecond, Decode: 30 * time.Millisecond}}
		first := sent + time.Duration(30+i%7)*time.Millisecond
		r.FirstToken = first
		for k := range 4 {
			r.TokenTimes = append(r.TokenTimes, first+time.Duration(k*10)*time.Millisecond)
		}
		r.Done = r.TokenTimes[3]
		r.StreamEnd = r.Done
		if i%9 == 0 {
			r = record.Request{ID: int64(i), Scheduled: sent, Sent: sent, StreamEnd: sent + 5*time.Millisecond, Error: record.ErrRejected}
		}
		out[i] = r
	}
	return out
}

// chartData maps each chart's name to the number of drawn data elements.
func chartData(t *testing.T, page string) map[string]int {
	t.Helper()
	out := map[string]int{}
	figs := regexp.MustCompile(`(?s)<figure class="chart" data-chart="([^"]+)">(.*?)</figure>`).FindAllStringSubmatch(page, -1)
	for _, f := range figs {
		out[f[1]] = strings.Count(f[2], `class="data`)
	}
	return out
}

func TestHTMLWithRecords(t *testing.T) {
	recs := htmlRecords(200)
	run := &Run{ID: "3", Kind: "bench", Target: `http://h/<script>alert(1)</script>`, Summary: stats.Summarize(recs, stats.Options{})}
	var buf bytes.Buffer
	if err := HTML(&buf, run, HTMLData{Records: recs}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	charts := chartData(t, page)
	for _, name := range []string{"ttft-cdf", "itl-cdf", "e2e-cdf", "inflight-series", "tps-series", "ttft-series", "waterfall"} {
		if charts[name] == 0 {
			t.Errorf("chart %s: %d drawn elements", name, charts[name])
		}
	}
	if _, ok := charts["sweep-throughput"]; ok {
		t.Error("sweep chart without a sweep")
	}
	if strings.Contains(page, "<script") {
		t.Error("a <script> in the page (unescaped input, or a script where none should be)")
	}
	if m := regexp.MustCompile(`(?i)(src|href)\s*=\s*"https?:`).FindString(page); m != "" {
		t.Errorf("the page loads from the network: %s", m)
	}
	// Waterfall: server phases coloured, failures red; 60 rows at most.
	if !strings.Contains(page, "server queue") || !strings.Contains(page, colorRed) {
		t.Error("waterfall lacks server-phase or failure segments")
	}
	if rows := strings.Count(page, `text-anchor="end">#`); rows != waterfallRows {
		t.Errorf("waterfall has %d rows, want %d", rows, waterfallRows)
	}
	for _, def := range []string{"<dt>TTFT</dt>", "<dt>ITL</dt>", "<dt>TPOT</dt>"} {
		if !strings.Contains(page, def) {
			t.Errorf("definition %s missing", def)
		}
	}
}

// A summary-only run (an imported vLLM result) still draws its
// distributions from the stored percentiles, skipping missing ones.
func TestHTMLSummaryOnly(t *testing.T) {
	s := stats.Summary{Requests: 10, Completed: 10,
		TTFT: stats.Dist{Count: 10, Mean: 50, P50: 48, P90: math.NaN(), P95: math.NaN(), P99: 120, P999: math.NaN(), Max: math.NaN()},
		ITL:  stats.Dist{Count: 10, P50: 14, P99: 22, P90: math.NaN(), P95: math.NaN(), P999: math.NaN(), Max: math.Inf(1)}}
	var buf bytes.Buffer
	if err := HTML(&buf, &Run{Kind: "import", Summary: s}, HTMLData{}); err != nil {
		t.Fatal(err)
	}
	charts := chartData(t, buf.String())
	if charts["ttft-cdf"] == 0 || charts["itl-cdf"] == 0 {
		t.Errorf("summary-only distributions not drawn: %v", charts)
	}
	if _, ok := charts["waterfall"]; ok {
		t.Error("waterfall without records")
	}
	if strings.Contains(buf.String(), "NaN") {
		t.Error("NaN printed into the page")
	}
}

func TestNiceTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		want   []float64
	}{{0, 1, []float64{0, 0.2, 0.4, 0.6, 0.8, 1}}, {0, 97, []float64{0, 20, 40, 60, 80, 100}}, {3, 3, nil}} {
		got := niceTicks(c.lo, c.hi, 5)
		if c.want != nil && (len(got) != len(c.want) || math.Abs(got[len(got)-1]-c.want[len(c.want)-1]) > 1e-9) {
			t.Errorf("niceTicks(%v, %v) = %v, want %v", c.lo, c.hi, got, c.want)
		}
		if len(got) < 2 {
			t.Errorf("niceTicks(%v, %v) = %v: too few", c.lo, c.hi, got)
		}
	}
}

// The per-second charts cover the whole run; a warm-up excluded from the
// statistics is marked off by the measured window's bounds.
func TestHTMLMarksMeasuredWindow(t *testing.T) {
	recs := htmlRecords(200)
	for i := range recs[:40] {
		recs[i].Warmup = true
	}
	sum := stats.Summarize(recs, stats.Options{Series: true})
	var buf bytes.Buffer
	if err := HTML(&buf, &Run{ID: "4", Kind: "bench", Summary: sum}, HTMLData{Records: recs}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, chart := range []string{"inflight-series", "tps-series", "ttft-series"} {
		i := strings.Index(page, `data-chart="`+chart+`"`)
		j := strings.Index(page[i:], "</figure>")
		if i < 0 || j < 0 || !strings.Contains(page[i:i+j], "measured window starts") || !strings.Contains(page[i:i+j], "measured window ends") {
			t.Errorf("%s does not mark the measured window", chart)
		}
	}
	if !strings.Contains(page, "the dashed lines mark the measured window") {
		t.Error("no note on the measured window")
	}
	// Nothing excluded: no marks.
	buf.Reset()
	HTML(&buf, &Run{ID: "5", Kind: "bench", Summary: stats.Summarize(htmlRecords(50), stats.Options{Series: true})}, HTMLData{Records: htmlRecords(50)})
	if strings.Contains(buf.String(), "measured window starts") {
		t.Error("window marked with nothing excluded")
	}
}
