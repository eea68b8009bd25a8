// Package selftest measures knee's own measurement error and CPU cost on
// the machine it runs on: it runs knee's load generator against knee's
// simulated server in the same process, at rising concurrency, and compares
// what the client measured (TTFT, inter-token gaps) with the server's truth.
//
// Two truths are kept apart. Measurement truth is when the server actually
// wrote each token (knee_timing write_times_ms): reported − written is
// knee's own measurement error, the figure held to 1 ms. Pacing truth is
// the simulated time each token was meant to leave (token_times_ms):
// written − intended is the server's pacing lag, which on a busy machine
// the server, not the client, is to blame for. Errors against the intended
// times (measurement error plus pacing lag) are reported too.
//
// Reading order: Run (this file), then pprofsplit.go, which splits the
// process's CPU between client and server by pprof goroutine labels.
package selftest

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/knee-dev/knee/internal/cpuclock"
	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/simserver"
)

// Config is one self-check.
type Config struct {
	Server      simserver.Config
	Concurrency []int         // closed-loop steps, e.g. 1, 64, 256, 1000
	Duration    time.Duration // measured time per step
	Warmup      time.Duration // per step, before measuring
	// InputTokens and OutputTokens shape every request (ignore_eos is sent).
	InputTokens, OutputTokens int
	API                       string // "chat" or "completions"
	// ProfileDir, when set, receives each step's CPU profile
	// (step-CONCURRENCY.pprof) for `go tool pprof`.
	ProfileDir string
	// Progress, when set, is called after each step.
	Progress func(Step)
	// SlowSteps: when the highest concurrency misses Bound, it is run again
	// up to this many times, each time with the engine's steps twice as
	// slow (half the token rate; duration and warm-up twice as long, so
	// as many requests complete), until it holds. That finds a token rate
	// at which the truth holds at that concurrency on this machine, when
	// the full rate is beyond it.
	SlowSteps int

	bound time.Duration // Bound when 0; tests set it to force misses
}

// Bound is the agreement knee is held to (SPEC §5): reported TTFT and ITL
// within 1 ms of the truth at p99.
const Bound = time.Millisecond

// ErrDist summarises signed errors (reported − true) in milliseconds;
// AbsP99 is the p99 of their absolute values, the figure held to Bound.
type ErrDist struct {
	Count  int     `json:"count"`
	Mean   float64 `json:"mean"`
	Min    float64 `json:"min"`
	P50    float64 `json:"p50"`
	P90    float64 `json:"p90"`
	P95    float64 `json:"p95"`
	P99    float64 `json:"p99"`
	P999   float64 `json:"p999"`
	Max    float64 `json:"max"`
	AbsP99 float64 `json:"abs_p99"`
}

