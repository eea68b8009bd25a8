package store

import (
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/stats"
)

// BenchmarkRunWriterAdd is the cost of Add on loadgen's hot path (queueing
// only; the database work happens on the writer goroutine).
func BenchmarkRunWriterAdd(b *testing.B) {
	st, err := Open(b.TempDir() + "/knee.db")
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	w, err := st.BeginRun(RunMeta{Kind: KindBench})
	if err != nil {
		b.Fatal(err)
	}
	r := rec(1, 20*time.Millisecond)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		w.Add(&r)
	}
	b.StopTimer()
	w.Finish(stats.Summary{}, StatusComplete)
}

// BenchmarkRunWriterThroughput is records stored per second end to end
// (Add, then Finish waits for every batch to be committed).
func BenchmarkRunWriterThroughput(b *testing.B) {
	st, err := Open(b.TempDir() + "/knee.db")
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	w, err := st.BeginRun(RunMeta{Kind: KindBench})
	if err != nil {
		b.Fatal(err)
	}
	r := rec(1, 20*time.Millisecond)
	b.ResetTimer()
	for i := range b.N {
		r.ID = int64(i)
		w.Add(&r)
	}
	if err := w.Finish(stats.Summary{}, StatusComplete); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
