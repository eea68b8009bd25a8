package cli

import (
	"context"
	"errors"
	"fmt"
	"github.com/spf13/pflag"
	"strconv"
	"strings"
	"time"

	"github.com/knee-dev/knee/internal/cluster"
	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/runs"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/store"
)

// shardFlags run one shard of a load split across processes (bench
// --shards N): the index comes from --shard or JOB_COMPLETION_INDEX, all
// shards share --run-name and meet in the run database (docs/cluster.md).
type shardFlags struct {
	shards  int
	shard   int
	runName string
	timeout time.Duration
	lead    time.Duration

	spec   loadgen.Shard
	join   *store.ShardJoin
	clock  cluster.ClockOffset
	start  time.Time // the common start, on the database's clock
	merged stats.Options
	// othersStopped: a sharded sweep ended at a step another shard left
	// partial; this shard measured all it was asked to.
	othersStopped bool
}

func (s *shardFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&s.shards, "shards", 1, "split the run's schedule across this many processes (each runs one shard; they meet in the --db database)")
	fs.IntVar(&s.shard, "shard", -1, "this process's shard index, 0 to --shards−1 (default: $"+cluster.IndexEnv+", as a Kubernetes Indexed Job sets it)")
	fs.StringVar(&s.runName, "run-name", "", "the run's name, unique in the database, taken wherever a run id is (knee report NAME); with --shards, the name all shards share")
	fs.DurationVar(&s.timeout, "shard-timeout", 5*time.Minute, "with --shards: how long to wait for every shard to register before failing")
	s.lead = 2 * time.Second
}

func (s *shardFlags) active() bool { return s.shards > 1 }

// resolve checks the shard flags; seedGiven says whether --seed was set
// (every shard must draw one schedule).
func (s *shardFlags) resolve(env *Env, seedGiven, noStore bool) error {
	if s.shards < 1 {
		return Usagef("--shards %d: want 1 or more", s.shards)
	}
	if s.runName != "" {
		if err := runs.CheckName(s.runName); err != nil {
			return err
		}
		if noStore && !s.active() { // sharded, the refusal below says why
			return Usagef("--run-name names the stored run, and --no-store stores none: give one or the other")
		}
	}
	if !s.active() {
		if s.shard > 0 {
			return Usagef("--shard goes with --shards N (N ≥ 2)")
		}
		return nil // --run-name alone names this run
	}
	if s.shard < 0 {
		v := env.Getenv(cluster.IndexEnv)
		if v == "" {
			return Usagef("--shards %d: want this process's index: --shard I or $%s", s.shards, cluster.IndexEnv)
		}
		i, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return Usagef("$%s=%q: want a shard index, a whole number", cluster.IndexEnv, v)
		}
		s.shard = i
	}
	s.spec = loadgen.Shard{Index: s.shard, Count: s.shards}
	if err := s.spec.Validate(); err != nil {
		return Usagef("--shard: %v", err)
	}
	switch {
	case s.runName == "":
		return Usagef("--shards %d: want --run-name, the name all shards of the run share", s.shards)
	case !seedGiven:
		return Usagef("--shards %d: want --seed: every shard draws the same schedule from it", s.shards)
	case noStore:
		return Usagef("--shards and --no-store: shards meet and merge in the run database")
	case s.timeout <= 0:
		return Usagef("--shard-timeout %v: want a positive duration", s.timeout)
	}
	return nil
}

// refuseUnsplittable refuses, before any shard registers, a load that
// cannot be split across the shards: without a URL each shard would start
// an embedded server of its own, which its partners can never reach; and a
// shard left without a user or a request would register and run nothing.
func (s *shardFlags) refuseUnsplittable(url string, lowestUsers float64, requests int64) error {
	switch {
	case !s.active():
		return nil
	case url == "":
		return Usagef("--shards %d: want --url: every shard must load one server (without it each would start an embedded server of its own; knee serve runs one)", s.shards)
	case lowestUsers > 0 && lowestUsers < float64(s.shards):
		return Usagef("--shards %d: --concurrency %g leaves a shard without a user; want at least one user per shard", s.shards, lowestUsers)
	case requests > 0 && requests < int64(s.shards):
		return Usagef("--shards %d: --requests %d leaves a shard without a request; want at least one per shard", s.shards, requests)
	}
	return nil
}

