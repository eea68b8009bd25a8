package sweep

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Table is what ReadCSV found: the steps, their load kind, the columns
// every step has (canonical names, e.g. ttft_p95_ms even when the header
// said "P95 TTFT (s)"), and notes on how the file was read.
type Table struct {
	Kind    string
	Columns []string
	Steps   []Step
	Notes   []string
}

// Has reports whether every step has a column.
func (t *Table) Has(name string) bool {
	for _, c := range t.Columns {
		if c == name {
			return true
		}
	}
	return false
}

// ColumnFor names the CSV column that holds an SLO's value: "ttft","p95" →
// ttft_p95_ms; rates (error_rate, rejection_rate) are their own columns.
func ColumnFor(metric, stat string) string {
	if stat == "" {
		return metric
	}
	return metric + "_" + stat + "_ms"
}

// ExampleHeader is quoted in errors so the user sees a valid header.
const ExampleHeader = "concurrency,throughput_rps,output_tps,ttft_p95_ms,itl_p95_ms,e2e_p95_ms,error_rate"

// KnownColumns lists every column ReadCSV accepts besides the load column.
func KnownColumns() []string {
	out := []string{"goodput_rps"}
	for _, c := range columns {
		out = append(out, c.name)
	}
	return out
}

// NewStep is a step of the given load with every table column missing
// (NaN): a value a file does not give is never read as 0.
func NewStep(kind string, load float64) Step {
	s := Step{Load: Load{Kind: kind, Value: load}, SLOMet: true}
	for _, c := range columns {
		*c.field(&s.Summary) = math.NaN()
	}
	return s
}

// TableOf makes a table of steps read from anywhere: it checks that the
// loads are of one kind and distinct, and lists the columns every step has.
func TableOf(steps []Step) (*Table, error) {
	if len(steps) == 0 {
		return nil, errors.New("no load steps")
	}
	t := &Table{Kind: steps[0].Load.Kind, Steps: steps}
	seen := map[float64]int{}
	for i := range steps {
		s := &steps[i]
		if s.Load.Kind != t.Kind {
			return nil, fmt.Errorf("%s is a %s step, %s a %s step: give one kind of load", s.source(), s.Load.Kind, steps[0].source(), t.Kind)
		}
		if j, dup := seen[s.Load.Value]; dup {
			return nil, fmt.Errorf("%s repeats the load %s of %s: give one row per load step (average repeated measurements, or keep one)",
				s.source(), s.Load, steps[j].source())
		}
		seen[s.Load.Value] = i
	}
	var partial []string
	for _, c := range append([]column{{name: "goodput_rps"}}, columns...) {
		n := 0
		for i := range steps {
			sum := &steps[i].Summary
			if c.name == "goodput_rps" {
				if sum.GoodputRPS != nil {
					n++
				}
			} else if v := *c.field(sum); !math.IsNaN(v) {
				n++
			}
		}
		switch {
		case n == len(steps):
			t.Columns = append(t.Columns, c.name)
		case n > 0:
			partial = append(partial, c.name)
		}
	}
	if !t.Has(MetricThroughputRPS) && !t.Has(MetricOutputTPS) {
		for i := range steps {
			sum := &steps[i].Summary
			if math.IsNaN(sum.RequestThroughputRPS) && math.IsNaN(sum.OutputTokenThroughputTPS) {
				return nil, fmt.Errorf("%s has no throughput (requests/s or output tokens/s): every step needs one to place the knee", steps[i].source())
			}
		}
		noRPS, noTPS := "", ""
		for i := range steps {
			sum := &steps[i].Summary
			if noRPS == "" && math.IsNaN(sum.RequestThroughputRPS) {
				noRPS = steps[i].source()
			}
			if noTPS == "" && math.IsNaN(sum.OutputTokenThroughputTPS) {
				noTPS = steps[i].source()
			}
		}
		return nil, fmt.Errorf("%s has no requests/s and %s no output tokens/s: give one throughput for every step", noRPS, noTPS)
	}
	if len(partial) > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("only some steps give %s: shown as – where missing, and not usable for SLOs or the knee", strings.Join(partial, ", ")))
	}
	return t, nil
}

