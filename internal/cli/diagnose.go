package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/knee-dev/knee/internal/diagnose"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/runs"
	"github.com/spf13/cobra"
)

// newDiagnoseCmd is `knee diagnose FILE`: which phase is the bottleneck, with
// evidence, against a baseline run, an earlier window of the same run, or
// (with neither) the window's own phase shares and trend.
func newDiagnoseCmd(env *Env) *cobra.Command {
	var baseline, split, window, baseWindow, format, serverMetrics, baseServerMetrics string
	var jsonOut bool
	cmd := newCommand(env, "diagnose")
	fs := cmd.Flags()
	cmd.Long = helpText(func(w io.Writer) {
		fmt.Fprintln(w, "Usage: knee diagnose [--baseline FILE | --split T | --window A:B --baseline-window C:D] [--step N] [--json] FILE")
		fmt.Fprintln(w, "\nFILE (or - for stdin) is knee records.jsonl, a CSV or JSONL of per-request phase times")
		fmt.Fprintln(w, "("+strings.Join(diagnose.PhaseColumns, ",")+"; times in ms),")
		fmt.Fprintln(w, "a vLLM bench serve result JSON (--save-result), or a stored run (an id, last, last~N):")
		fmt.Fprintln(w, "a stored sweep's step that knee report summarises, or the one --step N names. Verdicts: healthy, queue_pressure,")
		fmt.Fprintln(w, "prefill_pressure, decode_slowdown, decode_bound, prefill_bound, errors, client_bottleneck (docs/diagnosis.md).")
		fmt.Fprintln(w)
	})
	fs.StringVar(&baseline, "baseline", "", "a healthy run to compare against (any input format)")
	fs.StringVar(&split, "split", "", "cut FILE at this send time (e.g. 60s): requests before are the baseline, after the window")
	fs.StringVar(&window, "window", "", "judge only requests sent in A:B (durations from the run start, e.g. 60s:120s; either end may be empty)")
	fs.StringVar(&baseWindow, "baseline-window", "", "compare against requests of FILE sent in C:D")
	fs.StringVar(&serverMetrics, "server-metrics", "", "the run's scraped server metrics (server_metrics.json from knee bench --out): the server's own queue, prefill and batch figures join the evidence")
	fs.StringVar(&baseServerMetrics, "baseline-server-metrics", "", "the baseline run's server_metrics.json (with --baseline; --split and --baseline-window use --server-metrics)")
	fs.StringVar(&format, "format", "text", "output: text or json")
	var mixPath string
	fs.StringVar(&mixPath, "mix", "", "the run's traffic mix YAML: its classes' order and which send a LoRA adapter, so a class waiting for an adapter slot is told apart (the per-class diagnosis runs without it too)")
	fs.BoolVar(&jsonOut, "json", false, "same as --format json")
	var step int
	fs.IntVar(&step, "step", -1, "with a stored sweep as FILE: diagnose this step, counted from 0 in knee report's steps table (default: the step knee report summarises)")
	var ref diagnoseRefFlags
	ref.register(fs)
	cmd.RunE = func(c *cobra.Command, args []string) error {
		ctx := c.Context() // Ctrl-C stops a long parse
		if jsonOut {
			format = "json"
		}
		if format != "text" && format != "json" {
			return Usagef("--format %q: want text or json", format)
		}
		if fs.NArg() != 1 {
			return Usagef("want one input file (knee records.jsonl, phase CSV/JSONL or vLLM result JSON); got %d arguments", fs.NArg())
		}
		if n := countSet(baseline != "", split != "", baseWindow != ""); n > 1 {
			return Usagef("give one of --baseline, --split or --baseline-window")
		}
		path := fs.Arg(0)
		if fs.Changed("step") {
			if step < 0 {
				return Usagef("--step %d: want a step number from 0", step)
			}
			if _, err := os.Stat(path); !isRunRef(path) || err == nil {
				return Usagef("--step %d: %s is a file; --step picks a step of a stored sweep (an id, last, last~N)", step, path)
			}
		}
		recs, kind, err := readDiagnoseStep(ctx, env, path, step)
		if err != nil {
			return err
		}
		opts := diagnose.Options{}
		var readBaseline func() ([]record.Request, string, error)
		if baseline != "" {
			readBaseline = func() ([]record.Request, string, error) {
				recs, _, err := readDiagnoseInput(ctx, env, baseline)
				return recs, baseline, err
			}
		}
		win, err := diagnose.Cut{Window: window, Split: split, BaselineWindow: baseWindow}.Apply(recs, path, kind, readBaseline, &opts)
		if err != nil {
			return err
		}
		if opts.Baseline == nil {
			r, from, err := ref.reference(path)
			if err != nil {
				return err
			}
			opts.Reference = r
			if from != "" {
				fmt.Fprintf(env.Stderr, "knee diagnose: judging speeds against %s (model and GPU from %s; --gpu/--model override)\n", r.Source, from)
			}
		}
		if serverMetrics != "" {
			s, err := readServerSeries(serverMetrics, "--server-metrics")
			if err != nil {
				return err
			}
			opts.Server = serverFacts(s, win)
			bs := s
			if baseline != "" {
				bs = nil
				if baseServerMetrics != "" {
					if bs, err = readServerSeries(baseServerMetrics, "--baseline-server-metrics"); err != nil {
						return err
					}
				}
			}
			if opts.Baseline != nil && bs != nil {
				opts.BaselineServer = serverFacts(bs, opts.Baseline)
			}
		} else if baseServerMetrics != "" {
			return Usagef("--baseline-server-metrics needs --server-metrics for the window")
		}
		if opts.ClassOrder, opts.Adapters, err = mixClasses(mixPath); err != nil {
			return err
		}
		d := diagnose.Diagnose(win, opts)
		if format == "json" {
			enc := json.NewEncoder(env.Stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(d)
		}
		return diagnose.WriteText(env.Stdout, path, kind, &d)
	}
	return cmd
}

// diagnoseWant is what knee diagnose reads, for messages.
const diagnoseWant = "knee records.jsonl, a CSV/JSONL of per-request phase times, a vLLM bench serve result JSON, or a stored run (an id, last, last~N)"

func readDiagnoseInput(ctx context.Context, env *Env, path string) ([]record.Request, diagnose.Format, error) {
	return readDiagnoseStep(ctx, env, path, -1)
}

// readDiagnoseStep reads path; step ≥ 0 picks that step of a stored sweep.
func readDiagnoseStep(ctx context.Context, env *Env, path string, step int) ([]record.Request, diagnose.Format, error) {
	if isRunRef(path) {
		if _, err := os.Stat(path); err != nil {
			return diagnoseStoredRun(env, path, step)
		}
	}
	in, err := openText(ctx, env, path, diagnoseWant)
	if err != nil {
		return nil, "", err
	}
	defer in.Close()
	recs, kind, err := diagnose.ReadSized(in, in.Size)
	if ctx.Err() != nil {
		return nil, "", fmt.Errorf("reading %s: %w", path, ctx.Err())
	}
	var cut *record.CutLastLineError
	if errors.As(err, &cut) {
		fmt.Fprintf(env.Stderr, "knee diagnose: warning: %s: skipped the last line, %v; diagnosing the %d records before it\n", path, cut, len(recs))
		err = nil
	}
	if err != nil {
		return nil, "", Usagef("%s: %v", path, err)
	}
	return recs, kind, nil
}

// isRunRef says whether arg names a stored run as report and records take
// it: an id, last, last~N.
func isRunRef(arg string) bool {
	if arg == "last" || arg == "latest" {
		return true
	}
	n := strings.TrimPrefix(arg, "last~")
	_, err := strconv.ParseUint(n, 10, 63)
	return err == nil
}

// diagnoseStoredRun reads a stored run's records (the default database)
// as knee report reads them (runs.Load): a sweep's are the records of the
// step its report summarises, numbered within that step as knee records
// numbers them. Every step's records together would overlay steps that
// each count their send times from their own start. step ≥ 0 picks
// another step of a sweep.
func diagnoseStoredRun(env *Env, ref string, step int) ([]record.Request, diagnose.Format, error) {
	st, err := openDBRead(env, "")
	if err != nil {
		return nil, "", Usagef("%s is neither a file nor a stored run: %v", ref, err)
	}
	defer st.Close()
	id, err := resolveRun(st, ref)
	if err != nil {
		return nil, "", err
	}
	if step >= 0 {
		load, recs, err := runs.SweepStep(st, id, step)
		if err != nil {
			return nil, "", dbErr(err)
		}
		if len(recs) == 0 {
			return nil, "", Usagef("run %d's step %d (%s) has no per-request records to diagnose (a simulated sweep, or one stored before knee kept sweep records)", id, step, load)
		}
		fmt.Fprintf(env.Stderr, "knee diagnose: run %d is a sweep: diagnosing its step %d, %s\n", id, step, load)
		return recs, diagnose.FormatRecords, nil
	}
	lr, err := runs.Load(st, id)
	if err != nil {
		return nil, "", dbErr(err)
	}
	recs := lr.Records
	if lr.Sweep != nil && len(recs) > 0 {
		step, _ := lr.Sweep.SummaryStep()
		fmt.Fprintf(env.Stderr, "knee diagnose: run %d is a sweep: diagnosing its step %d, %s, as knee report summarises it; another step: knee diagnose %d --step N (or knee records %d --step N | knee diagnose -)\n",
			id, step, lr.Report.Step, id, id)
	}
	if len(recs) == 0 {
		return nil, "", Usagef("run %d has no per-request records to diagnose (a summary-only import, or a simulated run stored without them)", id)
	}
	return recs, diagnose.FormatRecords, nil
}

func countSet(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}
