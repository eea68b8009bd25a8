package runlife

import (
	"runtime"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/stats"
)

// endlessRecord is request i of a run against a server that streams
// forever: failed at the chunk bound with 512 chunk times (as issue 43
// item 3's runs were), every third one a completed request, all within
// the first 100 s.
func endlessRecord(i int) record.Request {
	sent := time.Duration(i%100_000) * time.Millisecond
	r := record.Request{ID: int64(i), Scheduled: sent, Sent: sent, InputTokens: 16, TokenSource: record.TokensFromUsage}
	for k := range 512 {
		r.TokenTimes = append(r.TokenTimes, sent+time.Duration(20+k)*time.Millisecond)
	}
	r.FirstToken, r.Done = r.TokenTimes[0], r.TokenTimes[len(r.TokenTimes)-1]
	r.StreamEnd, r.OutputTokens = r.Done, len(r.TokenTimes)
	if i%3 != 0 {
		r.Error, r.ErrorMessage = record.ErrBadPayload, "the stream sent more content chunks than max_tokens allows"
	}
	return r
}

// tallyHeap is the live heap after a tally took n endless records.
func tallyHeap(n int) (heap uint64, tally *Tally) {
	tally = NewTally(stats.Options{Series: true}, nil, nil, nil, 1<<20)
	for i := range n {
		r := endlessRecord(i)
		tally.Add(&r)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc, tally
}

// TestRunTallyMemoryFlatOverRecords: what bench keeps of a run while it
// runs does not grow with the number of records: ten times the records
// of an endless stream (4 KiB of chunk times each) cost the tally a few
// bytes each — the 16 bytes per request of the exact in-flight count —
// where holding the records (as Result.Records did) cost all of them.
// The records kept for report.html are dropped past their budget.
func TestRunTallyMemoryFlatOverRecords(t *testing.T) {
	const few, many = 2_000, 20_000
	base, small := tallyHeap(few)
	runtime.KeepAlive(small)
	small = nil
	top, big := tallyHeap(many)
	perRecord := (float64(top) - float64(base)) / (many - few)
	if perRecord > 128 {
		t.Errorf("the tally's heap grew %.0f bytes per record from %d to %d records, want under 128 (a record holds %d)",
			perRecord, few, many, RecordBytes(ptr(endlessRecord(1))))
	}
	if big.kept.recs != nil || !big.kept.over {
		t.Errorf("%d records kept past a 1 MiB budget", len(big.kept.recs))
	}
	sum, _ := big.Summary()
	if sum.Requests != many || sum.Errors != many-many/3-1 {
		t.Errorf("summary of %d requests, %d errors; want %d and %d", sum.Requests, sum.Errors, many, many-many/3-1)
	}
	if top := big.Errors.Top(1); len(top) != 1 || top[0].Count != sum.Errors {
		t.Errorf("error messages %+v, want one counted %d times", top, sum.Errors)
	}
	runtime.KeepAlive(big)
}

func ptr[T any](v T) *T { return &v }
