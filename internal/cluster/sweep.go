package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/store"
	"github.com/knee-dev/knee/internal/sweep"
)

// SweepShard runs one shard of a sharded sweep as a sweep.Runner: at every
// step the shards meet in the run database (one load, one start), each
// measures its part of the step (Inner, which calls Begin just before its
// load), and once every part has ended each judges the step over all
// shards' records. Every shard thus hands sweep.Run the same step and
// sweep.Run chooses the same next load on every shard: no shard leads, and
// the database refuses a shard that chose otherwise.
type SweepShard struct {
	Join  *store.ShardJoin
	Store *store.Store
	Clock ClockOffset
	Shard loadgen.Shard
	// Inner measures this shard's part of a step.
	Inner sweep.Runner
	// Options summarize a step's records as one process would (SLOs,
	// offered rate).
	Options func(sweep.Load) stats.Options
	// Classes are a traffic mix's classes (nil: none), each step's figures
	// per class computed over all shards' records as one process does;
	// SLOs are the run's objectives, which each class's goodput counts.
	Classes *sweep.Classes
	SLOs    slo.Set
	// Flush stores this shard's records so far. Tag counts a step this
	// shard replays instead of measuring (Inner counts those it measures),
	// so that records are tagged with the step's index in measured order,
	// the same on every shard.
	Flush func() error
	Tag   func(step int, load sweep.Load)
	// Say tells this shard's operator something (its stderr).
	Say func(string)
	// Timeout bounds a step's meeting, Lead is how far ahead the last shard
	// to meet fixes the step's start, Poll how often a waiting shard looks.
	Timeout, Lead, Poll time.Duration

	// Partial is the step a stopped shard left partial, judged over the
	// records every shard stored; set with a *store.StepStopped error.
	Partial *sweep.Step

	step  int
	start time.Time // the current step's common start, on this machine's clock; zero: at once
}

// Run measures one step with every other shard.
func (s *SweepShard) Run(ctx context.Context, load sweep.Load) (sweep.Step, error) {
	k := s.step
	s.step++
	at, err := s.Join.MeetStep(ctx, k, load.String(), s.Timeout, s.Lead, s.Poll)
	if err != nil {
		return sweep.Step{}, err
	}
	if at.Done { // a restart replays the part its first attempt completed
		s.Tag(k, load)
	} else {
		s.start = time.Time{}
		if !at.Late {
			s.start = s.Clock.ToLocal(at.Start)
		}
		local, err := s.Inner.Run(ctx, load)
		status := store.PartComplete
		if err != nil {
			status = store.PartPartial
		}
		flushErr := s.Flush()
		if endErr := s.Join.EndStep(k, status); endErr != nil {
			return sweep.Step{}, errors.Join(err, endErr)
		}
		if err != nil {
			return sweep.Step{}, err
		}
		if flushErr != nil {
			s.Say(fmt.Sprintf("step %d (%s): not all of this shard's records are stored yet (%v): the step is judged on those that are", k+1, load, flushErr))
		}
		// The merged step is every shard's: this shard's own client
		// warnings are its own.
		for _, w := range local.Warnings {
			s.Say(fmt.Sprintf("step %d (%s), this shard: %s", k+1, load, w))
		}
	}
	endErr := s.Join.WaitStepEnd(ctx, k, s.Poll)
	var stopped *store.StepStopped
	if endErr != nil && !errors.As(endErr, &stopped) {
		return sweep.Step{}, endErr
	}
	step, err := s.merged(k, load)
	if err != nil {
		return sweep.Step{}, err
	}
	if stopped != nil {
		step.Warnings = append(step.Warnings, fmt.Sprintf("partial step: %v; its figures cover the %d requests all shards measured", stopped, step.Summary.Requests))
		s.Partial = &step
		return sweep.Step{}, stopped
	}
	return step, nil
}

// merged summarizes step k over every shard's records, leaving out probes
// (they measure an unrelated user, not the load) but for their TTFT column:
// only shard 0 sends them, so they are that shard's.
func (s *SweepShard) merged(k int, load sweep.Load) (sweep.Step, error) {
	var all []record.Request
	if err := s.Store.SweepStepRecords(s.Join.RunID, k, func(_ int, r *record.Request) error {
		all = append(all, *r)
		return nil
	}); err != nil {
		return sweep.Step{}, err
	}
	recs, probeTTFT := sweep.SplitProbes(all)
	opts := s.Options(load)
	sum := stats.Summarize(recs, opts)
	return sweep.Step{Load: load, Summary: sum, Full: true, ProbeTTFTP95: probeTTFT,
		Classes: s.Classes.Summarize(all, opts, s.SLOs, &sum)}, nil
}

// Begin cuts cfg and src to this shard's part of the step, waits until the
// step's common start and anchors cfg's schedule on it (a late wake-up is
// send lag), and records the schedule's zero and when this process began,
// on the shared timeline. A restarted shard that rejoins a step already
// running starts at once.
func (s *SweepShard) Begin(ctx context.Context, cfg loadgen.Config, src loadgen.Source) (loadgen.Config, loadgen.Source, error) {
	cfg, src, err := s.Shard.Apply(cfg, src)
	if err != nil {
		return cfg, src, err
	}
	var zero time.Time
	if !s.start.IsZero() {
		if cfg.Origin, err = WaitUntil(ctx, s.start); err != nil {
			return cfg, src, err
		}
		zero = s.Clock.ToServer(cfg.Origin)
	}
	return cfg, src, s.Join.StepBegan(s.step-1, zero, s.Clock.ToServer(time.Now()))
}
