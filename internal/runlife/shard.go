package runlife

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/cluster"
	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/runs"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/store"
)

// Shard is one shard of a load split across processes (bench and sweep
// --shards N): the index comes from --shard or JOB_COMPLETION_INDEX, all
// shards share --run-name and meet in the run database (docs/cluster.md).
type Shard struct {
	Count   int // --shards
	Index   int // --shard (-1: from the environment)
	RunName string
	Timeout time.Duration // for every shard to register
	Lead    time.Duration // from the last registration to the common start

	// Set as the shard joins its run.
	Spec  loadgen.Shard
	Join  *store.ShardJoin
	Clock cluster.ClockOffset
	Start time.Time // the common start, on the database's clock
	// Merged is how the run's summary is made over every shard's records.
	Merged stats.Options
	// OthersStopped: a sharded sweep ended at a step another shard left
	// partial; this shard measured all it was asked to.
	OthersStopped bool
}

// Active reports whether the run is split (--shards 2 or more).
func (s *Shard) Active() bool { return s.Count > 1 }

// Resolve checks the shard flags; seedGiven says whether --seed was set
// (every shard must draw one schedule); getenv reads the index a
// Kubernetes Indexed Job gives.
func (s *Shard) Resolve(getenv func(string) string, seedGiven, noStore bool) error {
	if s.Count < 1 {
		return badinput.Errorf("--shards %d: want 1 or more", s.Count)
	}
	if s.RunName != "" {
		if err := runs.CheckName(s.RunName); err != nil {
			return err
		}
		if noStore && !s.Active() { // sharded, the refusal below says why
			return badinput.Errorf("--run-name names the stored run, and --no-store stores none: give one or the other")
		}
	}
	if !s.Active() {
		if s.Index > 0 {
			return badinput.Errorf("--shard goes with --shards N (N ≥ 2)")
		}
		return nil // --run-name alone names this run
	}
	if s.Index < 0 {
		v := getenv(cluster.IndexEnv)
		if v == "" {
			return badinput.Errorf("--shards %d: want this process's index: --shard I or $%s", s.Count, cluster.IndexEnv)
		}
		i, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return badinput.Errorf("$%s=%q: want a shard index, a whole number", cluster.IndexEnv, v)
		}
		s.Index = i
	}
	s.Spec = loadgen.Shard{Index: s.Index, Count: s.Count}
	if err := s.Spec.Validate(); err != nil {
		return badinput.Errorf("--shard: %v", err)
	}
	switch {
	case s.RunName == "":
		return badinput.Errorf("--shards %d: want --run-name, the name all shards of the run share", s.Count)
	case !seedGiven:
		return badinput.Errorf("--shards %d: want --seed: every shard draws the same schedule from it", s.Count)
	case noStore:
		return badinput.Errorf("--shards and --no-store: shards meet and merge in the run database")
	case s.Timeout <= 0:
		return badinput.Errorf("--shard-timeout %v: want a positive duration", s.Timeout)
	}
	return nil
}

// RefuseUnsplittable refuses, before any shard registers, a load that
// cannot be split across the shards: without a URL each shard would start
// an embedded server of its own, which its partners can never reach; and a
// shard left without a user or a request would register and run nothing.
func (s *Shard) RefuseUnsplittable(url string, lowestUsers float64, requests int64) error {
	switch {
	case !s.Active():
		return nil
	case url == "":
		return badinput.Errorf("--shards %d: want --url: every shard must load one server (without it each would start an embedded server of its own; knee serve runs one)", s.Count)
	case lowestUsers > 0 && lowestUsers < float64(s.Count):
		return badinput.Errorf("--shards %d: --concurrency %g leaves a shard without a user; want at least one user per shard", s.Count, lowestUsers)
	case requests > 0 && requests < int64(s.Count):
		return badinput.Errorf("--shards %d: --requests %d leaves a shard without a request; want at least one per shard", s.Count, requests)
	}
	return nil
}

// shardFingerprint is what every shard must share: the run's settings, less what
// may differ between pods.
func shardFingerprint(config [][2]string) map[string]string {
	fp := map[string]string{}
	for _, kv := range config {
		fp[kv[0]] = kv[1]
	}
	return fp
}

// JoinRun registers this shard, waits for all of them, measures the clock
// offset to the database, and starts the shard's writer.
func (s *Shard) JoinRun(st *store.Store, meta store.RunMeta, config [][2]string, stderr func(string)) (*store.RunWriter, error) {
	ctx := context.Background()
	join, err := st.JoinShard(meta, store.ShardSpec{RunName: s.RunName, Index: s.Index, Count: s.Count, Fingerprint: shardFingerprint(config)})
	if err != nil {
		return nil, shardErr(err)
	}
	s.Join = join
	if join.Attempt > 1 {
		stderr(fmt.Sprintf("shard %d of run %q: attempt %d (a restart); requests it already stored are not stored again", s.Index, s.RunName, join.Attempt))
	}
	stderr(fmt.Sprintf("shard %d of %d of run %q (run %d): waiting for the others (up to %v)", s.Index, s.Count, s.RunName, join.RunID, s.Timeout))
	if s.Start, err = join.WaitStart(ctx, s.Timeout, s.Lead, 100*time.Millisecond); err != nil {
		return nil, shardErr(err)
	}
	if s.Clock, err = cluster.MeasureOffset(ctx, 8, time.Now, st.ServerNow); err != nil {
		return nil, err
	}
	return join.Begin(s.Start, s.Clock.Offset, s.Clock.Uncertainty)
}

