package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/knee-dev/knee/internal/calibrate"
	"github.com/knee-dev/knee/internal/openai"
	"github.com/knee-dev/knee/internal/scrape"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/simserver"
	"github.com/knee-dev/knee/internal/workload"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// newCalibrateCmd is knee calibrate: it fits the simulator's step costs to a live server.
func newCalibrateCmd(ctx context.Context, env *Env) *cobra.Command {
	cmd := newCommand(env, "calibrate")
	fs := cmd.Flags()
	var eng simEngineFlags
	eng.register(fs)
	url := fs.String("url", "", "base URL of the OpenAI-compatible server (none: calibrate knee's own simulated server, started in-process)")
	served := fs.String("served-model", "", "model name the server serves (default: the --model preset's name)")
	api := fs.String("api", "chat", "chat or completions")
	apiKeyEnv := fs.String("api-key-env", "", "name of the environment variable holding the API key (never printed or stored)")
	tokName := fs.String("tokenizer", workload.DefaultTokenizer, "tokenizer that builds prompts of exact lengths: cl100k_base, o200k_base or a tokenizer.json path")
	prefill := fs.String("prefill-lengths", intsString(calibrate.DefaultPrefillLengths), "prompt lengths whose TTFT is measured at concurrency 1 (kept: those one engine step prefills whole)")
	prefillN := fs.Int("prefill-requests", 5, "requests measured per prompt length (after one warm-up)")
	decode := fs.String("decode-points", "", "decode measurements as BATCHxPROMPT, comma-separated (default: 1x64,16x64,64x64 and 64 streams of a context whose KV reads match the weights)")
	decodeDur := fs.Duration("decode-duration", 5*time.Second, "measured time per decode point")
	decodeOut := fs.Int("decode-output-tokens", 256, "output tokens per decode request")
	hoC := fs.Int("holdout-concurrency", 16, "held-out step (never fitted, only predicted): concurrency")
	hoIn := fs.Int("holdout-input-tokens", 512, "held-out step: prompt tokens")
	hoOut := fs.Int("holdout-output-tokens", 128, "held-out step: output tokens")
	hoDur := fs.Duration("holdout-duration", 10*time.Second, "held-out step: measured time, after a 2 s warm-up (both stretched to a few request times on a slow server)")
	stepModel := fs.String("step-model", calibrate.StepModelRoofline, "roofline (a GPU server running --gpu and --model) or linear (a server that is no GPU preset, such as Ollama on CPUs: a step time linear in prompt tokens, decoding sequences and attention pairs (new tokens × context tokens); needs --parallel)")
	parallel := fs.Int("parallel", 0, "with --step-model linear: the server's parallel slots (OLLAMA_NUM_PARALLEL, llama.cpp's --parallel), simulated as max_num_seqs")
	out := fs.String("out", "", "write the profile (YAML) to this file, for knee sim/serve --profile")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	var fromFlags calibrateFromFlags
	fromFlags.register(fs)
	var metrics metricsFlags
	metrics.register(fs)
	cmd.Long = helpText(func(w io.Writer) {
		fmt.Fprintln(w, `Usage: knee calibrate [--url URL --served-model NAME] --gpu GPU --model PRESET [flags]

Fit the simulator's step-cost model to a live server: TTFT against prompt
length at concurrency 1 (prefill cost), the inter-token gap against batch
size and context (decode step time). The GPU, model and TP say what the
server runs; calibrate fits the step overhead and the memory and compute
efficiencies, predicts a held-out load step it never measured and reports
the error, and writes a profile for knee sim --profile and knee serve
--profile. Without --url it calibrates knee's own simulated server, whose
true constants are known (a check of the method).`)
		fmt.Fprintln(w)
	})
	cmd.RunE = func(_ *cobra.Command, args []string) error {
		if fs.NArg() > 0 {
			return Usagef("unexpected argument %q (knee calibrate takes only flags)", fs.Arg(0))
		}
		if fromFlags.from != "" {
			return runCalibrateFrom(ctx, env, fs, &eng, fromFlags, *out, *asJSON)
		}
		lengths, err := parseIntList("--prefill-lengths", *prefill)
		if err != nil {
			return err
		}
		points, err := parseDecodePoints(*decode)
		if err != nil {
			return err
		}
		switch {
		case *prefillN < 1:
			return Usagef("--prefill-requests %d: want 1 or more", *prefillN)
		case *decodeDur <= 0:
			return Usagef("--decode-duration %v: want a positive duration such as 5s", *decodeDur)
		case *decodeOut < 8:
			return Usagef("--decode-output-tokens %d: want 8 or more (gaps to measure)", *decodeOut)
		case *hoC < 1 || *hoIn < 1 || *hoOut < 2:
			return Usagef("--holdout-concurrency %d, --holdout-input-tokens %d, --holdout-output-tokens %d: want >= 1, >= 1, >= 2", *hoC, *hoIn, *hoOut)
		case *hoDur <= 0:
			return Usagef("--holdout-duration %v: want a positive duration", *hoDur)
		case *api != "chat" && *api != "completions":
			return Usagef("--api %q: want chat or completions", *api)
		case *stepModel != calibrate.StepModelRoofline && *stepModel != calibrate.StepModelLinear:
			return Usagef("--step-model %q: want roofline or linear", *stepModel)
		case *stepModel == calibrate.StepModelLinear && *parallel < 1:
			return Usagef("--step-model linear needs --parallel N: the server's parallel slots (OLLAMA_NUM_PARALLEL; Ollama's default is 1 or 4 by memory)")
		case *stepModel != calibrate.StepModelLinear && *parallel != 0:
			return Usagef("--parallel is for --step-model linear; a roofline calibration takes --max-num-seqs")
		}
		linear := *stepModel == calibrate.StepModelLinear
		if linear {
			lengths, points = linearDefaults(fs, lengths, points, hoC, hoIn, hoOut, *parallel)
		}
		metrics.noteSet(fs)
		if err := metrics.validate(); err != nil {
			return err
		}
		ec, err := eng.resolve(fs)
		if err != nil {
			return err
		}
		if linear {
			ec.MaxNumSeqs = *parallel
		}
		if _, err := simengine.NewEngine(ec); err != nil { // the model must fit the GPU: a usage error up front
			return Usagef("%v", err)
		}
		tok, err := workload.LoadTokenizer(*tokName)
		if err != nil {
			return Usagef("--tokenizer: %v", err)
		}
		apiKey, err := apiKeyFrom(env, *apiKeyEnv)
		if err != nil {
			return err
		}
		target, model := *url, *served
		if model == "" {
			model = ec.Model.Name
		}
		progress := io.Discard
		if !*asJSON {
			progress = env.Stdout
		}
		if target == "" {
			// The embedded server runs the flags' engine with its own cost, so
			// what the fit finds can be checked against what the server runs.
			base, srv, err := simserver.StartLocal(ctx, simserver.Config{Engine: ec, Tokenizer: tok, ModelName: model})
			if err != nil {
				return fmt.Errorf("starting the simulated server: %w", err)
			}
			defer srv.Close()
			target = base
			fmt.Fprintf(progress, "knee calibrate: no --url, calibrating knee's own simulated server at %s (%s)\n", base, srv.Describe())
		} else {
			if _, err := openai.Endpoint(target, *api); err != nil {
				return Usagef("--url %q: %v", target, err)
			}
			if linear {
				fmt.Fprintf(progress, "knee calibrate: %s (model %s), fitting a linear step model, %d parallel slots\n", redactURL(target), model, ec.MaxNumSeqs)
			} else {
				fmt.Fprintf(progress, "knee calibrate: %s (model %s), fitting against %s × %d running %s\n", redactURL(target), model, ec.GPU.Name, ec.TP, ec.Model.Name)
			}
		}
		cfg := calibrate.Config{
			BaseURL: target, Model: model, API: *api, APIKey: apiKey, Engine: ec, Tokenizer: tok, Seed: workload.RandomSeed(),
			PrefillLengths: lengths, PrefillRequests: *prefillN,
			DecodePoints: points, DecodeDuration: *decodeDur, DecodeOutput: *decodeOut, StepModel: *stepModel,
			HoldOut:  calibrate.HoldOutConfig{Concurrency: *hoC, Input: *hoIn, Output: *hoOut, Duration: *hoDur, Warmup: 2 * time.Second},
			Progress: func(s string) { fmt.Fprintf(progress, "  measuring %s\n", s) },
		}
		scraper := metrics.start(ctx, target)
		res, err := calibrate.Run(ctx, cfg)
		var server *scrape.View
		if scraper != nil {
			s := scraper.Stop()
			server = scrape.BuildView(s, nil, math.Inf(-1), math.Inf(1))
		}
		if err != nil && res != nil && res.Interrupted {
			return calibrationInterrupted(env, ec, redactURL(target), *out, res, err)
		}
		if err != nil {
			return err
		}
		prof := calibrate.NewProfile(ec, redactURL(target), res)
		if *url == "" {
			prof.Target = "knee's simulated server (" + ec.GPU.Name + ", " + ec.Model.Name + ")"
		}
		if *out != "" {
			var buf bytes.Buffer
			if err := prof.Write(&buf); err != nil {
				return err
			}
			if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
				return fmt.Errorf("--out: %w", err)
			}
		}
		warnings := calibrationWarnings(res)
		for _, w := range warnings {
			fmt.Fprintln(env.Stderr, "knee calibrate: warning: "+w)
		}
		if *asJSON {
			enc := json.NewEncoder(env.Stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(struct {
				Profile calibrate.Profile `json:"profile"`
				*calibrate.Result
				Server   *scrape.View `json:"server,omitempty"`
				Warnings []string     `json:"warnings,omitempty"`
			}{prof, res, server, warnings})
		}
		printCalibration(env.Stdout, res, prof, *out)
		printServerSummary(env.Stdout, server)
		for _, w := range warnings {
			fmt.Fprintln(env.Stdout, "\nwarning: "+w)
		}
		return nil
	}
	return cmd
}

