package sweep

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/ingest"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/knee-dev/knee/internal/stats"
)

// AnalyzeFrom analyses load points measured by any tool (knee sweep
// --from): CSV/TSV load tables and other tools' result files (ingest), one
// step per run, in any mix; a folder stands for the result files in it.
// read reads one file as the command reads its inputs (the command's
// limits and messages); metric is --knee-metric, set the objectives.
func AnalyzeFrom(args []string, read func(path string) ([]byte, error), metric string, set slo.Set) (*Result, error) {
	var paths, notes []string
	for _, a := range args {
		if a = strings.TrimSpace(a); a == "" {
			continue
		}
		fi, err := os.Stat(a)
		if err != nil {
			return nil, badinput.Errorf("--from: %v", err)
		}
		if !fi.IsDir() {
			paths = append(paths, a)
			continue
		}
		found, skipped, err := resultFilesIn(a)
		if err != nil {
			return nil, badinput.Errorf("--from %s: %v", a, err)
		}
		if len(found) == 0 {
			return nil, badinput.Errorf("--from %s: no result files in the folder (want vLLM, GuideLLM, AIPerf or inference-perf JSON)", a)
		}
		paths = append(paths, found...)
		if len(skipped) > 0 {
			notes = append(notes, fmt.Sprintf("in %s, skipped %d entries that are not load results: %s", a, len(skipped), listCapped(skipped, 10)))
		}
	}
	if len(paths) == 0 {
		return nil, badinput.Errorf("--from: give a file")
	}
	var steps []Step
	var cands []fromRun
	for _, p := range paths {
		data, err := read(p)
		if err != nil {
			return nil, err
		}
		if !looksJSON(data) {
			tab, err := ReadCSV(bytes.NewReader(data))
			if err != nil {
				return nil, badinput.Errorf("--from %s: %v", p, err)
			}
			for i := range tab.Steps {
				if len(paths) > 1 {
					tab.Steps[i].Source = fmt.Sprintf("%s line %d", p, tab.Steps[i].Line)
				}
			}
			steps = append(steps, tab.Steps...)
			notes = append(notes, prefixed(p, len(paths), tab.Notes)...)
			continue
		}
		runs, err := ingest.Read(data)
		if err != nil {
			return nil, badinput.Errorf("--from %s: %v", p, err)
		}
		for i := range runs {
			where := p
			if runs[i].Source != "" {
				where += " " + runs[i].Source
			} else if len(runs) > 1 {
				where += fmt.Sprintf(" result %d", i+1)
			}
			cands = append(cands, fromRun{where: where, run: &runs[i]})
		}
	}
	if len(cands) > 0 {
		s, n, err := resultSteps(cands)
		if err != nil {
			return nil, badinput.Errorf("--from: %v", err)
		}
		steps = append(steps, s...)
		notes = append(notes, n...)
	}
	tab, err := TableOf(steps)
	if err != nil {
		return nil, badinput.Errorf("--from: %v", err)
	}
	what := paths[0]
	if len(paths) > 1 {
		what = fmt.Sprintf("%d files", len(paths))
	}
	if err := JudgeTable(tab, set); err != nil {
		return nil, badinput.Errorf("--from %s: %v", what, err)
	}
	if metric != "" && !tab.Has(metric) {
		return nil, badinput.Errorf("--knee-metric %s: not every step of %s gives it", metric, what)
	}
	res, err := Analyze(tab.Steps, Options{Metric: metric, SLOs: Objectives(set)})
	if err != nil {
		return nil, badinput.Errorf("--from: %v", err)
	}
	res.Notes = append(res.Notes, fmt.Sprintf("points read from %s (%d steps)", what, len(tab.Steps)))
	res.Notes = append(res.Notes, notes...)
	res.Notes = append(res.Notes, tab.Notes...)
	return res, nil
}

// fromRun is one imported run and where it was read.
type fromRun struct {
	where string
	run   *ingest.Run
}

