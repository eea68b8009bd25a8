package workload

import (
	"math"
	"strings"
	"testing"
	"time"
)

// gaps draws n arrivals and returns the n-1 gaps in seconds.
func gaps(t *testing.T, a Arrivals, n int) []float64 {
	t.Helper()
	prev := a.Next()
	if prev != 0 {
		t.Fatalf("first arrival at %v, want 0", prev)
	}
	out := make([]float64, 0, n-1)
	for range n - 1 {
		next := a.Next()
		if next < prev {
			t.Fatalf("arrivals went backwards: %v after %v", next, prev)
		}
		out = append(out, (next - prev).Seconds())
		prev = next
	}
	return out
}

func meanCV(xs []float64) (mean, cv float64) {
	var s, s2 float64
	for _, x := range xs {
		s += x
		s2 += x * x
	}
	mean = s / float64(len(xs))
	return mean, math.Sqrt(s2/float64(len(xs))-mean*mean) / mean
}

func TestArrivalsRateAndCV(t *testing.T) {
	const n = 200_001
	cases := []struct {
		kind        string
		rate, burst float64
		wantCV      float64
	}{
		{"constant", 50, 1, 0},
		{"poisson", 200, 0, 1},
		{"gamma", 200, 1, 1},
		{"gamma", 100, 0.25, 2},             // CV² = 1/0.25 = 4
		{"gamma", 100, 4, 0.5},              // CV² = 1/4
		{"gamma", 1000, 0.1, math.Sqrt(10)}, // very bursty
	}
	for _, c := range cases {
		a, err := NewArrivals(c.kind, c.rate, c.burst, 7)
		if err != nil {
			t.Fatal(err)
		}
		g := gaps(t, a, n)
		mean, cv := meanCV(g)
		rate := 1 / mean
		// With 200k gaps the standard error of the mean gap is cv/sqrt(n)
		// (< 0.8% even at CV 3.2); 3% leaves a wide margin.
		if math.Abs(rate-c.rate)/c.rate > 0.03 {
			t.Errorf("%s rate %g burst %g: achieved %.3f rps", c.kind, c.rate, c.burst, rate)
		}
		if math.Abs(cv-c.wantCV) > 0.05*c.wantCV+0.001 {
			t.Errorf("%s rate %g burst %g: CV %.4f, want %.4f", c.kind, c.rate, c.burst, cv, c.wantCV)
		}
	}
}

func TestConstantArrivalsExact(t *testing.T) {
	a, _ := NewArrivals("constant", 3, 1, 0)
	want := []time.Duration{0, 333333333, 666666667, time.Second, 1333333333}
	for i, w := range want {
		if got := a.Next(); got != w {
			t.Fatalf("arrival %d at %v, want %v", i, got, w)
		}
	}
	// No drift after a million arrivals: the millionth is at exactly n/rate.
	b, _ := NewArrivals("constant", 3, 1, 0)
	var last time.Duration
	for range 3_000_001 {
		last = b.Next()
	}
	if last != 1_000_000*time.Second {
		t.Fatalf("arrival 3,000,000 at %v, want 1e6 s", last)
	}
}

func TestArrivalsDeterministicPerSeed(t *testing.T) {
	for _, kind := range []string{"poisson", "gamma"} {
		a, _ := NewArrivals(kind, 10, 0.5*btof(kind == "gamma")+btof(kind != "gamma"), 123)
		b, _ := NewArrivals(kind, 10, 0.5*btof(kind == "gamma")+btof(kind != "gamma"), 123)
		c, _ := NewArrivals(kind, 10, 0.5*btof(kind == "gamma")+btof(kind != "gamma"), 124)
		same, differ := true, false
		for range 1000 {
			x, y, z := a.Next(), b.Next(), c.Next()
			same = same && x == y
			differ = differ || x != z
		}
		if !same {
			t.Errorf("%s: same seed gave different schedules", kind)
		}
		if !differ {
			t.Errorf("%s: different seeds gave the same schedule", kind)
		}
	}
}

func btof(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func TestArrivalsErrors(t *testing.T) {
	cases := []struct {
		kind        string
		rate, burst float64
		want        string
	}{
		{"poisson", 0, 1, "positive"},
		{"poisson", -3, 1, "positive"},
		{"poisson", math.Inf(1), 1, "positive"},
		{"poisson", math.NaN(), 1, "positive"},
		{"gamma", 10, -1, "burstiness"},
		{"poisson", 10, 0.5, "applies only to --arrival gamma"},
		{"bursty", 10, 1, `unknown arrival process "bursty"`},
	}
	for _, c := range cases {
		_, err := NewArrivals(c.kind, c.rate, c.burst, 1)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewArrivals(%q,%g,%g) error %v, want %q", c.kind, c.rate, c.burst, err, c.want)
		}
	}
}

func TestRandomSeedDiffers(t *testing.T) {
	seen := map[uint64]bool{}
	for range 100 {
		seen[RandomSeed()] = true
	}
	if len(seen) < 100 {
		t.Fatalf("100 random seeds gave %d distinct values", len(seen))
	}
}