// maxHoldOutError is the held-out prediction error beyond which a profile
// is not to be trusted as it stands.
const maxHoldOutError = 0.10

// calibrationWarnings says when the held-out step, which the fit never saw,
// is predicted badly: the profile then does not describe the server (a
// busy machine, a server doing something the model lacks).
func calibrationWarnings(res *calibrate.Result) []string {
	h := res.HoldOut
	var off []string
	for _, e := range []struct {
		name string
		v    float64
	}{{"TTFT p50", h.TTFTError}, {"TPOT p50", h.TPOTError}, {"output tokens/s", h.ThroughputError}} {
		if math.Abs(e.v) > maxHoldOutError {
			off = append(off, fmt.Sprintf("%s %+.1f%%", e.name, 100*e.v))
		}
	}
	if len(off) == 0 {
		return nil
	}
	check := "check the server runs the --gpu, --model and --tp given"
	if res.Fit.Linear != nil {
		check = "check --parallel is the server's parallel slots"
	}
	return []string{fmt.Sprintf("the held-out step is predicted more than %.0f%% off (%s): this profile may not describe the server. "+
		"Calibrate again on a quiet machine (knee selftest shows its floor), with more --prefill-requests and a longer --decode-duration, "+
		"and %s", 100*maxHoldOutError, strings.Join(off, ", "), check)}
}

