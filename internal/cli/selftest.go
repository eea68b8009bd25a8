package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/knee-dev/knee/internal/selftest"
	"github.com/knee-dev/knee/internal/simserver"
	"github.com/knee-dev/knee/internal/workload"
	"github.com/spf13/cobra"
)

// selftestStepScale is the default step-time scale of knee selftest: steps
// of half the simulated duration give high token rates, which is what a
// measurement of knee's own overhead needs.
const selftestStepScale = 0.5

// newSelftestCmd is knee selftest: it measures knee's own measurement error and CPU per token by
// running its client against its simulated server in this process.
func newSelftestCmd(ctx context.Context, env *Env) *cobra.Command {
	cmd := newCommand(env, "selftest")
	fs := cmd.Flags()
	var eng simEngineFlags
	eng.register(fs)
	eng.StepTimeScale = selftestStepScale
	fs.Lookup("step-time-scale").DefValue = strconv.FormatFloat(selftestStepScale, 'g', -1, 64)
	conc := fs.String("concurrency", "1,64,256,1000", "closed-loop concurrency steps, comma-separated")
	var cfg selftest.Config
	fs.DurationVar(&cfg.Duration, "duration", 5*time.Second, "measured time per step")
	fs.DurationVar(&cfg.Warmup, "warmup", time.Second, "warm-up per step, not measured")
	fs.IntVar(&cfg.InputTokens, "input-tokens", 64, "prompt tokens per request")
	fs.IntVar(&cfg.OutputTokens, "output-tokens", 64, "output tokens per request (ignore_eos is sent)")
	fs.StringVar(&cfg.API, "api", "chat", "chat or completions")
	tokName := fs.String("tokenizer", workload.DefaultTokenizer, "tokenizer the server counts prompts with")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	fs.IntVar(&cfg.SlowSteps, "slow-steps", 2, "when the highest concurrency misses 1 ms, repeat it up to N times with the engine twice as slow each time (half the token rate) to find a rate at which it holds; 0: off")
	fs.StringVar(&cfg.ProfileDir, "profile-dir", "", "write each step's CPU profile (client and server) to DIR/step-N.pprof")
	cmd.Long = "Usage: knee selftest [flags]\n\nRun knee's client against knee's simulated server in this process at rising\nconcurrency and report knee's own measurement error (reported TTFT and ITL\nvs the server's actual write times), the server's pacing lag (actual vs\nsimulated write times), the token rate and the CPU per streamed\ntoken: the overhead floor of this machine."
	cmd.RunE = func(_ *cobra.Command, args []string) error {
		if fs.NArg() > 0 {
			return Usagef("unexpected argument %q (knee selftest takes only flags)", fs.Arg(0))
		}
		steps, err := parseIntList("--concurrency", *conc)
		if err != nil {
			return err
		}
		cfg.Concurrency = steps
		if err := cfg.Check(); err != nil {
			return err
		}
		ec, err := eng.resolve(fs)
		if err != nil {
			return err
		}
		tok, err := workload.LoadTokenizer(*tokName)
		if err != nil {
			return Usagef("--tokenizer: %v", err)
		}
		cfg.Server = simserver.Config{Engine: ec, Tokenizer: tok}
		if !*asJSON {
			fmt.Fprintf(env.Stdout, "knee selftest: %d step(s) of %v (+%v warm-up), %d input / %d output tokens per request\n", len(steps), cfg.Duration, cfg.Warmup, cfg.InputTokens, cfg.OutputTokens)
			cfg.Progress = func(s selftest.Step) { selftest.WriteStep(env.Stdout, s) }
			selftest.WriteHeader(env.Stdout)
		}
		res, err := selftest.Run(ctx, cfg)
		if err != nil && (res == nil || len(res.Steps) == 0) {
			return fmt.Errorf("selftest: %w", err)
		}
		if *asJSON {
			enc := json.NewEncoder(env.Stdout)
			enc.SetIndent("", "  ")
			if e := enc.Encode(res); e != nil {
				return e
			}
		} else {
			selftest.WriteFooter(env.Stdout, res, cfg.ProfileDir)
		}
		if err != nil {
			return fmt.Errorf("selftest stopped early: %w", err)
		}
		return nil
	}
	return cmd
}

func parseIntList(flagName, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, Usagef("%s %q: want positive integers separated by commas, such as 1,64,256", flagName, s)
		}
		out = append(out, n)
	}
	return out, nil
}
