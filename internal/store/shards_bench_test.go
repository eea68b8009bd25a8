package store

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/store/storetest"
)

// BenchmarkShardWriters is records stored per second by 4 shards of one
// run writing at once, end to end (each FinishShard waits for its last
// batch): on SQLite, and on PostgreSQL (COPY through a staging table, for
// the idempotent insert) when KNEE_TEST_POSTGRES_URL names a server.
//
//	go test -run '^$' -bench ShardWriters -benchtime 20000x ./internal/store
func BenchmarkShardWriters(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) { benchShardWriters(b, b.TempDir()+"/knee.db") })
	b.Run("postgres", func(b *testing.B) { benchShardWriters(b, storetest.PostgresURL(b)) })
}

func benchShardWriters(b *testing.B, db string) {
	st, err := Open(db)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	const shards = 4
	name := "bench-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	writers := make([]*RunWriter, shards)
	for i := range shards {
		j, err := st.JoinShard(RunMeta{Kind: KindBench}, ShardSpec{RunName: name, Index: i, Count: shards})
		if err != nil {
			b.Fatal(err)
		}
		if i == shards-1 {
			if _, err := j.WaitStart(context.Background(), time.Second, 0, time.Millisecond); err != nil {
				b.Fatal(err)
			}
		}
		if writers[i], err = j.Begin(time.Now(), 0, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	var wg sync.WaitGroup
	for i, w := range writers {
		wg.Go(func() {
			r := rec(0, 20*time.Millisecond)
			for k := i; k < b.N; k += shards {
				r.ID = int64(k)
				w.Add(&r)
			}
			if _, _, err := w.FinishShard(StatusComplete); err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