func printCalibration(w io.Writer, res *calibrate.Result, prof calibrate.Profile, out string) {
	f := res.Fit
	if f.Linear != nil { // no roofline terms to show
		fmt.Fprintf(w, "\n%-8s %7s %6s %8s | %11s %10s\n", "point", "tokens", "batch", "samples", "measured ms", "fitted ms")
		for _, p := range res.Points {
			fmt.Fprintf(w, "%-8s %7d %6d %8d | %11.3f %10.3f\n", p.Kind, p.InputTokens, p.Batch, p.Samples, p.MeasuredMS, p.FittedMS)
		}
	} else {
		fmt.Fprintf(w, "\n%-8s %7s %6s %8s | %11s %10s | %8s %8s %8s | %s\n", "point", "tokens", "batch", "samples", "measured ms", "fitted ms", "mem ms", "cmp ms", "ar ms", "bound")
		for _, p := range res.Points {
			fmt.Fprintf(w, "%-8s %7d %6d %8d | %11.3f %10.3f | %8.3f %8.3f %8.3f | %s\n", p.Kind, p.InputTokens, p.Batch, p.Samples, p.MeasuredMS, p.FittedMS, p.MemMS(), p.CmpMS(), p.ArMS, p.Bound)
		}
	}
	if f.Linear != nil {
		l := f.Linear
		fmt.Fprintf(w, "\nfitted: step = %.3f ms + %.3f µs per prompt token + %.3f ms per decoding sequence + %.4f ns per attention pair (new token × context token); request overhead %.3f ms (in TTFT, outside steps)\n",
			l.BaseMS, l.PerPrefillTokenUS, l.PerDecodeSeqMS, l.PerAttentionPairNS, f.RequestOverheadMS)
		for _, c := range []struct {
			what, by string
			curve    []calibrate.ProfileCurvePoint
		}{{"prompt", "prompt tokens", l.PromptCurve}, {"decode", "decoding sequences", l.DecodeCurve}} {
			if len(c.curve) == 0 {
				continue
			}
			var pts []string
			for _, p := range c.curve {
				pts = append(pts, fmt.Sprintf("%d: %.2f", p.Tokens, p.MS))
			}
			fmt.Fprintf(w, "%s steps: measured times (ms, attention aside) by %s, interpolated, in place of the line: %s\n", c.what, c.by, strings.Join(pts, ", "))
		}
		if f.StepTimeCV > 0 {
			fmt.Fprintf(w, "step times vary by %.1f%% (coefficient of variation of the decode gaps), simulated step by step\n", 100*f.StepTimeCV)
		}
		if f.FrontEndRateInSteps > 0 {
			fmt.Fprintf(w, "the front end works at %.0f%% of its idle speed while steps run (fitted to the decode points' restarts)\n", 100*f.FrontEndRateInSteps)
		}
	} else {
		fmt.Fprintf(w, "\nfitted: step overhead %.3f ms + %.1f µs per sequence, memory efficiency %.4f, compute efficiency %.4f; request overhead %.3f ms (in TTFT, outside engine steps)\n",
			f.StepOverheadMS, f.StepPerSeqUS, f.MemEfficiency, f.ComputeEfficiency, f.RequestOverheadMS)
	}
	fmt.Fprintf(w, "fit error: rms %.1f%%, worst point %.1f%%\n", 100*f.RMSRelError, 100*f.MaxRelError)
	if f.Undetermined != "" {
		fmt.Fprintf(w, "not determined by these measurements, kept at the default: %s\n", f.Undetermined)
	}
	h := res.HoldOut
	fmt.Fprintf(w, "\nheld-out step (never fitted): %d streams, %d prompt / %d output tokens, %v after %v warm-up; %d requests measured\n",
		h.Concurrency, h.Measured.InputTokens, h.Output, h.Duration.Round(time.Millisecond), h.Warmup.Round(time.Millisecond), h.Measured.Requests)
	fmt.Fprintf(w, "  %-22s %10s %10s %8s\n", "", "measured", "predicted", "error")
	row := func(name string, m, p, e float64) {
		fmt.Fprintf(w, "  %-22s %10.2f %10.2f %+7.1f%%\n", name, m, p, 100*e)
	}
	row("TTFT p50 ms", h.Measured.TTFTP50MS, h.Predicted.TTFTP50MS, h.TTFTError)
	row("TPOT p50 ms", h.Measured.TPOTP50MS, h.Predicted.TPOTP50MS, h.TPOTError)
	row("output tokens/s", h.Measured.OutputTPS, h.Predicted.OutputTPS, h.ThroughputError)
	fmt.Fprintln(w, "  (output tokens/s: concurrency × output tokens / mean end-to-end time, the closed loop's steady rate)")
	if out != "" {
		fmt.Fprintf(w, "\nprofile written to %s: knee sim --profile %s, knee serve --profile %s\n", out, out, out)
	} else {
		fmt.Fprintln(w, "\nprofile (--out FILE to save it):")
		prof.Write(w)
	}
	if f.Linear != nil {
		fmt.Fprintln(w, "\nModel: a step takes a base time plus its prompt tokens (the measured curve when there is one), decoding sequences and attention pairs times their fitted costs;")
		fmt.Fprintln(w, "the profile's gpu and model only size the simulator's memory, max_num_seqs is the server's parallel slots (docs/simulator.md).")
		return
	}
	fmt.Fprintln(w, "\nModel: a step takes overhead + max(memory traffic / (bandwidth × memory efficiency), FLOPs / (achievable matmul rate × compute efficiency))")
	fmt.Fprintln(w, "+ all-reduce; mem/cmp/ar ms above are each point's terms at full efficiency (docs/simulator.md).")
}

