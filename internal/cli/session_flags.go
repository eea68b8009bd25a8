package cli

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

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

// thinkRange is the parsed --think-time.
type thinkRange struct{ lo, hi time.Duration }

func (s *sessionFlags) parse(fs *pflag.FlagSet) (workload.Dist, thinkRange, error) {
	set := map[string]bool{}
	fs.Visit(func(f *pflag.Flag) { set[f.Name] = true })
	if s.sessions == 0 {
		for _, n := range []string{"turns", "think-time"} {
			if set[n] {
				return nil, thinkRange{}, Usagef("--%s needs --sessions N", n)
			}
		}
		return nil, thinkRange{}, nil
	}
	if s.sessions < 0 || s.sessions > maxInFlight {
		return nil, thinkRange{}, Usagef("--sessions %d: want 1 to %d conversations", s.sessions, maxInFlight)
	}
	for _, n := range []string{"concurrency", "rate", "trace", "max-concurrency", "arrival"} {
		if set[n] {
			return nil, thinkRange{}, Usagef("--%s does not apply with --sessions: each conversation sends its next turn when it has read the answer", n)
		}
	}
	turns, err := workload.ParseDist(s.turns)
	if err != nil {
		return nil, thinkRange{}, Usagef("--turns: %v", err)
	}
	var tr thinkRange
	lo, hi, isRange := strings.Cut(s.think, ":")
	if tr.lo, err = time.ParseDuration(strings.TrimSpace(lo)); err == nil && isRange {
		tr.hi, err = time.ParseDuration(strings.TrimSpace(hi))
	} else {
		tr.hi = tr.lo
	}
	if err != nil || tr.lo < 0 || tr.hi < tr.lo {
		return nil, thinkRange{}, Usagef("--think-time %q: want a duration such as 2s or a range such as 1s:5s", s.think)
	}
	return turns, tr, nil
}

// turnSource gives conversation s its turn count (from --turns, seeded by
// the run's seed and s), its think times and each turn's new message.
func (s *sessionFlags) turnSource(gen interface{ Item(int64) workload.Item }, turns workload.Dist, think thinkRange, seed uint64) func(session, turn int) (loadgen.SessionTurn, bool) {
	conv, _ := gen.(*workload.Generator)
	return func(session, turn int) (loadgen.SessionTurn, bool) {
		i, d, ok := turnPlan(turns, think, seed, session, turn)
		var it workload.Item
		switch {
		case conv != nil && conv.Conversations():
			// ShareGPT: the conversation's own turns, as many as it had.
			it, ok = conv.ConversationTurn(session, turn)
		case ok:
			it = gen.Item(i)
		}
		if !ok {
			return loadgen.SessionTurn{}, false
		}
		return loadgen.SessionTurn{Think: d, Request: loadgen.Request{Prompt: it.Prompt, PromptTokens: it.InputTokens,
			RequestedTokens: it.RequestedTokens, MaxTokens: it.MaxTokens}}, true
	}
}

// simTurnSource is turnSource for the simulator: lengths, no text.
func (s *sessionFlags) simTurnSource(gen sim.Lengths, turns workload.Dist, think thinkRange, seed uint64) func(session, turn int) (sim.SessionTurn, bool) {
	conv, _ := gen.(*workload.Generator)
	return func(session, turn int) (sim.SessionTurn, bool) {
		i, d, ok := turnPlan(turns, think, seed, session, turn)
		var in, out int
		switch {
		case conv != nil && conv.Conversations():
			var it workload.Item
			it, ok = conv.ConversationTurn(session, turn)
			in, out = it.InputTokens, it.MaxTokens
		case ok:
			in, out = gen.Lengths(i)
		}
		if !ok {
			return sim.SessionTurn{}, false
		}
		return sim.SessionTurn{InputTokens: in, OutputTokens: out, Think: d}, true
	}
}

// turnPlan is conversation s's turn: the workload index of its new
// message, the think time before it, and whether it has one (its turn count
// is drawn from --turns, seeded by the run's seed and s).
func turnPlan(turns workload.Dist, think thinkRange, seed uint64, session, turn int) (int64, time.Duration, bool) {
	rng := rand.New(rand.NewPCG(seed^0x7468696e6b000000, uint64(session)<<20|uint64(turn)))
	d := think.lo
	if think.hi > think.lo {
		d += time.Duration(rng.Int64N(int64(think.hi - think.lo)))
	}
	rng = rand.New(rand.NewPCG(seed^0x73657373696f6e73, uint64(session)))
	return int64(session)<<20 | int64(turn), d, turn <= turns.Sample(rng)
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
