//go:build !js

package web

import (
	"net/http"
	"time"

	"github.com/knee-dev/knee/internal/cluster"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/store"
)

// shardsView is a sharded run's shards beside its merged figures (the run
// page shows it above the report); Count is 0 for a run that is not
// sharded.
type shardsView struct {
	Count    int   `json:"count"`
	Complete int   `json:"complete"`
	Missing  []int `json:"missing"` // indices not complete: the run is partial
	// Merged is over every shard's records stored so far.
	Merged               shardFigures `json:"merged"`
	LargestUncertaintyMS float64      `json:"largest_clock_uncertainty_ms"`
	Shards               []shardRow   `json:"shards"`
	// StartSpreadMS is how far apart the shards' processes actually began
	// their load (a sweep: its widest step), as the report states it; null
	// until two shards have begun. ScheduleSpreadMS is the spread of their
	// schedules' zero points, all anchored on the common start, so near 0
	// unless a clock was off.
	StartSpreadMS    *float64 `json:"start_spread_ms"`
	ScheduleSpreadMS float64  `json:"schedule_spread_ms"`
}

// shardFigures are what the page compares between a shard and the run.
type shardFigures struct {
	Records       int     `json:"records"`
	ThroughputRPS float64 `json:"throughput_rps"`
	Errors        int     `json:"errors"`
	LagP95MS      float64 `json:"lag_p95_ms"`
}

type shardRow struct {
	Index              int       `json:"index"`
	Status             string    `json:"status"`
	Attempt            int       `json:"attempt"`
	Host               string    `json:"host"`
	Started            time.Time `json:"started,omitzero"`
	Ended              time.Time `json:"ended,omitzero"`
	ClockOffsetMS      float64   `json:"clock_offset_ms"`
	ClockUncertaintyMS float64   `json:"clock_uncertainty_ms"`
	shardFigures
}

func figuresOf(recs []record.Request) shardFigures {
	s := stats.Summarize(recs, stats.Options{})
	f := shardFigures{Records: len(recs), ThroughputRPS: s.RequestThroughputRPS, Errors: s.Errors, LagP95MS: s.Lag.P95}
	if !finiteOK(f.ThroughputRPS) {
		f.ThroughputRPS = 0
	}
	if !finiteOK(f.LagP95MS) {
		f.LagP95MS = 0
	}
	return f
}

func shardsOf(st *store.Store, id int64) (shardsView, error) {
	v := shardsView{Missing: []int{}, Shards: []shardRow{}}
	shards, count, err := st.RunShards(id)
	if err != nil || count == 0 {
		return v, err
	}
	v.Count = count
	per := map[int][]record.Request{}
	var all []record.Request
	if err := st.ShardRecords(id, func(s int, r *record.Request) error {
		per[s] = append(per[s], *r)
		all = append(all, *r)
		return nil
	}); err != nil {
		return v, err
	}
	v.Merged = figuresOf(all)
	done := map[int]bool{}
	for _, s := range shards {
		if s.Status == store.StatusComplete {
			v.Complete++
			done[s.Index] = true
		}
		v.LargestUncertaintyMS = max(v.LargestUncertaintyMS, ms(s.ClockUncertainty))
		v.Shards = append(v.Shards, shardRow{Index: s.Index, Status: s.Status, Attempt: s.Attempt, Host: s.Host,
			Started: s.Started, Ended: s.Ended, ClockOffsetMS: ms(s.ClockOffset), ClockUncertaintyMS: ms(s.ClockUncertainty),
			shardFigures: figuresOf(per[s.Index])})
	}
	for i := range count {
		if !done[i] {
			v.Missing = append(v.Missing, i)
		}
	}
	zero, began, known, err := cluster.RunSpreads(st, id, shards)
	if known {
		b := ms(began)
		v.StartSpreadMS = &b
	}
	v.ScheduleSpreadMS = ms(zero)
	return v, err
}

// apiRunShards serves a run's shards (count 0 when it is not sharded).
func (s *Server) apiRunShards(w http.ResponseWriter, r *http.Request) {
	id, ok := s.storedRun(w, r)
	if !ok {
		return
	}
	v, err := shardsOf(s.cfg.Store, id)
	reply(w, v, err)
}
