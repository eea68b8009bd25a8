package report

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/knee-dev/knee/internal/stats"
)

// tallyRecords is a run of several classes and probes, with failures and
// warm-up, each request's figures different.
func tallyRecords() []record.Request {
	var recs []record.Request
	classes := []string{"", "chat", "batch", record.ProbeClass}
	for i := range 300 {
		at := float64(i * 7)
		r := ok(int64(i), at, at+float64(i%5), at+40+float64(i%23), at+60+float64(i%11), at+90)
		r.Class = classes[(i*7)%len(classes)]
		switch {
		case i%17 == 0:
			r.Error, r.ErrorMessage = record.ErrHTTP5xx, fmt.Sprintf("boom %d", i%3)
		case i%29 == 0:
			r.Warmup = true
		}
		recs = append(recs, r)
	}
	return recs
}

// TestClassTallyMatchesClassSummaries: classes tallied as records finish,
// in any order, are the classes ClassSummaries gives for the records in
// request order — names, order, figures and verdicts — with and without a
// mix's class order and own objectives.
func TestClassTallyMatchesClassSummaries(t *testing.T) {
	objs, err := slo.ParseAll([]string{"p95(ttft)<70ms"})
	if err != nil {
		t.Fatal(err)
	}
	own := map[string]slo.Set{"batch": {objs[0]}}
	for _, tc := range []struct {
		name  string
		objs  slo.Set
		own   map[string]slo.Set
		order []string
	}{
		{"as seen", nil, nil, nil},
		{"mix order and objectives", objs, own, []string{"batch", "absent", "chat"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs := tallyRecords()
			opts := stats.Options{OfferedRateRPS: 3}
			if len(tc.objs) > 0 {
				opts.Good = tc.objs.Good
			}
			_, want := ClassSummaries(recs, opts, tc.objs, tc.own, tc.order)
			shuffled := slices.Clone(recs)
			rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			tally := NewClassTally(opts, tc.objs, tc.own, tc.order)
			for i := range shuffled {
				tally.Add(&shuffled[i])
			}
			got := tally.Classes()
			if len(got) != len(want) || len(want) < 4 {
				t.Fatalf("%d classes tallied, ClassSummaries gives %d (want at least 4)", len(got), len(want))
			}
			for i := range want {
				if !reflect.DeepEqual(got[i], want[i]) {
					t.Errorf("class %d: tallied\n%+v\nClassSummaries\n%+v", i, got[i], want[i])
				}
			}
		})
	}
	one := []record.Request{ok(1, 0, 0, 10, 20), ok(2, 5, 5, 15, 25)}
	tally := NewClassTally(stats.Options{}, nil, nil, nil)
	for i := range one {
		tally.Add(&one[i])
	}
	if got := tally.Classes(); got != nil {
		t.Errorf("a run of one class tallies %d classes, want none (as ClassSummaries)", len(got))
	}
}

// TestErrorTallyBounded: the error list counts every message exactly while
// they are few (as CommonErrors over the records), and a server that puts
// a counter in every message grows the tally no further than its bound,
// the rest counted together and said so.
func TestErrorTallyBounded(t *testing.T) {
	recs := tallyRecords()
	var tally ErrorTally
	for i := len(recs) - 1; i >= 0; i-- {
		tally.Add(&recs[i])
	}
	if got, want := tally.Top(5), CommonErrors(recs, 5); !reflect.DeepEqual(got, want) || len(want) == 0 {
		t.Errorf("tallied %v, CommonErrors %v", got, want)
	}

	var counter ErrorTally
	const n = 3 * maxErrorKinds
	for i := range n {
		r := record.Request{ID: int64(i), Error: record.ErrHTTP5xx, ErrorMessage: fmt.Sprintf("request %d failed", i)}
		counter.Add(&r)
	}
	if len(counter.counts) > maxErrorKinds+1 {
		t.Errorf("%d distinct messages kept, want at most %d", len(counter.counts), maxErrorKinds+1)
	}
	top := counter.Top(1)
	if len(top) != 1 || top[0].Message != otherMessages || top[0].Count != n-maxErrorKinds {
		t.Errorf("top message %+v, want %q counted %d times", top, otherMessages, n-maxErrorKinds)
	}
	total := 0
	for _, m := range counter.Top(0) {
		total += m.Count
	}
	if total != n {
		t.Errorf("the tally counts %d failures of %d", total, n)
	}
}
