package runs

import (
	"bytes"
	"encoding/csv"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/store"
	"github.com/knee-dev/knee/internal/store/shardtest"
)

// A sharded sweep stores each record under step × 2^44 + its number in the
// step; knee records shows the number within the step, beside its step,
// as one process's sweep does.
func TestExportShardedSweepNumbersWithinStep(t *testing.T) {
	sw := shardtest.Start(t, "ids", 2)
	st, writers, joins := sw.Store, sw.Writers, sw.Joins
	// Steps 0 and 1, requests 0..3 each, shard = request mod 2.
	for step := range 2 {
		for _, w := range writers {
			w.SetStep(step)
		}
		for id := range int64(4) {
			ms := time.Duration(id+1) * time.Millisecond
			writers[id%2].Add(&record.Request{ID: store.SweepRecordID(step, id), Sent: ms, FirstToken: 2 * ms, Done: 3 * ms, OutputTokens: 4, InputTokens: 8})
		}
		for _, w := range writers {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	id := joins[0].RunID

	var out bytes.Buffer
	if _, err := (Export{Format: "csv", Step: -1}).Write(&out, st, id); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&out).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[[2]string]int{}
	for _, row := range rows[1:] {
		seen[[2]string{row[1], row[0]}]++ // step, id
	}
	for _, step := range []string{"0", "1"} {
		for _, n := range []string{"0", "1", "2", "3"} {
			if seen[[2]string{step, n}] != 1 {
				t.Errorf("step %s request %s listed %d times, want once; rows: %v", step, n, seen[[2]string{step, n}], rows)
			}
		}
	}
	if len(rows) != 9 {
		t.Errorf("%d rows, want a header and 8 records", len(rows))
	}

	out.Reset()
	if _, err := (Export{Format: "jsonl", Step: -1}).Write(&out, st, id); err != nil {
		t.Fatal(err)
	}
	recs, err := record.ReadAll(&out)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.ID < 0 || r.ID > 3 {
			t.Errorf("jsonl record id %d, want its number within its step (0 to 3)", r.ID)
		}
	}
	if len(recs) != 8 {
		t.Errorf("%d jsonl records, want 8", len(recs))
	}
}
