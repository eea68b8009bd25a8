package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/knee-dev/knee/internal/cluster"
	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/store"
	"github.com/knee-dev/knee/internal/sweep"
	"github.com/spf13/pflag"
)

// sweepShard is knee sweep --shards N: one shard of a sweep whose steps are
// split as a bench run is, meeting in the run database once per step
// (cluster.SweepShard; docs/cluster.md).
type sweepShard struct {
	shardFlags
	run *cluster.SweepShard // set once the run is joined
}

// stepLead is how far ahead a step's start is fixed once the last shard
// met there: enough for the others to see it (they look every stepPoll).
const (
	stepLead = time.Second
	stepPoll = 50 * time.Millisecond
)

// resolve checks the shard flags; with --shards it refuses what a sharded
// sweep cannot do, turns the server-metrics scrape off (each shard would
// see the server at its own moment), and makes the run's settings, which
// every shard must share, its stored configuration until the sweep ends.
func (s *sweepShard) resolve(env *Env, fs *pflag.FlagSet, t *sweepTargetFlags, f *sweepFlags, plan sweep.Plan, noStore bool, meta *runMeta) error {
	if err := s.shardFlags.Resolve(env.Getenv, flagGiven(fs, "seed"), noStore); err != nil || !s.Active() {
		return err
	}
	// Every shard needs a part of every step: refused now, not at the step.
	lowest := plan.Min
	if !plan.Auto() {
		lowest = slices.Min(plan.Loads)
	}
	switch {
	case plan.Kind == sweep.Concurrency && lowest < float64(s.Count):
		return Usagef("--shards %d: the sweep's lowest concurrency is %g; want at least one user per shard at every step (raise the lowest step or --min)", s.Count, lowest)
	case f.wl.Requests > 0 && f.wl.Requests < int64(s.Count):
		return Usagef("--shards %d: --requests %d per step leaves a shard without a request; want at least one per shard", s.Count, f.wl.Requests)
	}
	if err := s.RefuseUnsplittable(t.url, 0, 0); err != nil {
		return err
	}
	switch {
	case flagGiven(fs, "stop-oversaturated"):
		return Usagef("--stop-oversaturated with --shards: one shard would stop alone and leave the rest of the step's schedule unsent; drop one of them")
	case flagGiven(fs, "metrics-url"):
		return Usagef("--metrics-url with --shards: a sharded sweep does not scrape the server's metrics (each shard would see them at its own moment); drop one of them")
	}
	t.metrics.Off = true
	meta.Config = shardSettings(fs)
	return nil
}

// shardSettings are the flags given, less those that may differ between
// the shards of one run (where each stores, what it prints).
func shardSettings(fs *pflag.FlagSet) [][2]string {
	own := map[string]bool{"shard": true, "db": true, "out": true, "quiet": true, "json": true, "junit": true, "label": true,
		"shard-timeout": true, "live": true, "otlp-endpoint": true}
	var out [][2]string
	fs.Visit(func(fl *pflag.Flag) {
		if !own[fl.Name] {
			out = append(out, [2]string{fl.Name, fl.Value.String()})
		}
	})
	return out
}

// wrap returns the runner a sharded sweep measures with (inner itself when
// the sweep is not sharded).
func (s *sweepShard) wrap(env *Env, inner sweep.Runner, sr *sweepRun, classes *sweep.Classes, set slo.Set) sweep.Runner {
	if !s.Active() || sr.stored == nil {
		return inner
	}
	ss := sr.stored
	say := func(msg string) { fmt.Fprintf(env.Stderr, "knee: shard %d of run %q: %s\n", s.Index, s.RunName, msg) }
	s.run = &cluster.SweepShard{
		Join: s.Join, Store: ss.Run().St, Clock: s.Clock, Shard: s.Spec, Inner: inner,
		Options: func(load sweep.Load) stats.Options {
			opts := stats.Options{}
			if len(set) > 0 {
				opts.Good = set.Good
			}
			if load.Kind == sweep.Rate { // as one process's run reports it
				opts.OfferedRateRPS = load.Value
			}
			return opts
		},
		Classes: classes, SLOs: set,
		Flush:   ss.Run().W.Flush,
		Tag:     func(_ int, load sweep.Load) { ss.Step(load) },
		Say:     say,
		Timeout: s.Timeout, Lead: stepLead, Poll: stepPoll,
	}
	return &shardedRunner{s: s, sr: sr}
}

// shardedRunner hands sweep.Run the steps judged over every shard's
// records; a step another shard left partial is kept as the partial step
// and ends the sweep (exit 1, naming the shard).
type shardedRunner struct {
	s  *sweepShard
	sr *sweepRun
}

func (r *shardedRunner) Run(ctx context.Context, load sweep.Load) (sweep.Step, error) {
	step, err := r.s.run.Run(ctx, load)
	var stopped *store.StepStopped
	switch {
	case errors.As(err, &stopped):
		r.sr.shardPartial = r.s.run.Partial
		r.s.OthersStopped = ctx.Err() == nil
	case errors.Is(err, store.ErrShard):
		return step, &UsageError{Err: err} // another load than the other shards'
	}
	return step, err
}

// begin cuts a step's load to this shard's part and waits for the step's
// common start (nothing to do when the sweep is not sharded).
func (s *sweepShard) begin(ctx context.Context, cfg loadgen.Config, src loadgen.Source) (loadgen.Config, loadgen.Source, error) {
	if s == nil || s.run == nil {
		return cfg, src, nil
	}
	cfg, src, err := s.run.Begin(ctx, cfg, src)
	if errors.Is(err, loadgen.ErrConfig) {
		return cfg, src, &UsageError{Err: err}
	}
	return cfg, src, err
}
