// Package shardtest gives tests a sharded sweep in a fresh SQLite store:
// its shards joined, started and writing, so that a test states only the
// records it stores. (Not in storetest: the store's own tests import that
// package, so it cannot import the store.)
package shardtest

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/store"
)

// Sweep is a sharded sweep run being written.
type Sweep struct {
	Store   *store.Store
	RunID   int64
	Joins   []*store.ShardJoin
	Writers []*store.RunWriter
}

// Start opens a store in t's temporary folder and joins and begins n
// shards of the sweep run named name; the store closes when t ends.
func Start(t testing.TB, name string, n int) Sweep {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "knee.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	joins := make([]*store.ShardJoin, n)
	for i := range n {
		if joins[i], err = st.JoinShard(store.RunMeta{Kind: store.KindSweep}, store.ShardSpec{RunName: name, Index: i, Count: n, Fingerprint: map[string]string{"seed": "1"}}); err != nil {
			t.Fatal(err)
		}
	}
	s := Sweep{Store: st, RunID: joins[0].RunID, Joins: joins, Writers: make([]*store.RunWriter, n)}
	for i, j := range joins {
		start, err := j.WaitStart(context.Background(), time.Second, 0, 5*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if s.Writers[i], err = j.Begin(start, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// SetStep moves every shard's writer to step.
func (s Sweep) SetStep(step int) {
	for _, w := range s.Writers {
		w.SetStep(step)
	}
}

// Flush writes every shard's buffered records.
func (s Sweep) Flush(t testing.TB) {
	t.Helper()
	for _, w := range s.Writers {
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
}
