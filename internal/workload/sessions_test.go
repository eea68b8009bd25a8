package workload

import (
	"testing"
	"time"
)

func TestParseThink(t *testing.T) {
	for s, want := range map[string]Think{"0s": {}, "2s": {2 * time.Second, 2 * time.Second}, "1s: 5s": {time.Second, 5 * time.Second}} {
		if got, ok := ParseThink(s); !ok || got != want {
			t.Errorf("%q: %v %v, want %v", s, got, ok, want)
		}
	}
	for _, s := range []string{"", "2", "5s:1s", "-1s", "1s:x"} {
		if got, ok := ParseThink(s); ok {
			t.Errorf("%q: accepted as %v", s, got)
		}
	}
}

// A conversation's turn count is one draw per conversation: its turns run
// from 1 to that count and none after; think times stay in their range and
// repeat with the seed.
func TestTurnPlan(t *testing.T) {
	turns, err := ParseDist("2:6")
	if err != nil {
		t.Fatal(err)
	}
	think := Think{Lo: time.Second, Hi: 3 * time.Second}
	for session := range 20 {
		last := 0
		for turn := 1; turn <= 10; turn++ {
			i, d, ok := TurnPlan(turns, think, 42, session, turn)
			if i != int64(session)<<20|int64(turn) || d < think.Lo || d >= think.Hi {
				t.Fatalf("session %d turn %d: index %d, think %v", session, turn, i, d)
			}
			if _, d2, _ := TurnPlan(turns, think, 42, session, turn); d2 != d {
				t.Fatalf("think time does not repeat: %v then %v", d, d2)
			}
			if ok {
				if last != turn-1 {
					t.Fatalf("session %d: turn %d after turn %d ended it", session, turn, last)
				}
				last = turn
			}
		}
		if last < 2 || last > 6 {
			t.Errorf("session %d: %d turns, want 2 to 6", session, last)
		}
	}
}

// The simulator's lengths are the items' lengths, turn for turn.
func TestSessionLengthsFollowItems(t *testing.T) {
	in, _ := ParseDist("32:96")
	out, _ := ParseDist("8:24")
	turns, _ := ParseDist("3")
	gen, err := NewGenerator(Spec{Input: in, Output: out, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	items, lengths := SessionItems(gen, turns, Think{}, 7), SessionLengths(gen, turns, Think{}, 7)
	for turn := 1; turn <= 4; turn++ {
		it, _, ok := items(1, turn)
		in, out, _, ok2 := lengths(1, turn)
		if ok != ok2 || ok != (turn <= 3) || (ok && (in != it.InputTokens || out != it.MaxTokens)) {
			t.Errorf("turn %d: item %d/%d %v, lengths %d/%d %v", turn, it.InputTokens, it.MaxTokens, ok, in, out, ok2)
		}
	}
}