// shardErr marks a shard that does not fit its run (store.ErrShard) as
// bad input.
func shardErr(err error) error {
	if errors.Is(err, store.ErrShard) {
		return badinput.Wrap(err)
	}
	return err
}

// WaitStart sleeps until the common start on this machine's clock and
// anchors cfg's schedule on it, so a late wake-up shows as send lag; it
// records when the process actually began. A restarted shard, whose run
// began long ago, starts at once on a schedule of its own.
func (s *Shard) WaitStart(ctx context.Context, cfg *loadgen.Config) error {
	if s.Join == nil {
		return nil
	}
	if s.Join.Attempt > 1 {
		return nil
	}
	origin, err := cluster.WaitUntil(ctx, s.Clock.ToLocal(s.Start))
	if err != nil {
		return err
	}
	cfg.Origin = origin
	return s.Join.SetBegan(s.Clock.ToServer(time.Now()))
}

// Started records this shard's schedule zero, on the shared timeline.
func (s *Shard) Started(at time.Time) error {
	if s.Join == nil {
		return nil
	}
	return s.Join.SetStarted(s.Clock.ToServer(at))
}

// FinishShard ends this shard's part of run w (in st); the shard that
// ends the run stores the summary merged over every shard's records
// (judged as merged says). partial says, when this shard ended a run some
// shard did not complete, that the merged run is not a success.
func FinishShard(st *store.Store, w *store.RunWriter, status string, merged stats.Options) (partial string, err error) {
	_, ended, err := w.FinishShard(status)
	if err != nil || !ended {
		return "", err
	}
	// Summarized as the records stream out of the database: a run of any
	// length is read in bounded memory.
	acc := stats.NewAccumulator(merged)
	if err := st.Records(w.ID(), func(x *record.Request) error {
		if x.Class != record.ProbeClass { // the probes are a class apart, not the load's
			acc.Add(x)
		}
		return nil
	}); err != nil {
		return "", err
	}
	if err := st.SetSummary(w.ID(), acc.Summary()); err != nil {
		return "", err
	}
	// The shard that ends a run some shard did not complete says so and
	// exits 1, as a sweep's shards do: the merged run is not a success.
	shards, count, err := st.RunShards(w.ID())
	if err != nil {
		return "", err
	}
	if missing := MissingShards(shards, count); len(missing) > 0 {
		return fmt.Sprintf("the run ended partial: %d of %d shards complete (not: %s); its figures cover the records stored (this shard's part is complete)",
			count-len(missing), count, strings.Join(missing, ", ")), nil
	}
	return "", nil
}

// MissingShards are the indices of a run's shards that are not complete.
func MissingShards(shards []store.ShardInfo, count int) []string {
	var missing []string
	for i := range count {
		ok := false
		for _, s := range shards {
			ok = ok || (s.Index == i && s.Status == store.StatusComplete)
		}
		if !ok {
			missing = append(missing, strconv.Itoa(i))
		}
	}
	return missing
}

// ShardNotes describe a sharded run for its report: partial or not, each
// shard's records, lag, throughput and errors, and the clocks' largest
// uncertainty.
func ShardNotes(st *store.Store, id int64) ([]string, error) {
	shards, count, err := st.RunShards(id)
	if err != nil || count == 0 {
		return nil, err
	}
	per := map[int]*stats.Accumulator{}
	if err := st.ShardRecords(id, func(s int, r *record.Request) error {
		if per[s] == nil {
			per[s] = stats.NewAccumulator(stats.Options{})
		}
		per[s].Add(r)
		return nil
	}); err != nil {
		return nil, err
	}
	complete := 0
	var worst time.Duration
	var lines []string
	for _, s := range shards {
		if s.Status == store.StatusComplete {
			complete++
		}
		worst = max(worst, s.ClockUncertainty)
		var sum stats.Summary
		if a := per[s.Index]; a != nil {
			sum = a.Summary()
		} else {
			sum = stats.Summarize(nil, stats.Options{})
		}
		lines = append(lines, fmt.Sprintf("shard %d: %s (attempt %d, %s), %d records, %.2f req/s, %d errors, lag p95 %.2f ms, clock %+.3f ms ± %.3f ms",
			s.Index, s.Status, s.Attempt, s.Host, s.Records, sum.RequestThroughputRPS, sum.Errors, sum.Lag.P95,
			float64(s.ClockOffset)/1e6, float64(s.ClockUncertainty)/1e6))
	}
	head := fmt.Sprintf("sharded run: %d of %d shards complete; figures merged over all shards' records", complete, count)
	if missing := MissingShards(shards, count); complete < count {
		head = fmt.Sprintf("partial: %d of %d shards complete (not: %s); figures merged over the records stored so far", complete, count, strings.Join(missing, ", "))
	}
	out := []string{head, fmt.Sprintf("largest clock offset uncertainty among shards: %.3f ms", float64(worst)/1e6)}
	zero, beganSpread, _, err := cluster.RunSpreads(st, id, shards)
	if err != nil {
		return nil, err
	}
	out = append(out, cluster.StartNotes(zero, beganSpread, worst)...)
	return append(out, lines...), nil
}