// Step is one concurrency level.
type Step struct {
	Concurrency int `json:"concurrency"`
	// StepTimeScale is the engine's step-time multiplier in this step (the
	// server's, or a slowed repeat: see Config.SlowSteps).
	StepTimeScale float64 `json:"step_time_scale"`
	// Slowed marks a repeat of the highest concurrency at a slower engine.
	Slowed       bool    `json:"slowed,omitempty"`
	Requests     int     `json:"requests"` // measured: sent after warm-up and completed
	Errors       int     `json:"errors"`   // failed, excluding those canceled at the step's end
	TokenRateTPS float64 `json:"token_rate_tps"`
	// Measurement truth. TTFTError is reported TTFT (first token received −
	// request sent, client clock) − the server's actual write time of the
	// first token (from its receipt of the request, knee_timing
	// write_times_ms); ITLError is, per gap, reported gap − actual write
	// gap. These are knee's own measurement error, held to Bound.
	TTFTError ErrDist `json:"ttft_error_ms"`
	ITLError  ErrDist `json:"itl_error_ms"`
	// Truth says what TTFTError and ITLError were judged against:
	// "write_times" (the server's actual write times, as intended), or
	// "intended_times" when the client did not record write times (then
	// the errors include the server's pacing lag), or "mixed".
	Truth string `json:"truth"`
	// RequestsWithWriteTimes counts the measured requests whose records
	// carried the server's write times.
	RequestsWithWriteTimes int `json:"requests_with_write_times"`
	// ClientKernelTimestamps: the client stamped every stream's tokens with
	// the kernel's receive time (SO_TIMESTAMPNS), not when it got round to
	// reading them; UserStampedStreams counts streams with reads stamped in
	// user space (loadgen.Result).
	ClientKernelTimestamps bool  `json:"client_kernel_timestamps"`
	UserStampedStreams     int64 `json:"user_stamped_streams"`
	// CoalescedChunkShare is the share of the measured requests' content
	// chunks that arrived in one socket read with an earlier chunk: they
	// share its timestamp, so a client that reads later than a token gap
	// shows up here (and in the ITL error's tails).
	CoalescedChunkShare float64 `json:"coalesced_chunk_share"`
	// The same errors against the server's intended (simulated) times:
	// measurement error plus pacing lag, what a user of the simulator sees.
	TTFTErrorVsIntended ErrDist `json:"ttft_error_vs_intended_ms"`
	ITLErrorVsIntended  ErrDist `json:"itl_error_vs_intended_ms"`
	// PacingLag is the server's own lateness, not the client's: each
	// token's actual write time minus its simulated time.
	PacingLag simserver.LagStats `json:"pacing_lag_ms"`
	// CPU per streamed token (µs): the whole process, and its split by
	// pprof labels into server, client and Go runtime (GC, scheduler).
	CPUPerTokenUS        float64 `json:"cpu_per_token_us"`
	ServerCPUPerTokenUS  float64 `json:"server_cpu_per_token_us"`
	ClientCPUPerTokenUS  float64 `json:"client_cpu_per_token_us"`
	RuntimeCPUPerTokenUS float64 `json:"runtime_cpu_per_token_us"`
	CPUUtilization       float64 `json:"cpu_utilization"` // CPU seconds per second
	Within1ms            bool    `json:"within_1ms"`
}

