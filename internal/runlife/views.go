package runlife

import (
	"bytes"
	"cmp"
	"strconv"

	"github.com/knee-dev/knee/internal/compare"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/report"
	"github.com/knee-dev/knee/internal/runs"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/store"
)

// LoadReport loads stored run id as knee report shows it: with a sharded
// run's notes (whether it is partial, each shard's figures).
func LoadReport(st *store.Store, id int64) (*runs.Loaded, error) {
	lr, err := runs.Load(st, id)
	if err != nil {
		return nil, err
	}
	notes, err := ShardNotes(st, id)
	if err != nil {
		return nil, err
	}
	lr.Report.Notes = append(lr.Report.Notes, notes...)
	return lr, nil
}

// HTMLReport renders a stored run as knee report --format html does.
func HTMLReport(st *store.Store, id int64) ([]byte, error) {
	lr, err := LoadReport(st, id)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	err = report.HTML(&buf, lr.Report, report.HTMLData{Records: lr.Records, Sweep: lr.Sweep})
	return buf.Bytes(), err
}

// CompareStored compares stored runs a and b as knee compare --json does
// with its default options (the web UI's).
func CompareStored(st *store.Store, a, b int64) (any, error) {
	var sides [2]compare.Side
	var classes [2][]report.ClassRow
	for i, id := range []int64{a, b} {
		lr, err := runs.Load(st, id)
		if err != nil {
			return nil, err
		}
		sides[i] = compare.Side{ID: strconv.FormatInt(id, 10), Summary: lr.Report.Summary, Records: lr.Records}
		classes[i] = report.ClassRows(lr.Report.Classes)
	}
	res := compare.Compare(sides[0], sides[1], compare.Options{Resamples: 1000, Seed: 1, MinChange: compare.DefaultMinChange,
		MinDiffMS: compare.DefaultMinDiffMS})
	// Each run's traffic classes beside the comparison (none: no mix).
	return struct {
		compare.Result
		Classes [2][]report.ClassRow `json:"classes"`
	}{res, classes}, nil
}

// ClassAccumulators summarise a streamed run (knee sim) per class, each
// with its objectives; nil without classes.
type ClassAccumulators struct {
	names []string
	acc   map[string]*stats.Accumulator
	objs  map[string]slo.Set
}

// NewClassAccumulators summarises each of names with objectives and its
// own classSLOs (nil without names).
func NewClassAccumulators(names []string, opts stats.Options, objectives slo.Set, classSLOs map[string]slo.Set) *ClassAccumulators {
	if len(names) == 0 {
		return nil
	}
	c := &ClassAccumulators{names: names, acc: map[string]*stats.Accumulator{}, objs: map[string]slo.Set{}}
	opts.Series = false
	for _, n := range names {
		objs := append(append(slo.Set{}, objectives...), classSLOs[n]...)
		o := opts
		o.Good = nil
		if len(objs) > 0 {
			o.Good = objs.Good
		}
		c.acc[n], c.objs[n] = stats.NewAccumulator(o), objs
	}
	return c
}

// Add takes one record into its class.
func (c *ClassAccumulators) Add(r *record.Request) {
	if c == nil {
		return
	}
	if a := c.acc[cmp.Or(r.Class, report.MainClass)]; a != nil {
		a.Add(r)
	}
}

// Summaries are the classes' summaries and verdicts, in order.
func (c *ClassAccumulators) Summaries() []report.Class {
	if c == nil {
		return nil
	}
	out := make([]report.Class, 0, len(c.names))
	for _, n := range c.names {
		sum := c.acc[n].Summary()
		out = append(out, report.Class{Name: n, Summary: sum, SLOs: c.objs[n].Evaluate(sum), Probe: n == record.ProbeClass})
	}
	return out
}
