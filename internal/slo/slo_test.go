package slo

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/stats"
)

func TestParse(t *testing.T) {
	cases := []struct {
		expr             string
		kind             Kind
		stat, metric, op string
		threshold        float64
		canonical        string
	}{
		{"p95(ttft)<2s", Latency, "p95", "ttft", "<", 2000, "p95(ttft)<2s"},
		{"p99(itl)<100ms", Latency, "p99", "itl", "<", 100, "p99(itl)<100ms"},
		{"mean(tpot)<40ms", Latency, "mean", "tpot", "<", 40, "mean(tpot)<40ms"},
		{"p95(ttft_sched)<3s", Latency, "p95", "ttft_sched", "<", 3000, "p95(ttft_sched)<3s"},
		{" P99.9 ( E2E ) <= 1.5 m ", Latency, "p999", "e2e", "<=", 90000, "p999(e2e)<=1.5m"},
		{"max(lag)<500us", Latency, "max", "lag", "<", 0.5, "max(lag)<500us"},
		{"p50(itl)<250µs", Latency, "p50", "itl", "<", 0.25, "p50(itl)<250us"},
		{"p90(ttft)<1000000ns", Latency, "p90", "ttft", "<", 1, "p90(ttft)<1000000ns"},
		{"error_rate<1%", Rate, "", "error_rate", "<", 0.01, "error_rate<1%"},
		{"error_rate<=0.05", Rate, "", "error_rate", "<=", 0.05, "error_rate<=0.05"},
		{"rejection_rate<0.5%", Rate, "", "rejection_rate", "<", 0.005, "rejection_rate<0.5%"},
		{"goodput>5", Throughput, "", "goodput", ">", 5, "goodput>5"},
		{"request_throughput >= 10 rps", Throughput, "", "request_throughput", ">=", 10, "request_throughput>=10rps"},
		{"output_throughput>1000tok/s", Throughput, "", "output_throughput", ">", 1000, "output_throughput>1000tok/s"},
	}
	for _, c := range cases {
		o, err := Parse(c.expr)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.expr, err)
			continue
		}
		if o.Kind != c.kind || o.Stat != c.stat || o.Metric != c.metric || o.Op != c.op || math.Abs(o.Threshold-c.threshold) > 1e-9 {
			t.Errorf("Parse(%q) = %+v", c.expr, o)
		}
		if o.String() != c.canonical {
			t.Errorf("Parse(%q).String() = %q, want %q", c.expr, o.String(), c.canonical)
		}
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct{ expr, want string }{
		{"p95(ttfx)<2s", `p95(ttfx)<2s: unknown metric "ttfx" at column 5; want one of ttft, ttft_sched, itl, tpot, e2e, lag`},
		{"p97(ttft)<2s", `unknown statistic "p97" at column 1; want one of mean, p50, p90, p95, p99, p999, max`},
		{"p95(ttft)<2", `missing unit after 2 at column 12; want a unit: ns, us, µs, ms, s or m`},
		{"p95(ttft)<2h", `unknown unit "h" at column 12`},
		{"p95(ttft)>2s", `">" is a lower bound at column 10; want < or <=`},
		{"goodput<5", `"<" is an upper bound at column 8; want > or >=`},
		{"p95(ttft)=2s", `found '=' at column 10; want a comparison: <, <=, > or >=`},
		{"p95(ttft<2s", `found '<' at column 9; want ")"`},
		{"p95(ttft)<s", `found 's' at column 11; want a non-negative number`},
		{"p95(ttft)<-1s", `found '-' at column 11`},
		{"ttft<2s", `latency metric "ttft" without a statistic at column 1; want a statistic around the metric, as in p95(ttft)`},
		{"p95<2s", `found '<' after "p95" at column 4`},
		{"error_rate<5", `5 is more than 1 at column 12; want a fraction from 0 to 1, or a percentage such as 5%`},
		{"error_rate<101%", `101% is more than 100%`},
		{"error_rate<1ms", `unknown unit "ms"`},
		{"latency<2s", `unknown metric "latency" at column 1; want a latency objective STAT(METRIC)<N UNIT such as p95(ttft)<2s (STAT: mean, p50`},
		{"latency<2s", `an error objective error_rate<1% or rejection_rate<1%, or a throughput objective goodput>5rps, request_throughput>5rps or output_throughput>500tok/s`},
		{"p95(error_rate)<1%", `error_rate is a property of the run, not a latency at column 5; want it without a statistic, as in error_rate<1%`},
		{"p95(goodput)>1", `want it without a statistic, as in goodput>5rps`},
		{"p95(foo)<1s", `or, without a statistic: error_rate, rejection_rate, goodput, request_throughput, output_throughput`},
		{"", `empty objective`},
		{"   ", `empty objective`},
		{"(ttft)<2s", `missing statistic before "(" at column 1`},
		{"p95()<2s", `found ')' instead of a metric at column 5`},
		{"p95(ttft)<2s extra", `unknown unit "s extra"`},
		{"output_throughput>5rps", `unknown unit "rps" at column 20; want "tps", "tok/s" or nothing`},
		{"p95(ttft)<μ", `found 'μ' at column 11`},
	}
	for _, c := range cases {
		_, err := Parse(c.expr)
		if err == nil {
			t.Errorf("Parse(%q) accepted it", c.expr)
			continue
		}
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("Parse(%q) error %T is not a *ParseError", c.expr, err)
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) = %q, want it to contain %q", c.expr, err, c.want)
		}
	}
}

