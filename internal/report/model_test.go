package report

import "testing"

// A value that rounds to zero prints as 0, whichever side of it it was
// (a scrape a few microseconds before the run's start).
func TestFnumNegativeZero(t *testing.T) {
	for _, c := range []struct {
		v    float64
		d    int
		want string
	}{{-0.00001, 1, "0.0"}, {-0.04, 1, "0.0"}, {-0.06, 1, "-0.1"}, {-0.4, 0, "0"}, {0, 2, "0.00"}, {-12.5, 1, "-12.5"}, {-100, 0, "-100"}} {
		if got := fnum(c.v, c.d); got != c.want {
			t.Errorf("fnum(%v, %d) = %q, want %q", c.v, c.d, got, c.want)
		}
	}
}
