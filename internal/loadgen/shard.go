package loadgen

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/knee-dev/knee/internal/record"
)

// Shard is one of Count processes that split one run's schedule between
// them (knee bench --shards N --shard I). Every shard computes the whole
// run's schedule from the same seed and keeps its part: in open loop and
// trace replay every Count-th arrival starting with the Index-th; in closed
// loop every Count-th user; in sessions every Count-th conversation. Its
// request i is request Global(i) of the whole run, with that request's
// prompt and scheduled time, so the shards' requests together are the
// one-process run's, exactly.
type Shard struct {
	Index, Count int
}

// Validate says what is wrong with a shard index and count.
func (s Shard) Validate() error {
	if s.Count < 1 {
		return fmt.Errorf("%d shards: want 1 or more", s.Count)
	}
	if s.Index < 0 || s.Index >= s.Count {
		return fmt.Errorf("shard %d of %d: want an index from 0 to %d", s.Index, s.Count, s.Count-1)
	}
	return nil
}

// Global maps this shard's local request (or user, or session) index to
// its index in the whole run.
func (s Shard) Global(local int64) int64 {
	return local*int64(s.Count) + int64(s.Index)
}

// Part is how many of total items (requests, users, sessions), numbered
// from 0, are this shard's: those whose number is Index modulo Count.
func (s Shard) Part(total int64) int64 {
	if total <= int64(s.Index) {
		return 0
	}
	return (total - int64(s.Index) + int64(s.Count) - 1) / int64(s.Count)
}

// shardSchedule yields every count-th arrival of the whole schedule,
// starting with the index-th.
type shardSchedule struct {
	whole        Schedule
	index, count int
	next         int64 // the whole schedule's index of its next arrival
}

// discarder is a schedule that keeps something per arrival until the
// request is built (a trace's prompts): the other shards' arrivals are
// discarded as they are skipped, so memory stays bounded.
type discarder interface{ Discard(i int64) }

func (s *shardSchedule) Next() time.Duration {
	d, _ := s.whole.(discarder)
	for s.next%int64(s.count) != int64(s.index) {
		// After the last arrival nothing is kept: nothing to discard.
		if at := s.whole.Next(); d != nil && at != time.Duration(math.MaxInt64) {
			d.Discard(s.next)
		}
		s.next++
	}
	s.next++
	return s.whole.Next()
}

// Arrivals returns this shard's part of the whole run's arrival schedule.
func (s Shard) Arrivals(whole Schedule) Schedule {
	if s.Count <= 1 {
		return whole
	}
	return &shardSchedule{whole: whole, index: s.Index, count: s.Count}
}

// Source returns the whole run's requests at this shard's indices.
func (s Shard) Source(whole Source) Source {
	if s.Count <= 1 {
		return whole
	}
	return func(i int64) Request { return whole(s.Global(i)) }
}

// Turn returns the whole run's conversations at this shard's indices.
func (s Shard) Turn(whole func(session, turn int) (SessionTurn, bool)) func(session, turn int) (SessionTurn, bool) {
	if s.Count <= 1 || whole == nil {
		return whole
	}
	return func(session, turn int) (SessionTurn, bool) { return whole(int(s.Global(int64(session))), turn) }
}

// Apply returns cfg and src cut to this shard's part of the run: the
// schedule, the request and warm-up counts, the users or conversations, and
// records numbered as in the whole run (ID, Session). The error says when
// the shard would have nothing to do.
func (s Shard) Apply(cfg Config, src Source) (Config, Source, error) {
	if err := s.Validate(); err != nil {
		return cfg, src, configErr("%v", err)
	}
	if s.Count == 1 {
		return cfg, src, nil
	}
	if cfg.Requests > 0 {
		if cfg.Requests = s.Part(cfg.Requests); cfg.Requests == 0 {
			return cfg, src, configErr("shard %d of %d has no request to send: the run has fewer requests than shards", s.Index, s.Count)
		}
	}
	cfg.WarmupRequests = int(s.Part(int64(cfg.WarmupRequests)))
	switch {
	case cfg.Sessions > 0:
		if cfg.Sessions = int(s.Part(int64(cfg.Sessions))); cfg.Sessions == 0 {
			return cfg, src, configErr("shard %d of %d has no conversation: --sessions is below the shard count", s.Index, s.Count)
		}
		cfg.Turn = s.Turn(cfg.Turn)
	case cfg.Concurrency > 0 || len(cfg.UserClasses) > 0:
		// Users are numbered across pools, the main one's first: this
		// shard's are every Count-th of them, whatever their pool.
		total := int64(cfg.Concurrency)
		cfg.Concurrency = int(s.Part(total))
		classes := make([]UserClass, 0, len(cfg.UserClasses))
		for _, uc := range cfg.UserClasses {
			n := s.Part(total+int64(uc.Concurrency)) - s.Part(total)
			total += int64(uc.Concurrency)
			if n > 0 {
				uc.Concurrency, uc.Source = int(n), s.Source(uc.Source)
				classes = append(classes, uc)
			}
		}
		cfg.UserClasses = classes
		if cfg.users() == 0 {
			return cfg, src, configErr("shard %d of %d has no user: --concurrency is below the shard count (the mix classes' own users counted in)", s.Index, s.Count)
		}
	default: // open loop and trace replay
		whole := cfg.Arrivals
		if whole == nil {
			whole = &constantSchedule{rate: cfg.RateRPS}
		}
		cfg.Arrivals = s.Arrivals(whole)
		if cfg.MaxConcurrency > 0 {
			cfg.MaxConcurrency = max(1, int(s.Part(int64(cfg.MaxConcurrency))))
		}
	}
	if src != nil {
		src = s.Source(src)
	}
	if s.Index > 0 {
		// Probes come from the first shard alone: N shards sending the
		// whole probe rate each would send N times the probes asked for.
		cfg.ProbeRateRPS, cfg.Probe = 0, nil
	}
	onRecord := cfg.OnRecord
	cfg.OnRecord = func(r *record.Request) {
		if r.Class == record.ProbeClass {
			// A probe keeps its number: only the first shard sends any.
			if onRecord != nil {
				onRecord(r)
			}
			return
		}
		r.ID = s.Global(r.ID)
		if r.Session != "" {
			if n, err := strconv.ParseInt(r.Session, 10, 64); err == nil {
				r.Session = strconv.FormatInt(s.Global(n), 10)
			}
		}
		if onRecord != nil {
			onRecord(r)
		}
	}
	return cfg, src, nil
}

// firstDue is when closed-loop user w of n is due to send its first
// request on a common start (Config.Origin): at its ramp offset, so that a
// late start shows as that request's lag. -1 without an Origin: a user's
// requests are due when it sends them.
func (r *Run) firstDue(w, n int) time.Duration {
	if r.cfg.Origin.IsZero() {
		return -1
	}
	return r.cfg.Ramp * time.Duration(w) / time.Duration(n)
}