func (s *Step) source() string {
	switch {
	case s.Source != "":
		return s.Source
	case s.Line > 0:
		return fmt.Sprintf("line %d", s.Line)
	}
	return "step " + s.Load.String()
}

// maxTableBytes bounds a load table read into memory.
const maxTableBytes = 64 << 20

// ReadCSV reads load points measured by any tool, as CSV or TSV (tabs in
// the header line), with the column names people use (docs/sweep.md): one
// load column (concurrency, load, users, ... or rate, qps, request_rate,
// ...); at least one throughput column (throughput_rps, request_throughput,
// req/s; output_tps, output_throughput, tokens/s, ...); latencies as
// metric × statistic × unit in any order and spelling (ttft_p95_ms,
// p95_ttft_s, "P95 TTFT (ms)", mean_itl_ms, median_e2el_ms); goodput_rps,
// offered_rps, input_tps; error_rate and rejection_rate (fractions 0..1, or
// percent when the header says pct/%). Other columns are ignored and named
// in a note; an empty cell is a missing value, shown as "–". Lines starting
// with # are comments. Errors name the line and column.
func ReadCSV(rd io.Reader) (*Table, error) {
	data, err := io.ReadAll(io.LimitReader(rd, maxTableBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxTableBytes {
		return nil, fmt.Errorf("line 1: the file is larger than %d MiB: want one line per load step", maxTableBytes>>20)
	}
	cr := csv.NewReader(bytes.NewReader(data))
	cr.Comma = tableDelimiter(data)
	cr.Comment = '#'
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("empty file: want a header line such as %s, then one line per load step", ExampleHeader)
	}
	if err != nil {
		return nil, csvErr(err)
	}
	hline, _ := cr.FieldPos(0)
	cols := make([]headerColumn, len(header))
	kind, loadAt := "", -1
	seen := map[string]int{}
	var ignored []string
	var notes []string
	for i, h := range header {
		at := fmt.Sprintf("line %d, column %d", hline, i+1)
		c, err := classifyHeader(h)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", at, err)
		}
		cols[i] = c
		switch {
		case c.loadKind != "":
			if loadAt >= 0 {
				return nil, fmt.Errorf("%s: a second load column %q (column %d is %q): give one load column, concurrency or rate_rps, and rename or drop the other",
					at, h, loadAt+1, header[loadAt])
			}
			kind, loadAt = c.loadKind, i
			if c.generic {
				notes = append(notes, fmt.Sprintf("the load column %q does not say concurrency or request rate: read as concurrency (name it concurrency or rate_rps to say)", h))
			}
		case c.ignored != "":
			ignored = append(ignored, fmt.Sprintf("%q (%s)", h, c.ignored))
		default:
			if j, dup := seen[c.name]; dup {
				return nil, fmt.Errorf("%s: column %q repeats column %d (%q): both are %s", at, h, j+1, header[j], c.name)
			}
			seen[c.name] = i
		}
	}
	if kind == "" {
		return nil, fmt.Errorf("line %d: no load column: the header needs concurrency or rate_rps (or load, users, qps, request_rate, ...; e.g. %s)", hline, ExampleHeader)
	}
	_, rps := seen[MetricThroughputRPS]
	_, tps := seen[MetricOutputTPS]
	if !rps && !tps {
		return nil, fmt.Errorf("line %d: no throughput column: the header needs throughput_rps or output_tps (or request_throughput, output_throughput, tokens/s, ...; e.g. %s)", hline, ExampleHeader)
	}
	if len(ignored) > 0 {
		notes = append(notes, "ignored columns: "+strings.Join(ignored, ", "))
	}
	var steps []Step
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, csvErr(err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		if len(rec) != len(cols) {
			return nil, fmt.Errorf("line %d: %d fields, but the header has %d columns (%s)", line, len(rec), len(cols), strings.Join(header, string(cr.Comma)))
		}
		s := NewStep(kind, 0)
		s.Line = line
		for i, cell := range rec {
			c := cols[i]
			if c.ignored != "" {
				continue
			}
			name := c.name
			if c.loadKind != "" {
				name = header[i]
			}
			at := fmt.Sprintf("line %d, column %d (%s)", line, i+1, name)
			cell = strings.TrimSpace(cell)
			percentCell := strings.HasSuffix(cell, "%")
			cell = strings.TrimSpace(strings.TrimSuffix(cell, "%"))
			if cell == "" && c.loadKind == "" {
				continue // not measured there: missing, not 0
			}
			v, err := strconv.ParseFloat(cell, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				if cell == "" {
					return nil, fmt.Errorf("%s: empty load; want a number", at)
				}
				return nil, fmt.Errorf("%s: %q is not a number", at, cell)
			}
			if v < 0 {
				return nil, fmt.Errorf("%s: %v is negative; want 0 or more", at, v)
			}
			if c.loadKind != "" {
				if v == 0 {
					return nil, fmt.Errorf("%s: load 0; want a positive load", at)
				}
				s.Load.Value = v
				continue
			}
			v *= c.scale
			if percentCell && c.scale == 1 && strings.HasSuffix(c.name, "_rate") {
				v /= 100
			}
			if strings.HasSuffix(c.name, "_rate") && v > 1 {
				return nil, fmt.Errorf("%s: %v is above 1; rates are fractions 0..1 (write 0.02 for 2%%, or name the column error_pct)", at, v)
			}
			if c.name == "goodput_rps" {
				s.Summary.GoodputRPS = &v
				continue
			}
			col, _ := lookupColumn(c.name)
			*col.field(&s.Summary) = v
		}
		steps = append(steps, s)
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("line %d: a header but no data lines: want one line per load step", hline)
	}
	t, err := TableOf(steps)
	if err != nil {
		return nil, err
	}
	t.Notes = append(notes, t.Notes...)
	return t, nil
}

