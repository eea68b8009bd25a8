package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
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
	eng.stepTimeScale = selftestStepScale
	fs.Lookup("step-time-scale").DefValue = strconv.FormatFloat(selftestStepScale, 'g', -1, 64)
	conc := fs.String("concurrency", "1,64,256,1000", "closed-loop concurrency steps, comma-separated")
	dur := fs.Duration("duration", 5*time.Second, "measured time per step")
	warm := fs.Duration("warmup", time.Second, "warm-up per step, not measured")
	in := fs.Int("input-tokens", 64, "prompt tokens per request")
	out := fs.Int("output-tokens", 64, "output tokens per request (ignore_eos is sent)")
	api := fs.String("api", "chat", "chat or completions")
	tokName := fs.String("tokenizer", workload.DefaultTokenizer, "tokenizer the server counts prompts with")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	slowSteps := fs.Int("slow-steps", 2, "when the highest concurrency misses 1 ms, repeat it up to N times with the engine twice as slow each time (half the token rate) to find a rate at which it holds; 0: off")
	profDir := fs.String("profile-dir", "", "write each step's CPU profile (client and server) to DIR/step-N.pprof")
	cmd.Long = helpText(func(w io.Writer) {
		fmt.Fprintln(w, "Usage: knee selftest [flags]\n\nRun knee's client against knee's simulated server in this process at rising\nconcurrency and report knee's own measurement error (reported TTFT and ITL\nvs the server's actual write times), the server's pacing lag (actual vs\nsimulated write times), the token rate and the CPU per streamed\ntoken: the overhead floor of this machine.")
	})
	cmd.RunE = func(_ *cobra.Command, args []string) error {
		if fs.NArg() > 0 {
			return Usagef("unexpected argument %q (knee selftest takes only flags)", fs.Arg(0))
		}
		steps, err := parseIntList("--concurrency", *conc)
		if err != nil {
			return err
		}
		switch {
		case *dur <= 0:
			return Usagef("--duration %v: want a positive duration such as 4s", *dur)
		case *warm < 0:
			return Usagef("--warmup %v: want 0 or more", *warm)
		case *in < 1:
			return Usagef("--input-tokens %d: want 1 or more", *in)
		case *out < 2:
			return Usagef("--output-tokens %d: want 2 or more (one gap at least)", *out)
		case *slowSteps < 0:
			return Usagef("--slow-steps %d: want 0 or more", *slowSteps)
		case *api != "chat" && *api != "completions":
			return Usagef("--api %q: want chat or completions", *api)
		}
		ec, err := eng.resolve(fs)
		if err != nil {
			return err
		}
		tok, err := workload.LoadTokenizer(*tokName)
		if err != nil {
			return Usagef("--tokenizer: %v", err)
		}
		cfg := selftest.Config{
			Server:      simserver.Config{Engine: ec, Tokenizer: tok},
			Concurrency: steps, Duration: *dur, Warmup: *warm,
			InputTokens: *in, OutputTokens: *out, API: *api, ProfileDir: *profDir,
			SlowSteps: *slowSteps,
		}
		if !*asJSON {
			fmt.Fprintf(env.Stdout, "knee selftest: %d step(s) of %v (+%v warm-up), %d input / %d output tokens per request\n", len(steps), *dur, *warm, *in, *out)
			cfg.Progress = func(s selftest.Step) { printSelftestStep(env.Stdout, s) }
			printSelftestHeader(env.Stdout)
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
			printSelftestFooter(env.Stdout, res, *profDir)
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

func printSelftestHeader(w io.Writer) {
	fmt.Fprintf(w, "\n%10s %9s %8s | %-23s | %-23s | %-17s | %-25s | %-29s | %-4s | %s\n", "streams", "tok/s", "requests",
		"TTFT error ms p50/|p99|", "ITL error ms p50/|p99|", "vs intended |p99|", "pacing lag ms p50/p99/max", "CPU µs/token all/srv/cli/rt", "≤1ms", "truth")
}

func printSelftestStep(w io.Writer, s selftest.Step) {
	ok := "no"
	if s.Within1ms {
		ok = "yes"
	}
	truth := "writes"
	switch s.Truth {
	case selftest.TruthIntendedTimes:
		truth = "intended*"
	case selftest.TruthMixed:
		truth = fmt.Sprintf("mixed* (%d/%d writes)", s.RequestsWithWriteTimes, s.Requests)
	case "":
		truth = "-"
	}
	if s.ClientKernelTimestamps {
		truth += ", kernel stamps"
	} else {
		truth += fmt.Sprintf(", user stamps (%d streams)", s.UserStampedStreams)
	}
	streams := strconv.Itoa(s.Concurrency)
	if s.Slowed {
		streams += fmt.Sprintf(" (×%g)", s.StepTimeScale)
	}
	fmt.Fprintf(w, "%10s %9.0f %8d | %8.3f / %-12.3f | %8.3f / %-12.3f | %7.3f / %-7.3f | %6.3f / %6.3f / %-7.3f | %5.2f / %5.2f / %5.2f / %5.2f | %-4s | %s\n",
		streams, s.TokenRateTPS, s.Requests, s.TTFTError.P50, s.TTFTError.AbsP99, s.ITLError.P50, s.ITLError.AbsP99,
		s.TTFTErrorVsIntended.AbsP99, s.ITLErrorVsIntended.AbsP99,
		s.PacingLag.P50MS, s.PacingLag.P99MS, s.PacingLag.MaxMS,
		s.CPUPerTokenUS, s.ServerCPUPerTokenUS, s.ClientCPUPerTokenUS, s.RuntimeCPUPerTokenUS, ok, truth)
	if s.Errors > 0 {
		fmt.Fprintf(w, "        %d request(s) failed in this step\n", s.Errors)
	}
	if s.CoalescedChunkShare >= 0.001 {
		fmt.Fprintf(w, "        %.1f%% of chunks arrived in one read with an earlier chunk (the client read later than a token gap; they share a timestamp)\n", 100*s.CoalescedChunkShare)
	}
}

func printSelftestFooter(w io.Writer, res *selftest.Result, profDir string) {
	fmt.Fprintf(w, "\nserver: %s\nmachine: %d CPUs (GOMAXPROCS %d); client and server share them\n", res.Server, res.CPUs, res.GOMAXPROCS)
	if res.MaxTokenRateWithin1msTPS > 0 {
		fmt.Fprintf(w, "highest token rate with TTFT and ITL error within 1 ms at p99: %.0f tok/s (%d streams)\n", res.MaxTokenRateWithin1msTPS, res.MaxConcurrencyWithin1ms)
	} else {
		fmt.Fprintln(w, "no step kept TTFT and ITL error within 1 ms at p99 on this machine")
	}
	fmt.Fprintln(w, "error = reported − true (measurement truth): TTFT from the client's send vs when the server actually wrote the")
	fmt.Fprintln(w, "first token after receipt; ITL per gap between consecutive tokens, vs the gap between their actual writes.")
	fmt.Fprintln(w, "|p99| is the p99 of the error's size, either sign: the figure held to 1 ms.")
	fmt.Fprintln(w, "vs intended: the same errors against the server's simulated token times (measurement error + pacing lag).")
	fmt.Fprintln(w, "Pacing lag = when the server wrote a token − its simulated time: the server's own figure, not the client's.")
	for _, s := range res.Steps {
		if s.Slowed {
			fmt.Fprintln(w, "(×S): the highest concurrency again, with the simulated engine's steps S times their preset length: a lower")
			fmt.Fprintln(w, "token rate, to find one at which this machine keeps knee's error within 1 ms at that concurrency.")
			break
		}
	}
	fmt.Fprintln(w, "CPU per token: the whole process (getrusage), split by pprof labels into server, client and Go runtime.")
	fmt.Fprintln(w, "truth: what the errors are judged against (writes = the server's actual write times); kernel stamps = the client")
	fmt.Fprintln(w, "timed each token by the kernel's receive time (SO_TIMESTAMPNS), user stamps = when it read the bytes.")
	for _, s := range res.Steps {
		if s.Truth == selftest.TruthIntendedTimes || s.Truth == selftest.TruthMixed {
			fmt.Fprintln(w, "* the client did not record the server's write times (knee_timing write_times_ms) for every request: those")
			fmt.Fprintln(w, "  requests are judged against the intended times, so their error includes the server's pacing lag.")
			break
		}
	}
	if profDir != "" {
		fmt.Fprintf(w, "CPU profiles: %s/step-N.pprof (go tool pprof -top -tagfocus knee=server FILE)\n", profDir)
	}
}
