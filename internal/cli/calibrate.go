package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
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
	var cfg calibrate.Config
	fs.StringVar(&cfg.API, "api", "chat", "chat or completions")
	apiKeyEnv := fs.String("api-key-env", "", "name of the environment variable holding the API key (never printed or stored)")
	tokName := fs.String("tokenizer", workload.DefaultTokenizer, "tokenizer that builds prompts of exact lengths: cl100k_base, o200k_base or a tokenizer.json path")
	prefill := fs.String("prefill-lengths", intsString(calibrate.DefaultPrefillLengths), "prompt lengths whose TTFT is measured at concurrency 1 (kept: those one engine step prefills whole)")
	fs.IntVar(&cfg.PrefillRequests, "prefill-requests", 5, "requests measured per prompt length (after one warm-up)")
	decode := fs.String("decode-points", "", "decode measurements as BATCHxPROMPT, comma-separated (default: 1x64,16x64,64x64 and 64 streams of a context whose KV reads match the weights)")
	fs.DurationVar(&cfg.DecodeDuration, "decode-duration", 5*time.Second, "measured time per decode point")
	fs.IntVar(&cfg.DecodeOutput, "decode-output-tokens", 256, "output tokens per decode request")
	fs.IntVar(&cfg.HoldOut.Concurrency, "holdout-concurrency", 16, "held-out step (never fitted, only predicted): concurrency")
	fs.IntVar(&cfg.HoldOut.Input, "holdout-input-tokens", 512, "held-out step: prompt tokens")
	fs.IntVar(&cfg.HoldOut.Output, "holdout-output-tokens", 128, "held-out step: output tokens")
	fs.DurationVar(&cfg.HoldOut.Duration, "holdout-duration", 10*time.Second, "held-out step: measured time, after a 2 s warm-up (both stretched to a few request times on a slow server)")
	fs.StringVar(&cfg.StepModel, "step-model", calibrate.StepModelRoofline, "roofline (a GPU server running --gpu and --model) or linear (a server that is no GPU preset, such as Ollama on CPUs: a step time linear in prompt tokens, decoding sequences and attention pairs (new tokens × context tokens); needs --parallel)")
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
		var err error
		if cfg.PrefillLengths, err = parseIntList("--prefill-lengths", *prefill); err != nil {
			return err
		}
		if cfg.DecodePoints, err = calibrate.ParseDecodePoints(*decode); err != nil {
			return err
		}
		if err := cfg.Check(*parallel); err != nil {
			return err
		}
		linear := cfg.StepModel == calibrate.StepModelLinear
		if linear {
			set := map[string]bool{}
			fs.Visit(func(f *pflag.Flag) { set[f.Name] = true })
			cfg.LinearDefaults(set, *parallel)
		}
		metrics.noteSet(fs)
		if err := metrics.Validate(); err != nil {
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
			if _, err := openai.Endpoint(target, cfg.API); err != nil {
				return Usagef("--url %q: %v", target, err)
			}
			if linear {
				fmt.Fprintf(progress, "knee calibrate: %s (model %s), fitting a linear step model, %d parallel slots\n", redactURL(target), model, ec.MaxNumSeqs)
			} else {
				fmt.Fprintf(progress, "knee calibrate: %s (model %s), fitting against %s × %d running %s\n", redactURL(target), model, ec.GPU.Name, ec.TP, ec.Model.Name)
			}
		}
		cfg.BaseURL, cfg.Model, cfg.APIKey, cfg.Engine, cfg.Tokenizer, cfg.Seed = target, model, apiKey, ec, tok, workload.RandomSeed()
		cfg.HoldOut.Warmup = 2 * time.Second
		cfg.Progress = func(s string) { fmt.Fprintf(progress, "  measuring %s\n", s) }
		scraper := metrics.Start(ctx, target)
		res, err := calibrate.Run(ctx, cfg)
		var server *scrape.View
		if scraper != nil {
			s := scraper.Stop()
			server = scrape.BuildView(s, nil, math.Inf(-1), math.Inf(1))
		}
		if err != nil && res != nil && res.Interrupted {
			return calibrate.Interrupted(env.Stdout, ec, redactURL(target), *out, res, err)
		}
		if err != nil {
			return err
		}
		prof := calibrate.NewProfile(ec, redactURL(target), res)
		if *url == "" {
			prof.Target = "knee's simulated server (" + ec.GPU.Name + ", " + ec.Model.Name + ")"
		}
		if *out != "" {
			if err := prof.Save(*out); err != nil {
				return err
			}
		}
		warnings := res.Warnings()
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
		calibrate.WriteText(env.Stdout, res, prof, *out)
		calibrate.WriteServerSummary(env.Stdout, server)
		for _, w := range warnings {
			fmt.Fprintln(env.Stdout, "\nwarning: "+w)
		}
		return nil
	}
	return cmd
}

func intsString(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}
