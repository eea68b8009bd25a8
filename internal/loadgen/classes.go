package loadgen

import (
	"sync"
	"sync/atomic"
	"time"
)

// UserClass is a pool of closed-loop users of its own (a mix class with
// its own concurrency): Concurrency users, each sending Source's next
// request when its previous one ends, beside the main pool
// (Config.Concurrency, which may then be 0). All pools number their
// requests from one counter and Config.Requests bounds them together.
// Users are numbered across pools, the main pool's first, so a shard takes
// every Count-th user of the whole run whatever its pool.
type UserClass struct {
	Name        string
	Concurrency int
	Source      Source
}

// users is every closed-loop user: the main pool's and the classes'.
// OfferedRateRPS is the rate Result.OfferedRateRPS reports for c: the
// open loop's, 0 for a closed loop (known before the run, for accumulators
// fed from OnRecord).
func (c *Config) OfferedRateRPS() float64 {
	if c.users() > 0 {
		return 0
	}
	return c.RateRPS
}

func (c *Config) users() int {
	n := c.Concurrency
	for _, uc := range c.UserClasses {
		n += uc.Concurrency
	}
	return n
}

// pool is one closed loop's users and what they send.
type pool struct {
	users int
	src   Source // nil: the run's Source
	class string
}

// pools are the closed loop's user pools, the main one first.
func (r *Run) pools() []pool {
	ps := []pool{{users: r.cfg.Concurrency}}
	for _, uc := range r.cfg.UserClasses {
		ps = append(ps, pool{users: uc.Concurrency, src: uc.Source, class: uc.Name})
	}
	return ps
}

// user is closed-loop user w of total, sending p's requests.
func (r *Run) user(wg *sync.WaitGroup, next *atomic.Int64, p pool, w, total int) {
	defer wg.Done()
	if r.cfg.Ramp > 0 && w > 0 {
		delay := r.cfg.Ramp * time.Duration(w) / time.Duration(total)
		t := time.NewTimer(delay - time.Since(r.start))
		select {
		case <-t.C:
		case <-r.issueCtx.Done():
			t.Stop()
			return
		}
	}
	due := r.firstDue(w, total)
	var last outcome
	streak := 0 // consecutive failed requests of this user
	for r.issueCtx.Err() == nil {
		if last.failed {
			streak++
		} else {
			streak = 0
		}
		if d := failureBackoff(streak, last.retryAfter); d > 0 {
			r.backoffs.Add(1)
			if last.retryAfter > 0 {
				r.retryAfters.Add(1)
			}
			if !r.sleep(d) {
				return
			}
		}
		i := next.Add(1) - 1
		if r.cfg.Requests > 0 && i >= r.cfg.Requests {
			r.stopFor(StopRequests)
			return
		}
		scheduled := time.Since(r.start)
		if due >= 0 {
			scheduled, due = min(scheduled, due), -1
		}
		if p.src == nil {
			last = r.do(i, scheduled)
			continue
		}
		req, ok := r.buildFrom(p.src, i)
		if !ok {
			return
		}
		req.Class = p.class
		last = r.send(i, scheduled, r.encode(i, req), nil)
	}
}

// Backoff of a closed-loop user after failures: a server that fails every
// request at once (dead, or refusing) would otherwise get them as fast as
// the client can send, hundreds of thousands a minute. Only failures
// before any content count (a stream that broke after tokens took its
// time, and backing off from it would lower the load). The first failure
// costs no wait (a server's odd error must not slow a measured loop); from
// the second in a row the user waits minBackoff, doubling up to
// maxBackoff, and at least what the server's Retry-After asked (as k6's
// and vLLM's benchmark clients do). The wait is not lag: the next
// request is scheduled when it ends. The open loop never backs off: it
// sends on its schedule whatever the server answers.
const (
	minBackoff = 10 * time.Millisecond
	maxBackoff = time.Second
)

// failureBackoff is the wait before a user's next request after streak
// consecutive failures, the latest with Retry-After retryAfter (0: none).
func failureBackoff(streak int, retryAfter time.Duration) time.Duration {
	var d time.Duration
	if streak >= 2 {
		d = min(minBackoff<<min(streak-2, 16), maxBackoff)
	}
	return max(d, retryAfter)
}

// buildFrom is build (client.go) for a class's own source: the same bound
// on prompts built at once, the same refusal after the hard stop.
func (r *Run) buildFrom(src Source, i int64) (Request, bool) {
	select {
	case r.building <- struct{}{}:
	case <-r.hardCtx.Done():
		return Request{}, false
	}
	defer func() { <-r.building }()
	if r.hardCtx.Err() != nil {
		return Request{}, false
	}
	return src(i), true
}