// tableDelimiter is a tab when the header line (the first line that is not
// blank or a comment) has tabs, else a comma.
func tableDelimiter(data []byte) rune {
	for _, line := range bytes.Split(data, []byte("\n")) {
		l := bytes.TrimSpace(line)
		if len(l) == 0 || l[0] == '#' {
			continue
		}
		if bytes.ContainsRune(line, '\t') {
			return '\t'
		}
		return ','
	}
	return ','
}

// csvErr turns encoding/csv's errors into "line N, column C: ..." messages.
func csvErr(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("line %d, column %d: %v", pe.Line, pe.Column, pe.Err)
	}
	return err
}

// csvOut lists the columns WriteCSV writes after the load column.
var csvOut = []string{"offered_rps", "throughput_rps", "output_tps", "input_tps", "goodput_rps",
	"ttft_p50_ms", "ttft_p95_ms", "ttft_p99_ms", "itl_p50_ms", "itl_p95_ms", "itl_p99_ms", "tpot_p50_ms",
	"e2e_p50_ms", "e2e_p95_ms", "e2e_p99_ms", "error_rate", "rejection_rate"}

// WriteCSV writes steps in the format ReadCSV reads, so a sweep measured by
// knee can be analysed again (or plotted) elsewhere. goodput_rps is written
// only when every step has it.
func WriteCSV(w io.Writer, kind string, steps []Step) error {
	cols := []string{LoadColumn(kind)}
	for _, c := range csvOut {
		if c == "goodput_rps" {
			all := len(steps) > 0
			for i := range steps {
				all = all && steps[i].Summary.GoodputRPS != nil
			}
			if !all {
				continue
			}
		}
		cols = append(cols, c)
	}
	cw := csv.NewWriter(w)
	if err := cw.Write(cols); err != nil {
		return err
	}
	for i := range steps {
		s := &steps[i]
		row := []string{strconv.FormatFloat(s.Load.Value, 'g', -1, 64)}
		for _, c := range cols[1:] {
			var v float64
			if c == "goodput_rps" {
				v = *s.Summary.GoodputRPS
			} else {
				col, _ := lookupColumn(c)
				v = *col.field(&s.Summary)
			}
			if math.IsInf(v, 0) || math.IsNaN(v) {
				row = append(row, "") // not measured: missing, never 0
				continue
			}
			row = append(row, strconv.FormatFloat(v, 'g', 6, 64))
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
