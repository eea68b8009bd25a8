package stats

import "fmt"

// OverloadWarning says when an open loop offered more than the server
// completes: the queue then grows for as long as the run lasts, so its
// latencies measure the run's length, not the server. Two signs together
// (either alone is noise in a short run): completions fall well short of
// the offered rate, and the requests in flight climb steadily — the second
// half of the run up to the peak holds clearly more than the first.
func OverloadWarning(sum Summary) string {
	offered := sum.OfferedRateRPS
	if sum.AchievedRateRPS > 0 && sum.AchievedRateRPS < offered {
		offered = sum.AchievedRateRPS // what was actually sent
	}
	if offered <= 0 || sum.RequestThroughputRPS >= 0.85*offered {
		return ""
	}
	series := sum.TimeSeries
	peak := 0
	for i, s := range series {
		if s.InFlight >= series[peak].InFlight {
			peak = i
		}
	}
	if peak < 8 {
		return ""
	}
	early, late := meanInFlight(series[peak/4:peak/2]), meanInFlight(series[3*peak/4:peak+1])
	if late < 1.5*early || late-early < 4 {
		return ""
	}
	return fmt.Sprintf("warning: overloaded: the offered %.3g req/s is more than the server completes (%.3g req/s), so the queue grows without bound "+
		"(in flight rose from %.0f to %d). Latencies here grow with the run's length and describe no steady state: "+
		"lower --rate, or find the sustainable load with knee sweep.", sum.OfferedRateRPS, sum.RequestThroughputRPS, early, series[peak].InFlight)
}

func meanInFlight(ss []Second) float64 {
	if len(ss) == 0 {
		return 0
	}
	var n int
	for _, s := range ss {
		n += s.InFlight
	}
	return float64(n) / float64(len(ss))
}
