package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/report"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/knee-dev/knee/internal/sweep"
	"github.com/spf13/pflag"
)

// errorKindsLine lists a stored summary's error counts by kind.
var errorKindsLine = record.ErrorKindsLine[string]

// sweepFlags are the flags knee sweep and knee sim sweep share: which loads
// to step through, the objectives, and the output.
type sweepFlags struct {
	sweep.PlanChoice
	slos        stringList
	jsonOut     bool
	out         string
	quiet       bool
	wl          workloadFlags
	maxStepLoad float64 // the highest load plan() may step to
	junit       junitFlag
	mix         mixFlags
	lora        loraFlags
	// storedAs, once the sweep is stored, prints it as knee report prints
	// the stored run (nil: not stored): what the sweep printed is what it
	// keeps.
	storedAs func(io.Writer) error
}

func (f *sweepFlags) register(fs *pflag.FlagSet, defaultRequests int64) {
	fs.StringVar(&f.Concurrency, "concurrency", "", "closed-loop steps: a list such as 1,4,16,64 (measured in increasing order), or auto")
	fs.StringVar(&f.Rate, "rate", "", "open-loop steps in requests per second: a list such as 1,2,4,8 (measured in increasing order), or auto")
	fs.BoolVar(&f.Auto, "auto", false, "grow the load automatically (concurrency unless --rate auto): ×--factor from --min until an SLO fails or throughput stops growing, then bisect")
	fs.Float64Var(&f.Min, "min", 1, "automatic sweep: first load")
	fs.Float64Var(&f.Max, "max", 0, "automatic sweep: highest load (0: 1024 in flight or 1000 req/s)")
	fs.Float64Var(&f.Factor, "factor", 2, "automatic sweep: load growth per step")
	fs.IntVar(&f.Refine, "refine", 3, "automatic sweep: bisection steps between the last good and the first bad load (0: none)")
	fs.StringVar(&f.Metric, "knee-metric", "", "throughput the knee is placed on: output_tps or throughput_rps (default: output_tps when measured)")
	fs.Var(&f.slos, "slo", sloUsage+"; the SLO-safe point is the highest load meeting all")
	fs.BoolVar(&f.jsonOut, "json", false, "print the sweep as JSON on stdout instead of the table")
	fs.StringVar(&f.out, "out", "", "directory for sweep.json, sweep.md, sweep.csv (readable by knee sweep --from) and each step's records_<kind>_<load>.jsonl")
	fs.BoolVar(&f.quiet, "quiet", false, "no per-step progress on stderr")
	f.junit.register(fs, "the verdicts (a test case per step and SLO, and the SLO-safe point)")
	f.mix.register(fs)
	f.lora.register(fs)
	// The shared workload flags, except the single load level: here
	// --concurrency and --rate are lists. --requests/--duration are per step.
	tmp := pflag.NewFlagSet("workload", pflag.ContinueOnError)
	f.wl.register(tmp, 1, defaultRequests)
	tmp.VisitAll(func(fl *pflag.Flag) {
		if fl.Name == "concurrency" || fl.Name == "rate" {
			return
		}
		usage := fl.Usage
		if fl.Name == "requests" || fl.Name == "duration" || fl.Name == "warmup" {
			usage += " (per step)"
		}
		fs.Var(fl.Value, fl.Name, usage)
	})
	// Which flags were given, and what a scenario file saves, is the
	// sweep's own flag set.
	f.wl.fs, f.wl.LoadLists = fs, true
}

// autoPlan reports whether the loads grow automatically.
func (f *sweepFlags) autoPlan() bool {
	p, err := f.plan()
	return err == nil && p.Auto()
}

// plan resolves the load flags into a sweep plan (sweep.PlanChoice).
func (f *sweepFlags) plan() (sweep.Plan, error) {
	p, most, err := f.PlanChoice.Plan(maxInFlight, maxRateRPS)
	f.maxStepLoad = max(f.maxStepLoad, most)
	return p, err
}

// validateWorkload checks the per-step bounds and other workload flags.
// A step given only --duration runs for that long: the default request
// count then does not cut it short.
func (f *sweepFlags) validateWorkload() error {
	f.wl.Concurrency = 1 // the step sets it; validate the rest
	if err := f.wl.validate(); err != nil {
		return err
	}
	if f.wl.TracePath != "" && f.Rate == "" {
		return Usagef("a sweep over a trace steps its rate: give --rate R1,R2,... (each step replays the trace at the speed-up that gives that mean rate) or --rate auto")
	}
	return f.wl.OpenLoopOnly(f.Rate != "")
}

