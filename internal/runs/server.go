package runs

import (
	"encoding/json"
	"math"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/diagnose"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/scrape"
	"github.com/knee-dev/knee/internal/sweep"
)

// MaxServerSeriesBytes bounds a server_metrics.json read whole: a scrape a
// second for a day is well under it, and a path naming something else
// (a huge file, /dev/zero) is refused at it rather than filling memory.
const MaxServerSeriesBytes = 256 << 20

// ReadServerSeries reads a server_metrics.json that knee bench --out wrote;
// flag names where path came from in the message.
func ReadServerSeries(path, flag string) (*scrape.Series, error) {
	b, err := badinput.ReadFile(path, MaxServerSeriesBytes, "a server_metrics.json written by knee bench --out")
	if err != nil {
		return nil, badinput.Errorf("%s: %w", flag, err)
	}
	var s scrape.Series
	if err := json.Unmarshal(b, &s); err != nil || s.Samples == nil {
		return nil, badinput.Errorf("%s %s: not a server_metrics.json written by knee bench --out (%v)", flag, path, err)
	}
	return &s, nil
}

// ServerFacts is the server's view over the span recs were sent and done
// in, for diagnose (nil when the series gives no window there).
func ServerFacts(s *scrape.Series, recs []record.Request) *diagnose.ServerFacts {
	from, to := math.Inf(1), math.Inf(-1)
	for i := range recs {
		r := &recs[i]
		if r.Warmup {
			continue
		}
		from = math.Min(from, float64(r.Sent)/1e6)
		to = math.Max(to, float64(max(r.Done, r.StreamEnd))/1e6)
	}
	if from > to || s.Server == "" {
		return nil
	}
	v := sweep.ServerStepOf(&scrape.View{Server: s.Server, Window: s.Window(from, to)})
	if v == nil {
		return nil
	}
	return &diagnose.ServerFacts{Source: scrape.ServerLabel(s.Server) + " /metrics at " + s.URL,
		QueueMS: v.QueueMeanMS, PrefillMS: v.PrefillMeanMS, QueueP95MS: v.QueueP95MS, QueueP95Bound: v.QueueP95Bound, PrefillP95MS: v.PrefillP95MS,
		RunningMax: v.RunningMax, WaitingMax: v.WaitingMax, WaitingGrowing: v.WaitingGrowing, KVUsageMax: v.KVUsageMax, Preemptions: v.Preemptions}
}
