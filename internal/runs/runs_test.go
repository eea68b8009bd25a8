package runs

import (
	"encoding/json"
	"testing"
	"time"
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