func TestParseAll(t *testing.T) {
	s, err := ParseAll([]string{"p95(ttft)<2s, p99(itl)<100ms", "error_rate<1%"})
	if err != nil || len(s) != 3 || s[1].Metric != "itl" || s[2].Metric != "error_rate" {
		t.Fatalf("ParseAll = %v, %v", s, err)
	}
	if s, err := ParseAll(nil); err != nil || len(s) != 0 {
		t.Errorf("ParseAll(nil) = %v, %v", s, err)
	}
	if _, err := ParseAll([]string{"p95(ttft)<2s", "p95(x)<1s"}); err == nil || !strings.HasPrefix(err.Error(), "p95(x)<1s: ") {
		t.Errorf("error should name the bad expression: %v", err)
	}
}

func mustSet(t *testing.T, exprs ...string) Set {
	t.Helper()
	s, err := ParseAll(exprs)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestEvaluate(t *testing.T) {
	good := 4.0
	sum := stats.Summary{
		Requests: 100, Completed: 98, ErrorRate: 0.02, RejectionRate: 0.01, DurationS: 10,
		RequestThroughputRPS: 9.8, OutputTokenThroughputTPS: 2500, GoodputRPS: &good,
		TTFT: stats.Dist{Count: 98, P95: 1999, P99: 2500, Mean: 800},
		ITL:  stats.Dist{Count: 1000, P99: 100},
	}
	s := mustSet(t, "p95(ttft)<2s", "p99(ttft)<2s", "p99(itl)<100ms", "p99(itl)<=100ms", "error_rate<1%",
		"rejection_rate<=1%", "goodput>=4", "request_throughput>10", "output_throughput>2000", "p95(tpot)<40ms")
	want := []struct {
		value     float64
		met, none bool
		str       string
	}{
		{1999, true, false, "p95(ttft)<2s: 1.999s (met)"},
		{2500, false, false, "p99(ttft)<2s: 2.5s (not met)"},
		{100, false, false, "p99(itl)<100ms: 100ms (not met)"},
		{100, true, false, "p99(itl)<=100ms: 100ms (met)"},
		{0.02, false, false, "error_rate<1%: 2% (not met)"},
		{0.01, true, false, "rejection_rate<=1%: 1% (met)"},
		{4, true, false, "goodput>=4: 4 (met)"},
		{9.8, false, false, "request_throughput>10: 9.8 (not met)"},
		{2500, true, false, "output_throughput>2000: 2500 (met)"},
		{0, false, true, "p95(tpot)<40ms: no data (not met)"},
	}
	// Latencies print in human units, whatever the objective's unit.
	for _, c := range []struct {
		expr string
		ms   float64
		want string
	}{{"p95(ttft)<2s", 69.58, "69.58ms"}, {"p95(ttft)<2s", 7_410_966, "2h03m"}, {"mean(itl)<1s", 0.35, "0.35ms"}} {
		if got := mustSet(t, c.expr)[0].Format(c.ms); got != c.want {
			t.Errorf("%s: Format(%v) = %q, want %q", c.expr, c.ms, got, c.want)
		}
	}
	got := s.Evaluate(sum)
	for i, w := range want {
		r := got[i]
		if math.Abs(r.Value-w.value) > 1e-9 || r.Met != w.met || r.NoData != w.none || r.String() != w.str {
			t.Errorf("%s: got %+v %q, want value %v met %v nodata %v %q", s[i], r, r.String(), w.value, w.met, w.none, w.str)
		}
	}
	// goodput with no Good function in the summary: no data, not met.
	if r := mustSet(t, "goodput>1").Evaluate(stats.Summary{DurationS: 1}); !r[0].NoData || r[0].Met {
		t.Errorf("goodput without data: %+v", r[0])
	}
	if Set(nil).Evaluate(sum) != nil {
		t.Error("empty set should evaluate to nil")
	}
}

func ms(v float64) time.Duration { return time.Duration(v * 1e6) }

func TestGood(t *testing.T) {
	// Sent at 0 (scheduled −500 ms: lag 500), chunks at 1000, 1050, 1100,
	// 1400: TTFT 1000 ms, TTFT(sched) 1500, gaps 50/50/300, TPOT 400/3,
	// E2E 1400.
	r := record.Request{Scheduled: ms(-500), Sent: 0, FirstToken: ms(1000), Done: ms(1400), OutputTokens: 4,
		TokenTimes: []time.Duration{ms(1000), ms(1050), ms(1100), ms(1400)}}
	cases := []struct {
		expr string
		good bool
	}{
		{"p95(ttft)<2s", true},
		{"p95(ttft)<1s", false}, // 1000 is not < 1000
		{"p95(ttft)<=1s", true},
		{"p95(ttft_sched)<1.4s", false},
		{"mean(tpot)<134ms", true}, // 133.3
		{"mean(tpot)<133ms", false},
		{"p99(e2e)<1401ms", true},
		{"max(itl)<300ms", false}, // the request's longest gap
		{"p50(itl)<51ms", true},   // its median gap is 50
		{"mean(itl)<134ms", true}, // 400/3
		{"p90(itl)<250ms", false}, // 50 + 0.8*(300-50) = 250
		{"max(lag)<400ms", false},
		{"error_rate<1%", true}, // not per request
		{"goodput>100", true},   // not per request
		{"p95(ttft)<2s,p99(itl)<200ms", false},
	}
	for _, c := range cases {
		if got := mustSet(t, c.expr).Good(&r); got != c.good {
			t.Errorf("%s on the request: good = %v, want %v", c.expr, got, c.good)
		}
	}
	bad := r
	bad.Error = record.ErrHTTP5xx
	if mustSet(t, "error_rate<1%").Good(&bad) {
		t.Error("a failed request must never be good")
	}
	one := record.Request{Sent: 0, FirstToken: ms(100), Done: ms(100), OutputTokens: 1, TokenTimes: []time.Duration{ms(100)}}
	if !mustSet(t, "p99(itl)<1ms", "mean(tpot)<1ms").Good(&one) {
		t.Error("a one-token request has no ITL or TPOT: those objectives do not constrain it")
	}
	empty := record.Request{Sent: 0, StreamEnd: ms(10)}
	if mustSet(t).Good(&empty) {
		t.Error("a request without content is not good")
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"p95(ttft)<2s", "p99(itl)<100ms", "mean(tpot)<40ms", "error_rate<1%",
		"p95(ttft_sched)<3s", "p99.9(e2e)<=1.5m", "goodput>=4rps", "output_throughput>10tok/s",
		"max(lag)<250µs", "rejection_rate<0.5", "p95(ttfx)<2s", "p95(ttft)<", "((", "p95(ttft)<1e9s", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		o, err := Parse(expr)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Msg == "" {
				t.Fatalf("Parse(%q): unhelpful error %v", expr, err)
			}
			return
		}
		if math.IsNaN(o.Threshold) || math.IsInf(o.Threshold, 0) || o.Threshold < 0 {
			t.Fatalf("Parse(%q): threshold %v", expr, o.Threshold)
		}
		back, err := Parse(o.String())
		if err != nil {
			t.Fatalf("Parse(%q).String() = %q does not parse: %v", expr, o.String(), err)
		}
		if back != o {
			t.Fatalf("round trip of %q: %+v != %+v", expr, back, o)
		}
	})
}