func (f *sweepFlags) objectives() (slo.Set, error) {
	set, err := slo.ParseAll(f.slos)
	if err != nil {
		return nil, Usagef("--slo: %v", err)
	}
	if err := f.junit.check(); err != nil { // with the other checks, before any step runs
		return nil, err
	}
	return set, nil
}

// progress prints one line per finished step on stderr.
func (f *sweepFlags) progress(w io.Writer) func(sweep.Step) {
	if f.quiet {
		return nil
	}
	return func(s sweep.Step) {
		verdict := ""
		if len(s.SLOs) > 0 || len(s.Classes) > 0 {
			verdict = ", SLOs met"
			if !s.SLOMet {
				verdict = ", SLO failed" + failingClasses(s)
			}
		}
		// No completed request: no latency, and "0 ms" would read as fast.
		ttft := "–"
		if s.Summary.TTFT.Count > 0 {
			ttft = fmt.Sprintf("%.0f ms", s.Summary.TTFT.P95)
		}
		errs := fmt.Sprintf("%.1f%%", 100*s.Summary.ErrorRate)
		if s.Summary.Completed == 0 && s.Summary.Requests > 0 {
			errs += " (" + errorKindsLine(s.Summary.ErrorKinds) + "; no completed requests)"
		}
		fmt.Fprintf(w, "step %s: %.3g req/s, %.0f output tok/s, p95 TTFT %s, errors %s%s\n",
			s.Load, s.Summary.RequestThroughputRPS, s.Summary.OutputTokenThroughputTPS, ttft, errs, verdict)
	}
}

// emit writes the result: the table or JSON on stdout, files under --out.
// With objectives, no safe load is an SLO failure (exit 3).
func (f *sweepFlags) emit(env *Env, res *sweep.Result) error {
	if f.out != "" {
		if err := writeSweepOut(f.out, res); err != nil {
			return err
		}
	}
	if err := f.junit.write("knee sweep", sweepSuites(res, &f.junit)...); err != nil {
		return err
	}
	var err error
	switch {
	case f.jsonOut:
		err = writeSweepJSON(env.Stdout, res)
	case f.storedAs != nil:
		if err = f.storedAs(env.Stdout); err != nil {
			fmt.Fprintf(env.Stderr, "knee: reading the stored sweep back: %v; its analysis as measured follows\n", err)
			err = report.SweepText(env.Stdout, res)
		}
	default:
		err = report.SweepText(env.Stdout, res)
	}
	if err != nil {
		return err
	}
	return sweepExit(res)
}

// sweepExit: a sweep succeeds when it found a load that meets every SLO
// (higher steps failing is the point of sweeping); with no safe load at all
// it exits 3.
func sweepExit(res *sweep.Result) error {
	if res.Judged() && !res.SLOSafe.Found() {
		return &SLOError{Failed: []string{"no measured load meets " + strings.Join(append(append([]string{}, res.SLOs...), res.ClassSLOs...), ", ") + ": " + res.SLOSafe.Reason}}
	}
	return nil
}

func writeSweepJSON(w io.Writer, res *sweep.Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}

func writeSweepOut(dir string, res *sweep.Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Usagef("--out %s: %v", dir, err)
	}
	write := func(name string, fn func(io.Writer) error) error {
		path := filepath.Join(dir, name)
		fh, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("--out: %w", err)
		}
		if err := fn(fh); err != nil {
			fh.Close()
			return fmt.Errorf("writing %s: %w", path, err)
		}
		return fh.Close()
	}
	if err := write("sweep.json", func(w io.Writer) error { return writeSweepJSON(w, res) }); err != nil {
		return err
	}
	if err := write("sweep.md", func(w io.Writer) error { return report.SweepMarkdown(w, res) }); err != nil {
		return err
	}
	return write("sweep.csv", func(w io.Writer) error { return sweep.WriteCSV(w, res.LoadKind, res.Steps) })
}

// stepConfig lists the resolved workload settings of every step: the
// shared workload flags without the single load level, which the sweep
// varies.
func (f *sweepFlags) stepConfig(res *sweep.Result) [][2]string {
	var out [][2]string
	for _, kv := range f.wl.config() {
		if kv[0] != "concurrency" && kv[0] != "rate_rps" {
			out = append(out, kv)
		}
	}
	var loads []string
	for _, s := range res.Steps {
		loads = append(loads, strconv.FormatFloat(s.Load.Value, 'g', -1, 64))
	}
	out = append(out, [2]string{"sweep_" + sweep.LoadColumn(res.LoadKind), strings.Join(loads, ",")})
	out = append(out, f.mix.ConfigKV()...)
	if len(res.SLOs) > 0 {
		out = append(out, [2]string{"slos", strings.Join(res.SLOs, " ")})
	}
	return out
}
