package cli

import (
	"strconv"

	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/sim"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/workload"
	"github.com/spf13/pflag"
)

// sessionFlags run multi-turn conversations (docs/workloads.md): each turn
// sends the whole history, the server's answers included, plus a new user
// message of --input-tokens.
type sessionFlags struct {
	sessions int
	turns    string
	think    string
}

func (s *sessionFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&s.sessions, "sessions", 0, "run this many multi-turn conversations at once: each turn sends the history (prompts and the server's answers) plus a new --input-tokens message")
	fs.StringVar(&s.turns, "turns", "4", "with --sessions: turns per conversation, a length distribution (4, 2:8, normal:4,1)")
	fs.StringVar(&s.think, "think-time", "0s", "with --sessions: the user's pause between an answer and the next turn: a duration (2s) or a uniform range (1s:5s)")
}

func (s *sessionFlags) parse(fs *pflag.FlagSet) (workload.Dist, workload.Think, error) {
	set := map[string]bool{}
	fs.Visit(func(f *pflag.Flag) { set[f.Name] = true })
	if s.sessions == 0 {
		for _, n := range []string{"turns", "think-time"} {
			if set[n] {
				return nil, workload.Think{}, Usagef("--%s needs --sessions N", n)
			}
		}
		return nil, workload.Think{}, nil
	}
	if s.sessions < 0 || s.sessions > maxInFlight {
		return nil, workload.Think{}, Usagef("--sessions %d: want 1 to %d conversations", s.sessions, maxInFlight)
	}
	for _, n := range []string{"concurrency", "rate", "trace", "max-concurrency", "arrival"} {
		if set[n] {
			return nil, workload.Think{}, Usagef("--%s does not apply with --sessions: each conversation sends its next turn when it has read the answer", n)
		}
	}
	turns, err := workload.ParseDist(s.turns)
	if err != nil {
		return nil, workload.Think{}, Usagef("--turns: %v", err)
	}
	tr, ok := workload.ParseThink(s.think)
	if !ok {
		return nil, workload.Think{}, Usagef("--think-time %q: want a duration such as 2s or a range such as 1s:5s", s.think)
	}
	return turns, tr, nil
}

// turnSource gives each conversation its turns (workload.SessionItems).
func (s *sessionFlags) turnSource(gen interface{ Item(int64) workload.Item }, turns workload.Dist, think workload.Think, seed uint64) func(session, turn int) (loadgen.SessionTurn, bool) {
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

// simTurnSource is turnSource for the simulator: lengths, no text.
func (s *sessionFlags) simTurnSource(gen sim.Lengths, turns workload.Dist, think workload.Think, seed uint64) func(session, turn int) (sim.SessionTurn, bool) {
	next := workload.SessionLengths(gen, turns, think, seed)
	return func(session, turn int) (sim.SessionTurn, bool) {
		in, out, d, ok := next(session, turn)
		if !ok {
			return sim.SessionTurn{}, false
		}
		return sim.SessionTurn{InputTokens: in, OutputTokens: out, Think: d}, true
	}
}

// sessionNotes report the conversations (stats.SessionNotes).
var sessionNotes = stats.SessionNotes

// sessionConfig lists the session settings for stored runs.
func (s *sessionFlags) config() [][2]string {
	if s.sessions == 0 {
		return nil
	}
	return [][2]string{{"sessions", strconv.Itoa(s.sessions)}, {"turns", s.turns}, {"think_time", s.think}}
}

// flagGiven reports whether the flag name was set on the command line.
func flagGiven(fs *pflag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *pflag.Flag) { given = given || f.Name == name })
	return given
}
