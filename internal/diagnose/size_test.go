package diagnose

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// lowered sets the bounds to the given sizes for one test.
func lowered(t *testing.T, whole, held int64) {
	oldW, oldH := MaxWholeJSON, MaxHeldBytes
	MaxWholeJSON, MaxHeldBytes = whole, held
	t.Cleanup(func() { MaxWholeJSON, MaxHeldBytes = oldW, oldH })
}

// An input over its format's bound is refused with the reason: from its
// size before anything is read, and, when the size is not known (stdin),
// as soon as the bound is passed, never read to its end. Under the bound
// it reads as before.
func TestReadRefusesPastTheBound(t *testing.T) {
	lowered(t, 4<<10, 8<<10)
	var recs strings.Builder
	for i := range 200 { // 200 records, about 20 KiB
		fmt.Fprintf(&recs, `{"id":%d,"scheduled_ms":%d,"sent_ms":%d,"first_token_ms":%d,"done_ms":%d,"output_tokens":4,"input_tokens":8}`+"\n", i, i, i, i+50, i+90)
	}
	var csv strings.Builder
	csv.WriteString("queue_ms,prefill_ms,decode_ms\n")
	for range 2000 {
		csv.WriteString("1,20,300\n")
	}
	vllm := `{"duration": 1, "completed": 3000, "ttfts": [` + strings.Repeat("0.1, ", 2999) + "0.1]}"
	for _, c := range []struct {
		name, data string
		what       string
		limit      int64
	}{
		{"records.jsonl", recs.String(), "a knee records.jsonl", 8 << 10},
		{"phase CSV", csv.String(), "a phase CSV", 8 << 10},
		{"vLLM JSON", vllm, "a vLLM result JSON", 4 << 10},
	} {
		for _, size := range []int64{int64(len(c.data)), -1} {
			_, _, err := ReadSized(strings.NewReader(c.data), size)
			var tl *TooLargeError
			if !errors.As(err, &tl) || tl.What != c.what || tl.Limit != c.limit || !strings.Contains(err.Error(), "knee diagnose reads at most") {
				t.Errorf("%s (size %d): %v, want a TooLargeError for %s", c.name, size, err, c.what)
			}
		}
		// The same input under a bound it fits reads.
		lowered(t, 1<<20, 1<<20)
		if got, _, err := ReadSized(strings.NewReader(c.data), int64(len(c.data))); err != nil || len(got) == 0 {
			t.Errorf("%s under the bound: %d records, %v", c.name, len(got), err)
		}
		lowered(t, 4<<10, 8<<10)
	}
}