// fingerprint is what every shard must share: the run's settings, less what
// may differ between pods.
func shardFingerprint(config [][2]string) map[string]string {
	fp := map[string]string{}
	for _, kv := range config {
		fp[kv[0]] = kv[1]
	}
	return fp
}

// joinRun registers this shard, waits for all of them, measures the clock
// offset to the database, and starts the shard's writer.
func (s *shardFlags) joinRun(st *store.Store, meta store.RunMeta, config [][2]string, stderr func(string)) (*store.RunWriter, error) {
	ctx := context.Background()
	join, err := st.JoinShard(meta, store.ShardSpec{RunName: s.runName, Index: s.shard, Count: s.shards, Fingerprint: shardFingerprint(config)})
	if err != nil {
		return nil, shardErr(err)
	}
	s.join = join
	if join.Attempt > 1 {
		stderr(fmt.Sprintf("shard %d of run %q: attempt %d (a restart); requests it already stored are not stored again", s.shard, s.runName, join.Attempt))
	}
	stderr(fmt.Sprintf("shard %d of %d of run %q (run %d): waiting for the others (up to %v)", s.shard, s.shards, s.runName, join.RunID, s.timeout))
	if s.start, err = join.WaitStart(ctx, s.timeout, s.lead, 100*time.Millisecond); err != nil {
		return nil, shardErr(err)
	}
	if s.clock, err = cluster.MeasureOffset(ctx, 8, time.Now, st.ServerNow); err != nil {
		return nil, err
	}
	return join.Begin(s.start, s.clock.Offset, s.clock.Uncertainty)
}

func shardErr(err error) error {
	if errors.Is(err, store.ErrShard) {
		return &UsageError{Err: err}
	}
	return err
}

// waitStart sleeps until the common start on this machine's clock and
// anchors cfg's schedule on it, so a late wake-up shows as send lag; it
// records when the process actually began. A restarted shard, whose run
// began long ago, starts at once on a schedule of its own.
func (s *shardFlags) waitStart(ctx context.Context, cfg *loadgen.Config) error {
	if s.join == nil {
		return nil
	}
	if s.join.Attempt > 1 {
		return nil
	}
	origin, err := cluster.WaitUntil(ctx, s.clock.ToLocal(s.start))
	if err != nil {
		return err
	}
	cfg.Origin = origin
	return s.join.SetBegan(s.clock.ToServer(time.Now()))
}

// started records this shard's schedule zero, on the shared timeline.
func (s *shardFlags) started(at time.Time) error {
	if s.join == nil {
		return nil
	}
	return s.join.SetStarted(s.clock.ToServer(at))
}

// finishShard ends this shard's part; the shard that ends the run stores
// the summary merged over every shard's records.
func (r *storedRun) finishShard(status string) error {
	_, ended, err := r.shardW.FinishShard(status)
	if err != nil || !ended {
		return err
	}
	// Summarized as the records stream out of the database: a run of any
	// length is read in bounded memory.
	acc := stats.NewAccumulator(r.shard.merged)
	if err := r.st.Records(r.w.ID(), func(x *record.Request) error {
		if x.Class != record.ProbeClass { // the probes are a class apart, not the load's
			acc.Add(x)
		}
		return nil
	}); err != nil {
		return err
	}
	if err := r.st.SetSummary(r.w.ID(), acc.Summary()); err != nil {
		return err
	}
	// The shard that ends a run some shard did not complete says so and
	// exits 1, as a sweep's shards do: the merged run is not a success.
	shards, count, err := r.st.RunShards(r.w.ID())
	if err != nil {
		return err
	}
	if missing := missingShards(shards, count); len(missing) > 0 {
		r.partialRun = fmt.Sprintf("the run ended partial: %d of %d shards complete (not: %s); its figures cover the records stored (this shard's part is complete)",
			count-len(missing), count, strings.Join(missing, ", "))
	}
	return nil
}

// missingShards are the indices of a run's shards that are not complete.
func missingShards(shards []store.ShardInfo, count int) []string {
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

// shardNotes describe a sharded run for its report: partial or not, each
// shard's records, lag, throughput and errors, and the clocks' largest
// uncertainty.
func shardNotes(st *store.Store, id int64) ([]string, error) {
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
	if missing := missingShards(shards, count); complete < count {
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
