package record

import (
	"encoding/json"
	"testing"
	"time"
)

// An answer of items has E2E but no first token, and keeps both through
// JSONL.
func TestItemsRecordRoundTrip(t *testing.T) {
	r := Request{ID: 3, Sent: 10 * time.Millisecond, Done: 45 * time.Millisecond, StreamEnd: 45 * time.Millisecond,
		Items: 8, InputTokens: 512, TokenSource: TokensFromUsage}
	if _, ok := r.TTFT(); ok {
		t.Error("an items record has a TTFT")
	}
	if _, ok := r.TPOT(); ok {
		t.Error("an items record has a TPOT")
	}
	if e2e, ok := r.E2E(); !ok || e2e != 35*time.Millisecond {
		t.Errorf("E2E = %v, %v; want 35ms", e2e, ok)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var w map[string]any
	json.Unmarshal(b, &w)
	if w["items"] != 8.0 || w["e2e_ms"] != 35.0 || w["ttft_ms"] != nil {
		t.Errorf("JSONL %s: want items 8, e2e_ms 35, no ttft_ms", b)
	}
	var back Request
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if e2e, ok := back.E2E(); back.Items != 8 || !ok || e2e != 35*time.Millisecond {
		t.Errorf("read back %+v", back)
	}
	// Failed before its answer: no E2E.
	r.Done = 0
	if _, ok := r.E2E(); ok {
		t.Error("E2E without an end")
	}
}
