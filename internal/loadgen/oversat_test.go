package loadgen

import (
	"strings"
	"testing"
	"time"
)

func TestOversaturated(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		inFlight []int64
		ttft     []time.Duration
		want     string
	}{
		{"growing queue, rising TTFT", []int64{5, 10, 20, 30, 45}, ms(50, 80, 200, 400, 900), "grew from 5 to 45"},
		{"growing queue, nothing finishes", []int64{5, 20, 40, 60, 80}, ms(50, 0, 0, 0, 0), "none finished"},
		{"steady state", []int64{30, 31, 30, 32, 31}, ms(100, 110, 100, 105, 100), ""},
		{"ramping but TTFT flat", []int64{5, 10, 20, 30, 45}, ms(50, 50, 50, 50, 50), ""},
		{"growth too small to call unbounded", []int64{1, 2, 4, 6, 9}, ms(5, 6, 7, 8, 9), ""},
		{"one dip breaks the trend", []int64{5, 10, 20, 18, 45}, ms(50, 80, 200, 400, 900), ""},
		{"too few windows", []int64{10, 20, 40}, ms(1, 2, 3), ""},
	} {
		got := Oversaturated(tc.inFlight, tc.ttft)
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
