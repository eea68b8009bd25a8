package scrape

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
)

// TestJoinTallyOrderFree: the TTFT split tallied as records finish, in any
// order, is the split of the records in request order, to the bit: a live
// run (records as they end) and knee report (records as stored) print the
// same figures.
func TestJoinTallyOrderFree(t *testing.T) {
	var recs []record.Request
	for i := range 500 {
		sent := time.Duration(i)*7*time.Millisecond + time.Duration(i%13)*time.Microsecond
		r := record.Request{ID: int64(i), Scheduled: sent - time.Duration(i%7)*123457, Sent: sent,
			FirstToken: sent + time.Duration(40+i%31)*time.Millisecond + time.Duration(i)*1001, OutputTokens: 1}
		r.Done, r.StreamEnd = r.FirstToken, r.FirstToken
		r.ServerPhases = &record.Phases{Queue: time.Duration(i%9) * 333333, Prefill: 20*time.Millisecond + time.Duration(i)*777}
		if i%11 == 0 {
			r.Error = record.ErrTimeout
		}
		recs = append(recs, r)
	}
	want := Join(recs, nil)
	if want == nil || want.Requests == 0 || !want.HasPhases {
		t.Fatalf("split %+v, want one from per-request phases", want)
	}
	for seed := range uint64(5) {
		shuffled := slices.Clone(recs)
		rand.New(rand.NewPCG(seed, 9)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		var tally JoinTally
		for i := range shuffled {
			tally.Add(&shuffled[i])
		}
		if got := tally.Split(nil); *got != *want {
			t.Errorf("seed %d: tallied %+v, want %+v", seed, *got, *want)
		}
	}
}