// Result is the whole self-check.
type Result struct {
	Server     string `json:"server"`
	CPUs       int    `json:"cpus"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	Steps      []Step `json:"steps"`
	// The highest aggregate token rate (and its concurrency) among steps
	// whose TTFT and ITL errors stay within 1 ms at p99; 0 when none does.
	MaxTokenRateWithin1msTPS float64 `json:"max_token_rate_within_1ms_tps"`
	MaxConcurrencyWithin1ms  int     `json:"max_concurrency_within_1ms"`
}

// DefaultConcurrency are the steps used when none are given.
var DefaultConcurrency = []int{1, 64, 256, 1000}

// Run performs the self-check.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if len(cfg.Concurrency) == 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 4 * time.Second
	}
	if cfg.Warmup < 0 {
		return nil, fmt.Errorf("warmup %v: want >= 0", cfg.Warmup)
	}
	if cfg.InputTokens < 1 || cfg.OutputTokens < 2 {
		return nil, fmt.Errorf("input tokens %d, output tokens %d: want >= 1 and >= 2", cfg.InputTokens, cfg.OutputTokens)
	}
	for _, c := range cfg.Concurrency {
		if c < 1 {
			return nil, fmt.Errorf("concurrency %d: want >= 1", c)
		}
	}
	if cfg.ProfileDir != "" {
		if err := os.MkdirAll(cfg.ProfileDir, 0o755); err != nil {
			return nil, err
		}
	}
	base, srv, err := simserver.StartLocal(ctx, cfg.Server)
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	res := &Result{Server: srv.Describe(), CPUs: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0)}
	// " hello" is one token in cl100k_base and o200k_base.
	prompt := strings.TrimPrefix(strings.Repeat(" hello", cfg.InputTokens), " ")
	scale := cfg.Server.Engine.StepTimeScale
	if scale == 0 {
		scale = 1
	}
	top := slices.Max(cfg.Concurrency)
	var topStep Step
	add := func(st Step) {
		res.Steps = append(res.Steps, st)
		if cfg.Progress != nil {
			cfg.Progress(st)
		}
		if st.Within1ms && st.TokenRateTPS > res.MaxTokenRateWithin1msTPS {
			res.MaxTokenRateWithin1msTPS, res.MaxConcurrencyWithin1ms = st.TokenRateTPS, st.Concurrency
		}
		if st.Concurrency == top {
			topStep = st
		}
	}
	for _, c := range cfg.Concurrency {
		st, err := runStep(ctx, cfg, base, srv, c, prompt)
		st.StepTimeScale = scale
		if err != nil {
			return res, err
		}
		add(st)
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
	}
	srv.Close() // each slowed repeat starts a server of its own
	for i := 0; i < cfg.SlowSteps && !topStep.Within1ms; i++ {
		scale *= 2
		slow := cfg
		slow.Server.Engine.StepTimeScale = scale
		slow.Duration *= time.Duration(2 << i)
		slow.Warmup *= time.Duration(2 << i)
		st, err := slowStep(ctx, slow, top, prompt)
		st.StepTimeScale, st.Slowed = scale, true
		if err != nil {
			return res, err
		}
		add(st)
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
	}
	return res, nil
}

// slowStep runs one step against a server of its own (the engine's step
// time is fixed when a server starts).
func slowStep(ctx context.Context, cfg Config, conc int, prompt string) (Step, error) {
	base, srv, err := simserver.StartLocal(ctx, cfg.Server)
	if err != nil {
		return Step{Concurrency: conc}, err
	}
	defer srv.Close()
	return runStep(ctx, cfg, base, srv, conc, prompt)
}

func runStep(ctx context.Context, cfg Config, base string, srv *simserver.Server, conc int, prompt string) (Step, error) {
	st := Step{Concurrency: conc}
	lcfg := loadgen.Config{
		BaseURL: base, Model: srv.Model(), API: cfg.API, IgnoreEOS: true,
		Concurrency: conc, Duration: cfg.Warmup + cfg.Duration, Warmup: cfg.Warmup,
		Grace: -1, // requests still running at the end are canceled, not waited for
	}
	src := func(int64) loadgen.Request {
		return loadgen.Request{Prompt: prompt, PromptTokens: cfg.InputTokens, MaxTokens: cfg.OutputTokens}
	}
	var run *loadgen.Run
	var err error
	// Every goroutine the load generator starts inherits the label.
	pprof.Do(ctx, pprof.Labels("knee", "client"), func(ctx context.Context) {
		run, err = loadgen.Start(ctx, lcfg, src)
	})
	if err != nil {
		return st, err
	}
	if !sleep(ctx, cfg.Warmup) {
		run.Wait()
		return st, ctx.Err()
	}
	s0, cpu0, t0 := run.Snapshot(), cpuclock.Process(), time.Now()
	srv.ResetPacingLag()
	var prof bytes.Buffer
	profiling := pprof.StartCPUProfile(&prof) == nil
	sleep(ctx, cfg.Duration)
	s1, cpu1, el := run.Snapshot(), cpuclock.Process(), time.Since(t0)
	st.PacingLag = srv.PacingLag()
	if profiling {
		pprof.StopCPUProfile()
	}
	res := run.Wait()

	tokens := float64(s1.OutputTokens - s0.OutputTokens)
	cpu := cpu1 - cpu0
	st.TokenRateTPS = tokens / el.Seconds()
	st.CPUUtilization = cpu.Seconds() / el.Seconds()
	if tokens > 0 {
		st.CPUPerTokenUS = float64(cpu.Nanoseconds()) / tokens / 1e3
		if profiling {
			if split, err := cpuByLabel(prof.Bytes(), "knee"); err == nil {
				total := float64(split["server"] + split["client"] + split[""])
				for k, v := range split {
					if k != "server" && k != "client" && k != "" {
						total += float64(v)
					}
				}
				if total > 0 {
					st.ServerCPUPerTokenUS = st.CPUPerTokenUS * float64(split["server"]) / total
					st.ClientCPUPerTokenUS = st.CPUPerTokenUS * float64(split["client"]) / total
					st.RuntimeCPUPerTokenUS = st.CPUPerTokenUS - st.ServerCPUPerTokenUS - st.ClientCPUPerTokenUS
				}
			}
			if cfg.ProfileDir != "" {
				os.WriteFile(filepath.Join(cfg.ProfileDir, fmt.Sprintf("step-%d.pprof", conc)), prof.Bytes(), 0o644)
			}
		}
	}
	judge(&st, res.Records)
	st.ClientKernelTimestamps, st.UserStampedStreams = res.KernelTimestamps, res.UserStampedStreams
	bound := ms(Bound)
	if cfg.bound > 0 {
		bound = ms(cfg.bound)
	}
	st.Within1ms = st.Requests > 0 && st.TTFTError.AbsP99 < bound && st.ITLError.AbsP99 < bound
	return st, nil
}

// judge compares each measured record with the server's truth: its write
// times when the record carries them (measurement error), else its intended
// times; and always with the intended times (measurement error + pacing
// lag). It fills the step's error fields, Requests and Errors.
func judge(st *Step, recs []record.Request) {
	var ttft, itl, ttftI, itlI []float64
	chunks, coalesced := 0, 0
	for i := range recs {
		r := &recs[i]
		if r.Error == record.ErrCanceled {
			continue
		}
		if !r.OK() {
			st.Errors++
			continue
		}
		if r.Warmup {
			continue
		}
		tt, truth := r.TokenTimes, r.ServerTokenTimes
		if len(tt) == 0 || len(truth) != len(tt) || r.TokenCounts != nil {
			continue // multi-token chunks or no truth: nothing to compare
		}
		st.Requests++
		chunks += len(tt)
		coalesced += r.CoalescedChunks
		ttftI = append(ttftI, ms((r.FirstToken-r.Sent)-truth[0]))
		for j := 1; j < len(tt); j++ {
			itlI = append(itlI, ms((tt[j]-tt[j-1])-(truth[j]-truth[j-1])))
		}
		if wt := r.ServerWriteTimes; len(wt) == len(tt) {
			st.RequestsWithWriteTimes++
			truth = wt
		}
		ttft = append(ttft, ms((r.FirstToken-r.Sent)-truth[0]))
		for j := 1; j < len(tt); j++ {
			itl = append(itl, ms((tt[j]-tt[j-1])-(truth[j]-truth[j-1])))
		}
	}
	st.TTFTError, st.ITLError = summarise(ttft), summarise(itl)
	st.TTFTErrorVsIntended, st.ITLErrorVsIntended = summarise(ttftI), summarise(itlI)
	st.Truth = truthKind(st.Requests, st.RequestsWithWriteTimes)
	if chunks > 0 {
		st.CoalescedChunkShare = float64(coalesced) / float64(chunks)
	}
}

// Truth kinds of Step.Truth.
const (
	TruthWriteTimes    = "write_times"
	TruthIntendedTimes = "intended_times"
	TruthMixed         = "mixed"
)

func truthKind(requests, withWrites int) string {
	switch withWrites {
	case 0:
		if requests == 0 {
			return "" // nothing measured
		}
		return TruthIntendedTimes
	case requests:
		return TruthWriteTimes
	}
	return TruthMixed
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func summarise(v []float64) ErrDist {
	d := ErrDist{Count: len(v)}
	if len(v) == 0 {
		return d
	}
	slices.Sort(v)
	sum := 0.0
	abs := make([]float64, len(v))
	for i, x := range v {
		sum += x
		abs[i] = math.Abs(x)
	}
	slices.Sort(abs)
	q := func(s []float64, p float64) float64 {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	d.Mean = sum / float64(len(v))
	d.Min, d.Max = v[0], v[len(v)-1]
	d.P50, d.P90, d.P95, d.P99, d.P999 = q(v, 0.5), q(v, 0.9), q(v, 0.95), q(v, 0.99), q(v, 0.999)
	d.AbsP99 = q(abs, 0.99)
	return d
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