// linearDefaults replaces the roofline's default measurements, which a
// CPU server would take hours over, with short ones for those flags not
// given: short prompts, decode at every batch up to the slots (1, half
// and all of many), and a held-out concurrency the decode points never
// ran (one below the slots where that batch is not measured, else one
// above).
func linearDefaults(fs *pflag.FlagSet, lengths []int, points []calibrate.DecodePoint, hoC, hoIn, hoOut *int, slots int) ([]int, []calibrate.DecodePoint) {
	set := map[string]bool{}
	fs.Visit(func(f *pflag.Flag) { set[f.Name] = true })
	if !set["prefill-lengths"] {
		lengths = nil // calibrate's linear defaults
	}
	if !set["holdout-concurrency"] {
		measured := points
		if len(measured) == 0 {
			measured = calibrate.DefaultLinearDecodePoints(slots)
		}
		*hoC = slots + 1
		if slots >= 3 && !slices.ContainsFunc(measured, func(d calibrate.DecodePoint) bool { return d.Batch == slots-1 }) {
			*hoC = slots - 1
		}
	}
	if !set["holdout-input-tokens"] {
		*hoIn = 64
	}
	if !set["holdout-output-tokens"] {
		*hoOut = 64
	}
	return lengths, points
}

// parseDecodePoints reads BATCHxPROMPT pairs; empty means the defaults.
func parseDecodePoints(s string) ([]calibrate.DecodePoint, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var pts []calibrate.DecodePoint
	for _, f := range strings.Split(s, ",") {
		b, in, ok := strings.Cut(strings.TrimSpace(f), "x")
		bn, err1 := strconv.Atoi(b)
		inN, err2 := strconv.Atoi(in)
		if !ok || err1 != nil || err2 != nil || bn < 1 || inN < 1 {
			return nil, Usagef("--decode-points %q: want BATCHxPROMPT pairs separated by commas, such as 1x64,64x1024", s)
		}
		pts = append(pts, calibrate.DecodePoint{Batch: bn, Input: inN})
	}
	return pts, nil
}

