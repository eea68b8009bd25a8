package cli

import (
	"github.com/knee-dev/knee/internal/loadsetup"
	"github.com/knee-dev/knee/internal/workload"
	"github.com/spf13/pflag"
)

// sessionFlags declare the multi-turn conversations (loadsetup.Sessions).
type sessionFlags struct{ loadsetup.Sessions }

func (s *sessionFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&s.Count, "sessions", 0, "run this many multi-turn conversations at once: each turn sends the history (prompts and the server's answers) plus a new --input-tokens message")
	fs.StringVar(&s.Turns, "turns", "4", "with --sessions: turns per conversation, a length distribution (4, 2:8, normal:4,1)")
	fs.StringVar(&s.Think, "think-time", "0s", "with --sessions: the user's pause between an answer and the next turn: a duration (2s) or a uniform range (1s:5s)")
}

func (s *sessionFlags) parse(fs *pflag.FlagSet) (workload.Dist, workload.Think, error) {
	return s.Parse(given(fs))
}

// flagGiven reports whether the flag name was set on the command line.
func flagGiven(fs *pflag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *pflag.Flag) { given = given || f.Name == name })
	return given
}
