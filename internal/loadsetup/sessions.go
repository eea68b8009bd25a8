package loadsetup

import (
	"strconv"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/sim"
	"github.com/knee-dev/knee/internal/workload"
)

// Sessions are multi-turn conversations (docs/workloads.md): each turn
// sends the whole history, the server's answers included, plus a new user
// message of the input length. Count 0: none.
type Sessions struct {
	Count int
	Turns string // a length distribution of turns per conversation
	Think string // the user's pause between an answer and the next turn
}

// Parse checks the session settings against the other settings given and
// returns the turns' distribution and the think time.
func (s *Sessions) Parse(given Given) (workload.Dist, workload.Think, error) {
	if s.Count == 0 {
		for _, n := range []string{"turns", "think-time"} {
			if given[n] {
				return nil, workload.Think{}, badinput.Errorf("--%s needs --sessions N", n)
			}
		}
		return nil, workload.Think{}, nil
	}
	if s.Count < 0 || s.Count > MaxInFlight {
		return nil, workload.Think{}, badinput.Errorf("--sessions %d: want 1 to %d conversations", s.Count, MaxInFlight)
	}
	for _, n := range []string{"concurrency", "rate", "trace", "max-concurrency", "arrival"} {
		if given[n] {
			return nil, workload.Think{}, badinput.Errorf("--%s does not apply with --sessions: each conversation sends its next turn when it has read the answer", n)
		}
	}
	turns, err := workload.ParseDist(s.Turns)
	if err != nil {
		return nil, workload.Think{}, badinput.Errorf("--turns: %v", err)
	}
	tr, ok := workload.ParseThink(s.Think)
	if !ok {
		return nil, workload.Think{}, badinput.Errorf("--think-time %q: want a duration such as 2s or a range such as 1s:5s", s.Think)
	}
	return turns, tr, nil
}

// TurnSource gives each conversation its turns (workload.SessionItems).
func TurnSource(gen interface{ Item(int64) workload.Item }, turns workload.Dist, think workload.Think, seed uint64) func(session, turn int) (loadgen.SessionTurn, bool) {
	next := workload.SessionItems(gen, turns, think, seed)
	return func(session, turn int) (loadgen.SessionTurn, bool) {
		it, d, ok := next(session, turn)
		if !ok {
			return loadgen.SessionTurn{}, false
		}
		return loadgen.SessionTurn{Think: d, Request: loadgen.Request{Prompt: it.Prompt, PromptTokens: it.InputTokens,
			RequestedTokens: it.RequestedTokens, MaxTokens: it.MaxTokens}}, true
	}
}

// SimTurnSource is TurnSource for the simulator: lengths, no text.
func SimTurnSource(gen sim.Lengths, turns workload.Dist, think workload.Think, seed uint64) func(session, turn int) (sim.SessionTurn, bool) {
	next := workload.SessionLengths(gen, turns, think, seed)
	return func(session, turn int) (sim.SessionTurn, bool) {
		in, out, d, ok := next(session, turn)
		if !ok {
			return sim.SessionTurn{}, false
		}
		return sim.SessionTurn{InputTokens: in, OutputTokens: out, Think: d}, true
	}
}

// Config lists the session settings for stored runs (none without).
func (s *Sessions) Config() [][2]string {
	if s.Count == 0 {
		return nil
	}
	return [][2]string{{"sessions", strconv.Itoa(s.Count)}, {"turns", s.Turns}, {"think_time", s.Think}}
}