func intsString(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// calibrationInterrupted keeps what an interrupted calibration measured:
// its points on stdout and, when they were enough for a fit, the profile
// (in --out when given), then says what is missing.
func calibrationInterrupted(env *Env, ec simengine.Config, target, out string, res *calibrate.Result, cause error) error {
	fmt.Fprintf(env.Stdout, "\nInterrupted: the %d points measured before the stop:\n", len(res.Points))
	for _, p := range res.Points {
		fmt.Fprintf(env.Stdout, "  %-8s batch %4d  %6d tokens  %9.3f ms  (%d samples)\n", p.Kind, p.Batch, p.InputTokens, p.MeasuredMS, p.Samples)
	}
	if !res.Fitted {
		return fmt.Errorf("interrupted (%v): %d points kept above, too few for a profile (want two prefill and two decode points)", cause, len(res.Points))
	}
	prof := calibrate.NewProfile(ec, target, res)
	var buf bytes.Buffer
	if err := prof.Write(&buf); err != nil {
		return err
	}
	where := "printed above"
	if out != "" {
		if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
		where = "written to " + out
	} else {
		fmt.Fprintf(env.Stdout, "\nProfile fitted from them (no held-out check):\n%s", buf.String())
	}
	return fmt.Errorf("interrupted (%v): a profile fitted from the %d points measured is %s, without its held-out check", cause, len(res.Points), where)
}
