package web

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/slo"
)

// TestPressureNeverUnderAnEqualBound: a badge that says a share is under
// its bound prints the share so that it reads as under it ("99.0% (under
// 99.0%)" was on screen at 98.96%), whatever the share's digits.
func TestPressureNeverUnderAnEqualBound(t *testing.T) {
	t.Parallel()
	set, err := slo.ParseAll([]string{"p95(ttft)<1s"})
	if err != nil {
		t.Fatal(err)
	}
	under := regexp.MustCompile(`([0-9.]+)% of requests met the SLOs \(under ([0-9.]+)%\)`)
	for _, c := range []struct {
		good, bad int
		level     string
	}{
		{960, 10, Strained},     // 98.969%: one decimal would print 99.0%
		{9899, 1, Healthy},      // 99.99%
		{98999, 1001, Strained}, // 98.999%: two decimals would print 99.00%
		{8999, 1001, Saturated}, // 89.99%
		{899, 101, Saturated},   // 89.9%: one decimal suffices
		{99, 1, Healthy},        // exactly at the bound is not under it
		{9896, 104, Strained},   // 98.96%
		{899999, 100001, Saturated},
	} {
		recs := make([]record.Request, 0, c.good+c.bad)
		for i := range c.good + c.bad {
			ttft := 100 * time.Millisecond
			if i%((c.good+c.bad)/c.bad) == 0 && i/((c.good+c.bad)/c.bad) < c.bad {
				ttft = 3 * time.Second
			}
			recs = append(recs, record.Request{ID: int64(i), Sent: 0, FirstToken: ttft, Done: ttft + time.Second, OutputTokens: 10})
		}
		p := judgePressure(recs, set)
		share := float64(c.good) / float64(c.good+c.bad)
		name := fmt.Sprintf("%d of %d", c.good, c.good+c.bad)
		if p.Attainment != share {
			t.Fatalf("%s: attainment %v, want %v (the records are not as meant)", name, p.Attainment, share)
		}
		if p.Level != c.level {
			t.Errorf("%s: level %s, want %s (%s)", name, p.Level, c.level, p.Reason)
		}
		m := under.FindStringSubmatch(p.Reason)
		if p.Level == Healthy {
			if m != nil {
				t.Errorf("%s: healthy, yet the badge says under: %q", name, p.Reason)
			}
			continue
		}
		if m == nil {
			t.Fatalf("%s: %s badge without its bound: %q", name, p.Level, p.Reason)
		}
		shown, _ := strconv.ParseFloat(m[1], 64)
		bound, _ := strconv.ParseFloat(m[2], 64)
		if !(shown < bound) {
			t.Errorf("%s: the badge says %q: %v is not under %v", name, p.Reason, shown, bound)
		}
		t.Logf("%s: %s: %s", name, p.Level, p.Reason)
	}
}
