package stats

import (
	"math"
	"testing"
)

func TestHumanMs(t *testing.T) {
	for _, c := range []struct {
		ms   float64
		want string
	}{
		{0, "0ms"}, {0.35, "0.35ms"}, {69.58, "69.58ms"}, {234.04, "234ms"}, {999.4, "999.4ms"},
		{1000, "1s"}, {2312, "2.312s"}, {59_900, "59.9s"}, {59_960, "1m00s"}, {725_000, "12m05s"},
		{7_410_966, "2h03m"}, {3_599_600, "1h00m"}, {86_400_000 + 4*3_600_000, "1d04h"},
		{math.NaN(), "–"}, {math.Inf(1), "∞"}, {-69.58, "-69.58ms"},
	} {
		if got := HumanMs(c.ms); got != c.want {
			t.Errorf("HumanMs(%v) = %q, want %q", c.ms, got, c.want)
		}
	}
}