// resultSteps turns imported runs into steps. The load kind is the one the
// runs vary (vLLM files carry both max_concurrency and request_rate);
// runs that do not give it (GuideLLM's synchronous and throughput
// benchmarks in a rate sweep) are left out with a note.
func resultSteps(cands []fromRun) ([]Step, []string, error) {
	conc, rate := map[float64]bool{}, map[float64]bool{}
	nConc, nRate := 0, 0
	for _, c := range cands {
		if c.run.Concurrency > 0 {
			conc[c.run.Concurrency] = true
			nConc++
		}
		if c.run.RateRPS > 0 {
			rate[c.run.RateRPS] = true
			nRate++
		}
	}
	kind := Concurrency
	switch {
	case nConc == 0 && nRate == 0:
		return nil, nil, fmt.Errorf("%s does not say at what load it ran (vLLM: max_concurrency or request_rate; GuideLLM: the strategy; AIPerf: input_config.loadgen; inference-perf: load_summary)", cands[0].where)
	case nRate > nConc, nRate == nConc && len(rate) > len(conc):
		kind = Rate
	}
	var steps []Step
	var left []string
	seenNote := map[string]bool{}
	var notes []string
	for _, c := range cands {
		load := c.run.Concurrency
		if kind == Rate {
			load = c.run.RateRPS
		}
		if !(load > 0) {
			left = append(left, c.where)
			continue
		}
		s := NewStep(kind, load)
		s.Source = c.where
		s.Summary = c.run.Summary
		s.Summary.GoodputRPS = nil // a tool's goodput is by its own SLOs, not these
		unmeasuredAsMissing(&s.Summary)
		steps = append(steps, s)
		for _, n := range c.run.Notes {
			if !seenNote[n] {
				seenNote[n] = true
				notes = append(notes, n)
			}
		}
	}
	if len(left) > 0 {
		unit := "concurrency"
		if kind == Rate {
			unit = "request rate"
		}
		notes = append(notes, fmt.Sprintf("left out (no %s, the load the other steps vary): %s", unit, strings.Join(left, ", ")))
	}
	if len(steps) == 0 {
		return nil, nil, fmt.Errorf("no run says its load")
	}
	return steps, notes, nil
}

func prefixed(path string, n int, notes []string) []string {
	if n == 1 {
		return notes
	}
	out := make([]string, len(notes))
	for i, s := range notes {
		out[i] = path + ": " + s
	}
	return out
}

// listCapped joins names, the first n of them and a count of the rest.
func listCapped(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}

func looksJSON(data []byte) bool {
	t := bytes.TrimLeft(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")), " \t\r\n")
	return len(t) > 0 && (t[0] == '{' || t[0] == '[')
}

// resultFilesIn lists the JSON result files that ingest recognises in dir
// and in its immediate subfolders (AIPerf writes a folder per run), in
// lexical order (the steps are sorted by load later); skipped are the other
// entries. It goes no deeper, so --from /tmp does not walk a tree.
func resultFilesIn(dir string) (found, skipped []string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	for _, d := range entries {
		p := filepath.Join(dir, d.Name())
		if !d.IsDir() {
			if resultFile(p, d) {
				found = append(found, p)
			} else {
				skipped = append(skipped, d.Name())
			}
			continue
		}
		inner, err := os.ReadDir(p)
		if err != nil {
			skipped = append(skipped, d.Name()+"/")
			continue
		}
		var here []string
		for _, e := range inner {
			if !e.IsDir() && resultFile(filepath.Join(p, e.Name()), e) {
				here = append(here, filepath.Join(p, e.Name()))
			}
		}
		if len(here) == 0 {
			skipped = append(skipped, d.Name()+"/")
		}
		found = append(found, here...)
	}
	return found, skipped, nil
}

// resultFile says whether the file at p is a load result ingest reads.
func resultFile(p string, d os.DirEntry) bool {
	if !strings.HasSuffix(strings.ToLower(d.Name()), ".json") {
		return false
	}
	fi, err := d.Info()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > ingest.MaxFileBytes {
		return false
	}
	format, err := detectFile(p)
	// inference-perf's summary_lifecycle_metrics.json covers every stage: not a step.
	return err == nil && format != ingest.FormatRecords && (format != ingest.FormatInferencePerf || strings.HasPrefix(d.Name(), "stage_"))
}

// detectFile names the format of the result file at path, refusing a
// binary one from its first bytes before reading it whole.
func detectFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	head := make([]byte, 8<<10)
	n, _ := io.ReadFull(f, head)
	if kind := ingest.BinaryKind(head[:n]); kind != "" {
		return "", fmt.Errorf("a binary file (%s)", kind)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	data, err := io.ReadAll(io.LimitReader(f, ingest.MaxFileBytes))
	if err != nil {
		return "", err
	}
	return ingest.Detect(data)
}

// unmeasuredAsMissing marks what an imported summary did not measure as
// missing (NaN): a distribution with no values, an offered rate of 0 (closed
// loop, or not said).
func unmeasuredAsMissing(s *stats.Summary) {
	for _, d := range []*stats.Dist{&s.TTFT, &s.TTFTSched, &s.ITL, &s.TPOT, &s.E2E, &s.Lag} {
		if d.Count == 0 {
			n := math.NaN()
			*d = stats.Dist{Mean: n, P50: n, P90: n, P95: n, P99: n, P999: n, Max: n}
		}
	}
	if s.OfferedRateRPS == 0 {
		s.OfferedRateRPS = math.NaN()
	}
	if s.InputTokenThroughputTPS == 0 && s.InputTokens == 0 {
		s.InputTokenThroughputTPS = math.NaN()
	}
}
