package runs

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/store"
)

func TestConfigPairsKeepOrder(t *testing.T) {
	got := ConfigPairs(json.RawMessage(`{"z": 1, "a": "x", "nested": {"b": true, "c": [1,2]}, "n": null}`))
	want := [][2]string{{"z", "1"}, {"a", "x"}, {"nested.b", "true"}, {"nested.c", "[1,2]"}, {"n", "null"}}
	if len(got) != len(want) {
		t.Fatalf("%v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("pair %d: %v, want %v", i, got[i], want[i])
		}
	}
	if back := ConfigPairs(PairsJSON([][2]string{{"b", "1"}, {"a", "2"}})); len(back) != 2 || back[0][0] != "b" {
		t.Errorf("pairsJSON order lost: %v", back)
	}
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{"24h": now.Add(-24 * time.Hour), "7d": now.AddDate(0, 0, -7), "90m": now.Add(-90 * time.Minute)} {
		if got, err := ParseSince(in, now); err != nil || !got.Equal(want) {
			t.Errorf("ParseSince(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if got, err := ParseSince("2026-11-01", now); err != nil || got.Day() != 1 {
		t.Errorf("date: %v %v", got, err)
	}
}

// knee runs --json keeps its key order (the row, then config and summary)
// and leaves out what a run lacks: an unfinished run has no end.
func TestJSONRowKeysInOrder(t *testing.T) {
	start := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	list := []store.RunInfo{
		{ID: 1, Kind: "bench", Status: "complete", Version: "v1", Start: start, End: start.Add(time.Minute), Records: 3, Config: json.RawMessage(`{"a":"1"}`)},
		{ID: 2, Kind: "sim", Status: "running", Start: start, Config: json.RawMessage(`{}`)},
	}
	var b bytes.Buffer
	if err := JSON(&b, list); err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, b.Bytes()); err != nil {
		t.Fatal(err)
	}
	want := `[{"id":1,"kind":"bench","status":"complete","knee_version":"v1","start":"2026-11-01T10:00:00Z","end":"2026-11-01T10:01:00Z","records":3,"config":{"a":"1"}},` +
		`{"id":2,"kind":"sim","status":"running","start":"2026-11-01T10:00:00Z","records":0,"config":{}}]`
	if compact.String() != want {
		t.Errorf("got  %s\nwant %s", compact.String(), want)
	}
}
