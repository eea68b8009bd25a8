package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/knee-dev/knee/internal/energy"
	"github.com/knee-dev/knee/internal/scrape"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/sweep"
)

// JSON writes the run as one JSON object: every field of the summary at the
// top level (the same shape as summary.json, so a CI job reads "requests"
// or "ttft_ms.p95" from either), plus "run" (metadata and resolved
// configuration), "slos" (each objective with its measured value and
// verdict), "notes" and "definitions". Infinite statistics are null.
func JSON(w io.Writer, run *Run) error {
	b, err := MarshalJSON(run)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// jsonMeta is the "run" object.
type jsonMeta struct {
	ID       string    `json:"id,omitempty"`
	Kind     string    `json:"kind,omitempty"`
	Version  string    `json:"version,omitempty"`
	Target   string    `json:"target,omitempty"`
	Model    string    `json:"model,omitempty"`
	Load     string    `json:"load,omitempty"`
	Workload string    `json:"workload,omitempty"`
	Label    string    `json:"label,omitempty"`
	Status   string    `json:"status,omitempty"`
	Start    time.Time `json:"start"`
	Config   OrderedKV `json:"config,omitempty"`
}

// jsonSLO is one evaluated objective. Value and threshold are in the
// summary's units, named by unit: ms, fraction, rps or tps.
type jsonSLO struct {
	Objective string  `json:"objective"`
	Metric    string  `json:"metric"`
	Stat      string  `json:"stat,omitempty"`
	Op        string  `json:"op"`
	Threshold float64 `json:"threshold"`
	Value     float64 `json:"value"`
	Unit      string  `json:"unit"`
	Met       bool    `json:"met"`
	NoData    bool    `json:"no_data,omitempty"`
}

type jsonExtra struct {
	Run         jsonMeta     `json:"run"`
	SLOs        []jsonSLO    `json:"slos,omitempty"`
	SLOsMet     *bool        `json:"slos_met,omitempty"`
	Notes       []string     `json:"notes,omitempty"`
	Definitions []Definition `json:"definitions"`
	// ErrorMessages: the most common failure messages, most frequent first.
	ErrorMessages []ErrorMessage `json:"error_messages,omitempty"`
	// Server is the scraped server view (docs/server-metrics.md).
	Server *scrape.View `json:"server,omitempty"`
	// ServerPercentiles are the server histograms' percentiles as the
	// report shows them (ms, bounded by bucket edges and the client's
	// maximum), by metric and percentile.
	ServerPercentiles map[scrape.Metric]map[string]ServerPercentile `json:"server_percentiles_ms,omitempty"`
	// TTFTSplit is the report's TTFT split table as figures: each part's
	// mean in ms and share of TTFT (sched), with the server front end
	// (its TTFT beyond queue + prefill) the table derives.
	TTFTSplit []TTFTPart `json:"ttft_split_parts,omitempty"`
	// ErrorKindShares: each error kind's count over the measured requests
	// (a fraction, 0..1), as the report's Errors table shows it.
	ErrorKindShares map[string]float64 `json:"error_kind_shares,omitempty"`
	// Engine: a simulated run's engine figures.
	Engine *EngineFigures `json:"engine,omitempty"`
	// Energy: what the GPUs spent, per token and per request.
	Energy *energy.Figures `json:"energy,omitempty"`
	// GPU: the GPUs' telemetry over the run (dcgm-exporter).
	GPU *scrape.GPUView `json:"gpu,omitempty"`
	// Predictions: a simulated run's headline figures with their
	// held-out ranges.
	Predictions *PredictionRanges `json:"prediction_ranges,omitempty"`
	// Classes: each traffic class's summary (same shape as the top level)
	// and objectives.
	Classes []jsonClass `json:"classes,omitempty"`
	jsonSweep
}

// jsonClass is one traffic class in JSON.
type jsonClass struct {
	Name    string        `json:"name"`
	Probe   bool          `json:"probe,omitempty"`
	SLOs    []jsonSLO     `json:"slos,omitempty"`
	SLOsMet *bool         `json:"slos_met,omitempty"`
	Summary stats.Summary `json:"summary"`
}

func jsonSLOs(results []slo.Result) (out []jsonSLO, met *bool) {
	if len(results) == 0 {
		return nil, nil
	}
	all := true
	for _, r := range results {
		o := r.Objective
		out = append(out, jsonSLO{Objective: o.String(), Metric: o.Metric, Stat: o.Stat, Op: o.Op,
			Threshold: o.Threshold, Value: r.Value, Unit: sloUnit(o), Met: r.Met, NoData: r.NoData})
		all = all && r.Met
	}
	return out, &all
}

// jsonSweep is what a sweep run adds: the steps (each as knee sweep --json
// writes it), the knee, the SLO-safe point, and which step the top-level
// figures are (summary_step).
type jsonSweep struct {
	LoadKind      string       `json:"load_kind,omitempty"`
	KneeMetric    string       `json:"knee_metric,omitempty"`
	SweepSLOs     []string     `json:"sweep_slos,omitempty"`
	Steps         []sweep.Step `json:"steps,omitempty"`
	Knee          *sweep.Point `json:"knee,omitempty"`
	SLOSafe       *sweep.Point `json:"slo_safe,omitempty"`
	SummaryStep   string       `json:"summary_step,omitempty"`
	SweepWarnings []string     `json:"sweep_warnings,omitempty"`
}

func sloUnit(o slo.Objective) string {
	switch {
	case o.Kind == slo.Latency:
		return "ms"
	case o.Kind == slo.Rate:
		return "fraction"
	case o.Metric == "output_throughput":
		return "tps"
	}
	return "rps"
}

// MarshalJSON returns what JSON writes, indented, with a final newline.
func MarshalJSON(run *Run) ([]byte, error) {
	extra := jsonExtra{
		Run: jsonMeta{ID: run.ID, Kind: run.Kind, Version: run.Version, Target: run.Target, Model: run.Model,
			Load: run.Load, Workload: run.Workload, Label: run.Label, Status: run.Status, Start: run.Start.UTC(),
			Config: run.Config},
		Notes:             run.Notes,
		Definitions:       Definitions(&run.Summary),
		ErrorMessages:     run.ErrorMessages,
		Server:            run.Server,
		ServerPercentiles: serverPercentiles(run.Server, &run.Summary),
		ErrorKindShares:   errorShares(&run.Summary),
		TTFTSplit:         ttftSplitParts(run.Server),
		Engine:            run.Engine,
		Energy:            run.Energy,
		GPU:               run.GPU,
		Predictions:       run.Predictions,
	}
	if sw := run.Sweep; sw != nil {
		knee, safe := sw.Knee, sw.SLOSafe
		extra.jsonSweep = jsonSweep{LoadKind: sw.LoadKind, KneeMetric: sw.KneeMetric, SweepSLOs: sw.SLOs, Steps: sw.Steps,
			Knee: &knee, SLOSafe: &safe, SummaryStep: run.Step, SweepWarnings: sweepWarnings(sw)}
		extra.Notes = append(append([]string{}, extra.Notes...), sw.Notes...)
	}
	extra.SLOs, extra.SLOsMet = jsonSLOs(run.SLOs)
	for _, c := range run.Classes {
		jc := jsonClass{Name: c.Name, Probe: c.Probe, Summary: c.Summary}
		jc.SLOs, jc.SLOsMet = jsonSLOs(c.SLOs)
		extra.Classes = append(extra.Classes, jc)
	}
	head, err := marshalPlain(extra)
	if err != nil {
		return nil, err
	}
	sum, err := marshalPlain(run.Summary)
	if err != nil {
		return nil, err
	}
	// Splice the two objects: {extra…, summary…}. Their keys are disjoint.
	joined := make([]byte, 0, len(head)+len(sum))
	joined = append(joined, head[:len(head)-1]...)
	joined = append(joined, ',')
	joined = append(joined, sum[1:]...)
	var out bytes.Buffer
	if err := json.Indent(&out, joined, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// marshalPlain is json.Marshal without HTML escaping: objectives hold "<",
// and people read this output in terminals, not browsers.
func marshalPlain(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// ReadJSON reads what JSON wrote back into a Run (SLO objectives are parsed
// again from their text), so a stored report can be rendered in any format.
func ReadJSON(r io.Reader) (*Run, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var extra jsonExtra
	if err := json.Unmarshal(b, &extra); err != nil {
		return nil, fmt.Errorf("not a knee report JSON: %w", err)
	}
	var sum stats.Summary
	if err := json.Unmarshal(b, &sum); err != nil {
		return nil, fmt.Errorf("not a knee report JSON: %w", err)
	}
	m := extra.Run
	var sw *sweep.Result
	if len(extra.Steps) > 0 {
		sw = &sweep.Result{LoadKind: extra.LoadKind, KneeMetric: extra.KneeMetric, SLOs: extra.SweepSLOs, Steps: extra.Steps,
			Knee: sweep.Point{Index: -1}, SLOSafe: sweep.Point{Index: -1}, Warnings: extra.SweepWarnings}
		if extra.Knee != nil {
			sw.Knee = *extra.Knee
		}
		if extra.SLOSafe != nil {
			sw.SLOSafe = *extra.SLOSafe
		}
		for _, pt := range []*sweep.Point{&sw.Knee, &sw.SLOSafe} {
			if pt.Found() {
				for i := range sw.Steps {
					if sw.Steps[i].Load.Value == pt.Load {
						pt.Index = i
					}
				}
			}
		}
	}
	run := &Run{Sweep: sw, Step: extra.SummaryStep, ErrorMessages: extra.ErrorMessages, ID: m.ID, Kind: m.Kind, Version: m.Version, Target: m.Target, Model: m.Model, Load: m.Load,
		Workload: m.Workload, Label: m.Label, Status: m.Status, Start: m.Start, Config: m.Config,
		Summary: sum, Notes: extra.Notes, Engine: extra.Engine}
	for _, s := range extra.SLOs {
		o, err := slo.Parse(s.Objective)
		if err != nil {
			return nil, fmt.Errorf("slos: %w", err)
		}
		run.SLOs = append(run.SLOs, slo.Result{Objective: o, Value: s.Value, Met: s.Met, NoData: s.NoData})
	}
	return run, nil
}

// OrderedKV is a configuration as a JSON object with its keys in order
// (runs keep their settings in the order the user reads them).
type OrderedKV [][2]string

func (kv OrderedKV) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, p := range kv {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(p[0])
		v, _ := json.Marshal(p[1])
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func (kv *OrderedKV) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return fmt.Errorf("config: want an object")
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		var v string
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("config %q: %w", t, err)
		}
		*kv = append(*kv, [2]string{t.(string), v})
	}
	return nil
}

// errorShares is each error kind's share of the measured requests (nil
// without errors).
func errorShares(s *stats.Summary) map[string]float64 {
	if len(s.ErrorKinds) == 0 || s.Requests == 0 {
		return nil
	}
	out := make(map[string]float64, len(s.ErrorKinds))
	for k, n := range s.ErrorKinds {
		out[k] = float64(n) / float64(s.Requests)
	}
	return out
}

// TTFTPart is one row of the TTFT split: a part of the mean TTFT (sched).
type TTFTPart struct {
	Part  string  `json:"part"` // client_lag, overhead, server_queue, server_prefill, server_front_end, server_ttft
	MS    float64 `json:"ms"`
	Share float64 `json:"share"` // of the mean TTFT (sched), 0..1; 0 when that is 0
}

// ttftPartLabels name each TTFTPart.Part in the text reports' table.
var ttftPartLabels = map[string]string{
	"client_lag":       "client lag (sent late)",
	"overhead":         "network, HTTP and client overhead",
	"server_queue":     "server queue",
	"server_prefill":   "server prefill",
	"server_front_end": "server front end (its TTFT beyond queue + prefill)",
	"server_ttft":      "server TTFT (no queue/prefill split exposed)",
}

// ttftSplitParts are the rows the TTFT split table shows (nil without a
// split), in its order.
func ttftSplitParts(v *scrape.View) []TTFTPart {
	if v == nil || v.Split == nil {
		return nil
	}
	sp := v.Split
	total := sp.ClientLagMS + sp.ClientTTFTMS
	var out []TTFTPart
	add := func(part string, ms float64) {
		p := TTFTPart{Part: part, MS: ms}
		if total > 0 {
			p.Share = ms / total
		}
		out = append(out, p)
	}
	add("client_lag", sp.ClientLagMS)
	add("overhead", sp.OverheadMS)
	if sp.HasPhases {
		add("server_queue", sp.ServerQueueMS)
		add("server_prefill", sp.ServerPrefillMS)
		if other := sp.ServerTTFTMS - sp.ServerQueueMS - sp.ServerPrefillMS; other > 0.005 {
			add("server_front_end", other)
		}
	} else {
		add("server_ttft", sp.ServerTTFTMS)
	}
	return out
}
