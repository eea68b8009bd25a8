package workload

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestParseDistForms(t *testing.T) {
	cases := []struct {
		in        string
		canonical string
		mean      float64
	}{
		{"512", "512", 512},
		{" 7 ", "7", 7},
		{"fixed:64", "64", 64},
		{"256:1024", "256:1024", 640},
		{"uniform:10,20", "10:20", 15},
		{"normal:512,128", "normal:512,128", 512},
		{"lognormal:300,150", "lognormal:300,150", 300},
		{"Normal:1.5,0", "normal:1.5,0", 1.5},
	}
	for _, c := range cases {
		d, err := ParseDist(c.in)
		if err != nil {
			t.Fatalf("ParseDist(%q): %v", c.in, err)
		}
		if d.String() != c.canonical || d.Mean() != c.mean {
			t.Errorf("ParseDist(%q) = %s mean %g, want %s mean %g", c.in, d, d.Mean(), c.canonical, c.mean)
		}
		// The canonical form parses back to the same distribution.
		d2, err := ParseDist(d.String())
		if err != nil || d2.String() != d.String() {
			t.Errorf("round trip of %q: %v, %v", d.String(), d2, err)
		}
	}
}

func TestParseDistErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", "empty"},
		{"normal:512", "normal needs MEAN,STD, e.g. normal:512,128"},
		{"lognormal:512", "lognormal needs MEAN,STD, e.g. lognormal:512,128"},
		{"uniform:5", "uniform needs LO,HI"},
		{"1024:256", "backwards"},
		{"0", "between 1 and"},
		{"-5", "between 1 and"},
		{"abc", `"abc" is not a whole number`},
		{"12.5", "not a whole number"},
		{"zipf:1,2", `unknown kind "zipf"`},
		{"normal:x,1", `mean "x" is not a number`},
		{"normal:-1,1", "mean must be > 0"},
		{"normal:10,-1", "standard deviation must be >= 0"},
		{"normal:NaN,1", "not a number"},
		{"normal:1e12,1", "above the limit"},
		{"256:", "not a whole number"},
	}
	for _, c := range cases {
		_, err := ParseDist(c.in)
		if err == nil {
			t.Errorf("ParseDist(%q) succeeded, want error containing %q", c.in, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseDist(%q) error %q, want it to contain %q", c.in, err, c.want)
		}
		if c.in != "" && !strings.Contains(err.Error(), c.in) {
			t.Errorf("ParseDist(%q) error %q does not name the input", c.in, err)
		}
	}
}

// moments samples n values and returns their mean and standard deviation.
func moments(d Dist, n int, seed uint64) (mean, std float64, min, max int) {
	rng := rand.New(rand.NewPCG(seed, 1))
	var sum, sum2 float64
	min, max = math.MaxInt, 0
	for range n {
		v := d.Sample(rng)
		min, max = minInt(min, v), maxInt(max, v)
		sum += float64(v)
		sum2 += float64(v) * float64(v)
	}
	mean = sum / float64(n)
	return mean, math.Sqrt(sum2/float64(n) - mean*mean), min, max
}

func minInt(a, b int) int {
	if a < b {
		return a
	}
	return b
}
func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

func TestDistSampleMoments(t *testing.T) {
	const n = 200_000
	cases := []struct {
		spec             string
		mean, std        float64
		wantMin, wantMax int // observed extremes must lie within
	}{
		{"512", 512, 0, 512, 512},
		{"256:1024", 640, math.Sqrt((769*769 - 1) / 12.0), 256, 1024},
		{"normal:512,128", 512, 128, 1, math.MaxInt},
		{"lognormal:512,256", 512, 256, 1, math.MaxInt},
		{"lognormal:2000,6000", 2000, 6000, 1, math.MaxInt}, // heavy tail
	}
	for _, c := range cases {
		d, err := ParseDist(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		mean, std, lo, hi := moments(d, n, 42)
		// Tolerances: a few standard errors of the mean; the heavy-tailed
		// lognormal's sample std converges slowly, hence the looser bound.
		if math.Abs(mean-c.mean) > 4*c.std/math.Sqrt(n)+0.6 {
			t.Errorf("%s: sample mean %.2f, want %.2f", c.spec, mean, c.mean)
		}
		tolStd := 0.02 * c.std
		if c.std > 2*c.mean {
			tolStd = 0.15 * c.std
		}
		if math.Abs(std-c.std) > tolStd+0.3 {
			t.Errorf("%s: sample std %.2f, want %.2f", c.spec, std, c.std)
		}
		if lo < c.wantMin || hi > c.wantMax {
			t.Errorf("%s: samples in [%d,%d], want within [%d,%d]", c.spec, lo, hi, c.wantMin, c.wantMax)
		}
		if c.spec == "256:1024" && (lo != 256 || hi != 1024) {
			t.Errorf("uniform is inclusive: saw [%d,%d], want both ends", lo, hi)
		}
	}
}

func TestDistClampsToOne(t *testing.T) {
	// A normal centred at 1 with a wide spread goes negative half the
	// time; every sample must still be a usable length.
	d, _ := ParseDist("normal:1,50")
	_, _, lo, _ := moments(d, 10_000, 3)
	if lo != 1 {
		t.Fatalf("min sample %d, want clamped to 1", lo)
	}
}

func TestDistDeterministic(t *testing.T) {
	d, _ := ParseDist("lognormal:512,200")
	a := rand.New(rand.NewPCG(9, 9))
	b := rand.New(rand.NewPCG(9, 9))
	for i := range 1000 {
		if x, y := d.Sample(a), d.Sample(b); x != y {
			t.Fatalf("sample %d differs for the same seed: %d vs %d", i, x, y)
		}
	}
}

func FuzzParseDist(f *testing.F) {
	for _, s := range []string{"512", "256:1024", "normal:512,128", "lognormal:512,256", "uniform:1,2",
		"fixed:3", "normal:512", ":", "1:", "normal:1e308,1e308", "lognormal:1e-300,1e300", "0:0", "-1:5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDist(s)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		rng := rand.New(rand.NewPCG(1, 2))
		for range 20 {
			if v := d.Sample(rng); v < 1 || v > MaxLengthTokens {
				t.Fatalf("%q sampled %d, outside [1,%d]", s, v, MaxLengthTokens)
			}
		}
		if m := d.Mean(); math.IsNaN(m) || m <= 0 {
			t.Fatalf("%q mean %g", s, m)
		}
		d2, err := ParseDist(d.String())
		if err != nil || d2.String() != d.String() {
			t.Fatalf("canonical %q of %q does not round-trip: %v", d.String(), s, err)
		}
	})
}
