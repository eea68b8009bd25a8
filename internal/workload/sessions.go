package workload

import (
	"math/rand/v2"
	"strings"
	"time"
)

// Think is the user's pause between an answer and the next turn, drawn
// uniformly from Lo to Hi (--think-time).
type Think struct{ Lo, Hi time.Duration }

// ParseThink reads a duration (2s) or a range (1s:5s); false when s is
// neither, or the range runs backwards.
func ParseThink(s string) (Think, bool) {
	var t Think
	lo, hi, isRange := strings.Cut(s, ":")
	var err error
	if t.Lo, err = time.ParseDuration(strings.TrimSpace(lo)); err == nil && isRange {
		t.Hi, err = time.ParseDuration(strings.TrimSpace(hi))
	} else {
		t.Hi = t.Lo
	}
	return t, err == nil && t.Lo >= 0 && t.Hi >= t.Lo
}

// TurnPlan is conversation session's turn: the workload index of its new
// message, the think time before it, and whether it has one (its turn
// count is drawn from turns, seeded by the run's seed and session).
func TurnPlan(turns Dist, think Think, seed uint64, session, turn int) (int64, time.Duration, bool) {
	rng := rand.New(rand.NewPCG(seed^0x7468696e6b000000, uint64(session)<<20|uint64(turn)))
	d := think.Lo
	if think.Hi > think.Lo {
		d += time.Duration(rng.Int64N(int64(think.Hi - think.Lo)))
	}
	rng = rand.New(rand.NewPCG(seed^0x73657373696f6e73, uint64(session)))
	return int64(session)<<20 | int64(turn), d, turn <= turns.Sample(rng)
}

// SessionItems gives each conversation's turns for a real server: a
// ShareGPT dataset's own turns, as many as it had, else gen's items by
// TurnPlan.
func SessionItems(gen interface{ Item(int64) Item }, turns Dist, think Think, seed uint64) func(session, turn int) (Item, time.Duration, bool) {
	conv, _ := gen.(*Generator)
	return func(session, turn int) (Item, time.Duration, bool) {
		i, d, ok := TurnPlan(turns, think, seed, session, turn)
		var it Item
		switch {
		case conv != nil && conv.Conversations():
			it, ok = conv.ConversationTurn(session, turn)
		case ok:
			it = gen.Item(i)
		}
		return it, d, ok
	}
}

// SessionLengths is SessionItems for the simulator: lengths, no text.
func SessionLengths(gen interface{ Lengths(int64) (int, int) }, turns Dist, think Think, seed uint64) func(session, turn int) (in, out int, d time.Duration, ok bool) {
	conv, _ := gen.(*Generator)
	return func(session, turn int) (in, out int, d time.Duration, ok bool) {
		var i int64
		i, d, ok = TurnPlan(turns, think, seed, session, turn)
		switch {
		case conv != nil && conv.Conversations():
			var it Item
			it, ok = conv.ConversationTurn(session, turn)
			in, out = it.InputTokens, it.MaxTokens
		case ok:
			in, out = gen.Lengths(i)
		}
		return in, out, d, ok
	}
}
