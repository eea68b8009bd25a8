package stats

import (
	"fmt"
	"math"
	"strconv"
)

// HumanMs prints a latency given in milliseconds the way a person reads
// it: four significant digits below a minute ("0.35ms", "69.58ms",
// "2.312s"), then minutes and seconds ("12m05s"), hours and minutes
// ("2h03m") and days and hours ("3d04h"). NaN is "–", +Inf "∞".
func HumanMs(ms float64) string {
	switch {
	case math.IsNaN(ms):
		return "–"
	case math.IsInf(ms, 1):
		return "∞"
	case ms < 0:
		return "-" + HumanMs(-ms)
	case ms < 1000:
		return strconv.FormatFloat(ms, 'g', 4, 64) + "ms"
	case ms < 59_950:
		return strconv.FormatFloat(ms/1000, 'g', 4, 64) + "s"
	}
	s := int64(math.Round(ms / 1000))
	switch {
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	case s < 86400:
		m := s / 60 // truncated, as clocks read
		return fmt.Sprintf("%dh%02dm", m/60, m%60)
	}
	h := s / 3600
	return fmt.Sprintf("%dd%02dh", h/24, h%24)
}
