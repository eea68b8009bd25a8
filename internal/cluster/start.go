package cluster

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/knee-dev/knee/internal/store"
)

// StartTolerance is how closely the shards' starts must agree: their
// schedules' zero points within it plus the clocks' stated uncertainty,
// and the report warns when their processes began further apart.
const StartTolerance = 5 * time.Millisecond

// startSpin is how long before the common start a shard stops sleeping: a
// timer can wake a busy machine's process a millisecond or more late.
const startSpin = 3 * time.Millisecond

// WaitUntil sleeps until at on this machine's clock (sleeping to just
// before it, then spinning) and returns at with a monotonic reading, for
// loadgen.Config.Origin: a time read from a database has none, and the
// run's times must not follow a step of the wall clock.
func WaitUntil(ctx context.Context, at time.Time) (time.Time, error) {
	now := time.Now()
	origin := now.Add(at.Sub(now))
	if d := time.Until(origin) - startSpin; d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return origin, ctx.Err()
		}
	}
	for time.Now().Before(origin) {
		runtime.Gosched()
	}
	return origin, ctx.Err()
}

// Spread is the time between the earliest and the latest of ts (zero
// times are left out: not known).
func Spread(ts []time.Time) time.Duration {
	var first, last time.Time
	for _, t := range ts {
		if t.IsZero() {
			continue
		}
		if first.IsZero() || t.Before(first) {
			first = t
		}
		if t.After(last) {
			last = t
		}
	}
	return last.Sub(first)
}

// StartNotes say how well the shards started together: the spread of their
// schedules' zero points (each anchored on the common start, so it is
// computed, not measured), and the spread of when their processes actually
// began, measured, which a busy machine can stretch; past StartTolerance
// plus the clocks' uncertainty it is a warning, since the first requests of
// the late shards were sent late (their lag shows by how much).
func StartNotes(zero, began time.Duration, uncertainty time.Duration) []string {
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	out := []string{fmt.Sprintf("shards' schedules start together within %.3f ms; their processes began within %.3f ms (clocks known to ± %.3f ms)",
		ms(zero), ms(began), ms(uncertainty))}
	if zero > StartTolerance+uncertainty {
		out = append(out, fmt.Sprintf("warning: the shards' schedules start %.3f ms apart, more than %.0f ms plus the clocks' uncertainty: their loads do not add up to one schedule",
			ms(zero), ms(StartTolerance)))
	}
	if began > StartTolerance+uncertainty {
		out = append(out, fmt.Sprintf("warning: the shards' processes began %.3f ms apart, more than %.0f ms plus the clocks' uncertainty: the late shards' first requests went out late (see their lag)",
			ms(began), ms(StartTolerance)))
	}
	return out
}

// StepSpreads are the widest spreads over a sharded sweep's steps of the
// shards' schedule zeros and of when their processes began (a part rerun
// by a restarted shard has no zero on the common start and is left out).
func StepSpreads(parts []store.StepPart) (zero, began time.Duration) {
	byStep := map[int][2][]time.Time{}
	for _, p := range parts {
		if p.Zero.IsZero() {
			continue
		}
		b := byStep[p.Step]
		b[0], b[1] = append(b[0], p.Zero), append(b[1], p.Began)
		byStep[p.Step] = b
	}
	for _, b := range byStep {
		zero, began = max(zero, Spread(b[0])), max(began, Spread(b[1]))
	}
	return zero, began
}

// RunSpreads are sharded run id's start spreads, as StartNotes takes them:
// a sweep's widest over its steps; a bench run's over its shards' first
// attempts (a restarted shard runs on a schedule of its own). beganKnown
// says whether two shards at least (of one step) recorded when their
// processes began: until then began is 0 for want of data, not a measure.
func RunSpreads(st *store.Store, id int64, shards []store.ShardInfo) (zero, began time.Duration, beganKnown bool, err error) {
	parts, err := st.StepParts(id)
	if err != nil {
		return 0, 0, false, err
	}
	if len(parts) > 0 {
		zero, began = StepSpreads(parts)
		perStep := map[int]int{}
		for _, p := range parts {
			if !p.Zero.IsZero() && !p.Began.IsZero() {
				perStep[p.Step]++
				beganKnown = beganKnown || perStep[p.Step] >= 2
			}
		}
		return zero, began, beganKnown, nil
	}
	var zeros, begans []time.Time
	n := 0
	for _, s := range shards {
		if s.Attempt == 1 {
			zeros, begans = append(zeros, s.Started), append(begans, s.Began)
			if !s.Began.IsZero() {
				n++
			}
		}
	}
	return Spread(zeros), Spread(begans), n >= 2, nil
}
