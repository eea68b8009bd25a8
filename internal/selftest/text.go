package selftest

import (
	"fmt"
	"io"
	"strconv"

	"github.com/knee-dev/knee/internal/badinput"
)

// WriteHeader writes the head of the steps table knee selftest prints.
func WriteHeader(w io.Writer) {
	fmt.Fprintf(w, "\n%10s %9s %8s | %-23s | %-23s | %-17s | %-25s | %-29s | %-4s | %s\n", "streams", "tok/s", "requests",
		"TTFT error ms p50/|p99|", "ITL error ms p50/|p99|", "vs intended |p99|", "pacing lag ms p50/p99/max", "CPU µs/token all/srv/cli/rt", "≤1ms", "truth")
}

// WriteStep writes one step's row, as it ends, with its failures and
// coalesced chunks below it.
func WriteStep(w io.Writer, s Step) {
	ok := "no"
	if s.Within1ms {
		ok = "yes"
	}
	truth := "writes"
	switch s.Truth {
	case TruthIntendedTimes:
		truth = "intended*"
	case TruthMixed:
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

// WriteFooter writes what the table means and the highest token rate kept
// within 1 ms; profDir, when set, is where the CPU profiles are.
func WriteFooter(w io.Writer, res *Result, profDir string) {
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
		if s.Truth == TruthIntendedTimes || s.Truth == TruthMixed {
			fmt.Fprintln(w, "* the client did not record the server's write times (knee_timing write_times_ms) for every request: those")
			fmt.Fprintln(w, "  requests are judged against the intended times, so their error includes the server's pacing lag.")
			break
		}
	}
	if profDir != "" {
		fmt.Fprintf(w, "CPU profiles: %s/step-N.pprof (go tool pprof -top -tagfocus knee=server FILE)\n", profDir)
	}
}

// Check refuses settings a selftest cannot run with, naming the flag of
// knee selftest that gave them.
func (c *Config) Check() error {
	switch {
	case c.Duration <= 0:
		return badinput.Errorf("--duration %v: want a positive duration such as 4s", c.Duration)
	case c.Warmup < 0:
		return badinput.Errorf("--warmup %v: want 0 or more", c.Warmup)
	case c.InputTokens < 1:
		return badinput.Errorf("--input-tokens %d: want 1 or more", c.InputTokens)
	case c.OutputTokens < 2:
		return badinput.Errorf("--output-tokens %d: want 2 or more (one gap at least)", c.OutputTokens)
	case c.SlowSteps < 0:
		return badinput.Errorf("--slow-steps %d: want 0 or more", c.SlowSteps)
	case c.API != "chat" && c.API != "completions":
		return badinput.Errorf("--api %q: want chat or completions", c.API)
	}
	return nil
}
