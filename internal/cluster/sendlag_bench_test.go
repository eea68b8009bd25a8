package cluster

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/simserver"
	"github.com/knee-dev/knee/internal/simserver/simservertest"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/store"
	"github.com/knee-dev/knee/internal/store/storetest"
	"github.com/knee-dev/knee/internal/workload"
)

// BenchmarkShardSendLag is the load's send lag (sent − scheduled) when 4
// shards of one open-loop run store their records as they come: 200 req/s
// of Poisson arrivals, 1,200 requests, against knee's simulated server on
// loopback; on SQLite and, when KNEE_TEST_POSTGRES_URL names a server, on
// PostgreSQL. Each shard does what knee bench --shards does: joins, waits
// for the common start, measures its clock against the database's, starts
// its writer, anchors its schedule on the start. It fails if a record was
// not stored.
//
//	go test -run '^$' -bench ShardSendLag -benchtime 1x ./internal/cluster
func BenchmarkShardSendLag(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) { benchShardSendLag(b, b.TempDir()+"/knee.db") })
	b.Run("postgres", func(b *testing.B) { benchShardSendLag(b, storetest.PostgresURL(b)) })
}

const (
	lagShards   = 4
	lagRateRPS  = 200
	lagRequests = 1200
)

func benchShardSendLag(b *testing.B, db string) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url, _ := simservertest.Start(b, func(c *simserver.Config) { c.Engine.MaxModelLen = 8192 })

	var lags, maxes []float64
	for n := range b.N {
		name := "lag-" + strconv.Itoa(n) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		recs, stored := runLagShards(b, ctx, db, url, name)
		if stored != lagRequests || len(recs) != lagRequests {
			b.Fatalf("%d records measured, %d stored; want %d of each", len(recs), stored, lagRequests)
		}
		sum := stats.Summarize(recs, stats.Options{})
		lags = append(lags, sum.Lag.P50, sum.Lag.P99)
		maxes = append(maxes, sum.Lag.Max)
	}
	// The last run's figures (-benchtime 1x: the only one).
	b.ReportMetric(lags[len(lags)-2], "lag-p50-ms")
	b.ReportMetric(lags[len(lags)-1], "lag-p99-ms")
	b.ReportMetric(maxes[len(maxes)-1], "lag-max-ms")
	b.ReportMetric(0, "ns/op") // the wall time is the schedule's, not a cost
}

// runLagShards runs the 4 shards of run name, each with a store of its own
// as a process has, and returns every shard's records and how many the
// database holds once all have finished.
func runLagShards(b *testing.B, ctx context.Context, db, url, name string) ([]record.Request, int) {
	var (
		mu    sync.Mutex
		all   []record.Request
		runID int64
		wg    sync.WaitGroup
	)
	prompt := strings.Repeat("hello ", 32)
	for i := range lagShards {
		wg.Go(func() {
			st, err := store.Open(db)
			if err != nil {
				b.Error(err)
				return
			}
			defer st.Close()
			j, err := st.JoinShard(store.RunMeta{Kind: store.KindBench}, store.ShardSpec{RunName: name, Index: i, Count: lagShards, Fingerprint: map[string]string{"seed": "1"}})
			if err != nil {
				b.Error(err)
				return
			}
			start, err := j.WaitStart(ctx, 30*time.Second, time.Second, 10*time.Millisecond)
			if err != nil {
				b.Error(err)
				return
			}
			clock, err := MeasureOffset(ctx, 8, time.Now, st.ServerNow)
			if err != nil {
				b.Error(err)
				return
			}
			w, err := j.Begin(start, clock.Offset, clock.Uncertainty)
			if err != nil {
				b.Error(err)
				return
			}
			arr, err := workload.NewArrivals(workload.ArrivalPoisson, lagRateRPS, 1, 1)
			if err != nil {
				b.Error(err)
				return
			}
			cfg := loadgen.Config{BaseURL: url, API: "chat", Arrivals: arr, RateRPS: lagRateRPS, Requests: lagRequests,
				IgnoreEOS: true, RequestTimeout: time.Minute, OnRecord: w.Add}
			cfg, src, err := loadgen.Shard{Index: i, Count: lagShards}.Apply(cfg, func(int64) loadgen.Request {
				return loadgen.Request{Prompt: prompt, PromptTokens: 32, MaxTokens: 16}
			})
			if err != nil {
				b.Error(err)
				return
			}
			if cfg.Origin, err = WaitUntil(ctx, clock.ToLocal(start)); err != nil {
				b.Error(err)
				return
			}
			if err := j.SetBegan(clock.ToServer(time.Now())); err != nil {
				b.Error(err)
			}
			run, err := loadgen.Start(ctx, cfg, src)
			if err != nil {
				b.Error(err)
				return
			}
			res := run.Wait()
			if _, _, err := w.FinishShard(store.StatusComplete); err != nil {
				b.Error(err)
			}
			mu.Lock()
			all, runID = append(all, res.Records...), j.RunID
			mu.Unlock()
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	st, err := store.Open(db)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	stored := 0
	if err := st.Records(runID, func(*record.Request) error { stored++; return nil }); err != nil {
		b.Fatal(err)
	}
	return all, stored
}
