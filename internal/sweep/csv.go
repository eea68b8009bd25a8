package sweep

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Table is what ReadCSV found: the steps, their load kind and the columns
// the file gave (canonical names, e.g. ttft_p95_ms even when the header
// said ttft_p95_s).
type Table struct {
	Kind    string
	Columns []string
	Steps   []Step
}

// Has reports whether the file gave a column.
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

// ReadCSV reads load points measured by any tool. The header names columns
// with units (docs/sweep.md): one load column, concurrency or rate_rps; at
// least one throughput column, throughput_rps or output_tps; then any of
// ttft/ttft_sched/itl/tpot/e2e × mean/p50/p90/p95/p99/p999/max in ms
// (ttft_p95_ms; a _s suffix is read as seconds), goodput_rps, offered_rps,
// input_tps, error_rate and rejection_rate (fractions 0..1). Lines starting
// with # are comments. Errors name the line and column.
func ReadCSV(rd io.Reader) (*Table, error) {
	cr := csv.NewReader(rd)
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
	type col struct {
		name   string
		scale  float64
		set    func(s *Step, v float64)
		isLoad bool
	}
	cols := make([]col, len(header))
	t := &Table{}
	seen := map[string]int{}
	for i, h := range header {
		name := strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))
		at := fmt.Sprintf("line %d, column %d", hline, i+1)
		c := col{name: name, scale: 1}
		switch {
		case name == "":
			return nil, fmt.Errorf("%s: empty column name in the header (want e.g. %s)", at, ExampleHeader)
		case name == "concurrency" || name == "rate_rps":
			if t.Kind != "" {
				return nil, fmt.Errorf("%s: a second load column %q: give either concurrency or rate_rps", at, name)
			}
			t.Kind = Concurrency
			if name == "rate_rps" {
				t.Kind = Rate
			}
			c.isLoad = true
		case name == "goodput_rps":
			c.set = func(s *Step, v float64) { s.Summary.GoodputRPS = &v }
		default:
			canon := name
			if strings.HasSuffix(name, "_s") {
				canon = strings.TrimSuffix(name, "_s") + "_ms"
			}
			k, ok := lookupColumn(canon)
			if !ok || (canon != name && !k.latency) {
				return nil, fmt.Errorf("%s: unknown column %q; want a load column (concurrency or rate_rps) and columns named with their unit, such as %s (all: %s)",
					at, h, ExampleHeader, strings.Join(KnownColumns(), ", "))
			}
			if canon != name {
				c.scale = 1000
			}
			c.name = canon
			c.set = func(s *Step, v float64) { *k.field(&s.Summary) = v }
		}
		if j, dup := seen[c.name]; dup {
			return nil, fmt.Errorf("%s: column %q repeats column %d", at, c.name, j+1)
		}
		seen[c.name] = i
		if !c.isLoad {
			t.Columns = append(t.Columns, c.name)
		}
		cols[i] = c
	}
	if t.Kind == "" {
		return nil, fmt.Errorf("line %d: no load column: the header needs concurrency or rate_rps (e.g. %s)", hline, ExampleHeader)
	}
	if !t.Has(MetricThroughputRPS) && !t.Has(MetricOutputTPS) {
		return nil, fmt.Errorf("line %d: no throughput column: the header needs throughput_rps or output_tps (e.g. %s)", hline, ExampleHeader)
	}
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
			return nil, fmt.Errorf("line %d: %d fields, but the header has %d columns (%s)", line, len(rec), len(cols), strings.Join(header, ","))
		}
		s := Step{Load: Load{Kind: t.Kind}, SLOMet: true, Line: line}
		for i, cell := range rec {
			cell = strings.TrimSpace(cell)
			at := fmt.Sprintf("line %d, column %d (%s)", line, i+1, cols[i].name)
			v, err := strconv.ParseFloat(cell, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				if cell == "" {
					return nil, fmt.Errorf("%s: empty cell; want a number", at)
				}
				return nil, fmt.Errorf("%s: %q is not a number", at, cell)
			}
			if v < 0 {
				return nil, fmt.Errorf("%s: %v is negative; want 0 or more", at, v)
			}
			if cols[i].isLoad {
				if v == 0 {
					return nil, fmt.Errorf("%s: load 0; want a positive load", at)
				}
				s.Load.Value = v
				continue
			}
			if strings.HasSuffix(cols[i].name, "_rate") && v > 1 {
				return nil, fmt.Errorf("%s: %v is above 1; rates are fractions 0..1 (write 0.02 for 2%%)", at, v)
			}
			cols[i].set(&s, v*cols[i].scale)
		}
		t.Steps = append(t.Steps, s)
	}
	if len(t.Steps) == 0 {
		return nil, fmt.Errorf("line %d: a header but no data lines: want one line per load step", hline)
	}
	return t, nil
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
				v = 0
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
