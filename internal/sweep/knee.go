package sweep

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/knee-dev/knee/internal/record"
)

// Point is a chosen load level and why it was chosen. Index is the step it
// sits on (-1 when none was chosen; Load is then nil in JSON).
type Point struct {
	Index  int
	Load   float64
	Reason string
}

// Found reports whether a load was chosen.
func (p Point) Found() bool { return p.Index >= 0 }

// MarshalJSON writes {"load": number or null, "reason": text}.
func (p Point) MarshalJSON() ([]byte, error) {
	w := struct {
		Load   *float64 `json:"load"`
		Reason string   `json:"reason"`
	}{Reason: p.Reason}
	if p.Found() {
		w.Load = &p.Load
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads the shape MarshalJSON writes. The step index is not
// stored; a found point reads back with Index 0 until Analyze places it.
func (p *Point) UnmarshalJSON(b []byte) error {
	var w struct {
		Load   *float64 `json:"load"`
		Reason string   `json:"reason"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*p = Point{Index: -1, Reason: w.Reason}
	if w.Load != nil {
		p.Index, p.Load = 0, *w.Load
	}
	return nil
}

func none(reason string, args ...any) Point {
	return Point{Index: -1, Reason: fmt.Sprintf(reason, args...)}
}

// MinKneeDistance is the smallest Kneedle distance (between the normalized
// throughput curve and the chord from its first to its last point) that
// counts as a knee. A straight line has distance 0; a curve that saturates
// half-way has about 0.5. Below 0.1, throughput still grows nearly in
// proportion to load and the sweep has not reached a knee.
const MinKneeDistance = 0.1

// FlatThroughput is the relative throughput growth over a whole sweep below
// which the curve is called flat (saturated from the first step).
const FlatThroughput = 0.05

// latencyP95 is the latency the knee reasons with: p95 TTFT, else p95 E2E
// when TTFT was not given (0 when neither).
func latencyP95(s *Step) (float64, string) {
	if v := s.Summary.TTFT.P95; v > 0 {
		return v, "p95 TTFT"
	}
	return s.Summary.E2E.P95, "p95 E2E"
}

// FindKnee places the knee of steps (sorted by load) on the throughput
// metric: the Kneedle method (Satopää, Albrecht, Irwin, Raghavan, "Finding a
// 'Kneedle' in a Haystack", ICDCS Workshops 2011) applied to the running
// maximum of throughput, so a noisy dip or a fall past overload cannot move
// the knee. Both axes are normalized to [0,1]; the knee is the step where
// the normalized throughput lies furthest above the chord from the first
// to the last step. The latency after the knee is stated as evidence.
func FindKnee(steps []Step, metric string) Point {
	n := len(steps)
	if n < 3 {
		return none("need at least 3 steps to place a knee, got %d", n)
	}
	x := make([]float64, n)
	env := make([]float64, n)
	best := math.Inf(-1)
	for i := range steps {
		x[i] = steps[i].Load.Value
		best = math.Max(best, steps[i].Throughput(metric))
		env[i] = best
	}
	unit := metricUnit(metric)
	x0, xN, y0, yN := x[0], x[n-1], env[0], env[n-1]
	if xN <= x0 {
		return none("all steps have the same load (%g): no curve to place a knee on", x0)
	}
	if yN <= 0 {
		return none("no step completed any request: no throughput curve")
	}
	if (yN-y0)/yN < FlatThroughput {
		return Point{Index: 0, Load: x0, Reason: fmt.Sprintf(
			"throughput is flat across the sweep (%s at %s, at most %s later): the service was already saturated at the first step",
			num(y0, unit), steps[0].Load, num(yN, unit))}
	}
	k, dk := -1, 0.0
	for i := range steps {
		d := (env[i]-y0)/(yN-y0) - (x[i]-x0)/(xN-x0)
		if d > dk+1e-12 {
			k, dk = i, d
		}
	}
	if k < 0 || dk < MinKneeDistance {
		return none("throughput still grows nearly in proportion to load up to the last step (%s at %s; Kneedle distance %.2f < %.2f): the sweep has not reached the knee",
			num(yN, unit), steps[n-1].Load, math.Max(dk, 0), MinKneeDistance)
	}
	s := &steps[k]
	var b strings.Builder
	fmt.Fprintf(&b, "Kneedle on throughput: %s reaches %s at %s (%.0f%% of the sweep's best)",
		metricName(metric), num(env[k], unit), s.Load, 100*env[k]/yN)
	nx := &steps[k+1]
	gain := 0.0
	if env[k] > 0 {
		gain = nx.Throughput(metric)/env[k] - 1
	}
	fmt.Fprintf(&b, "; the next step (%s, load ×%.2g) adds %+.0f%% throughput", nx.Load, nx.Load.Value/s.Load.Value, 100*gain)
	if l0, name := latencyP95(s); l0 > 0 {
		if l1, _ := latencyP95(nx); l1 > 0 {
			fmt.Fprintf(&b, " while %s grows ×%.2g (%s → %s)", name, l1/l0, ms(l0), ms(l1))
		}
	}
	b.WriteString(serverEvidence(s, nx))
	fmt.Fprintf(&b, "; distance from the chord %.2f", dk)
	if g := growthPastKnee(s, &steps[n-1]); g != "" {
		fmt.Fprintf(&b, "; %s", g)
	}
	return Point{Index: k, Load: s.Load.Value, Reason: b.String()}
}

// Past the knee the extra load either waits or slows every step. A sweep
// keeps one workload, so prompts are as long at every step: TTFT that grows
// is time spent before the work starts, waiting to be admitted. Split the
// added latency of a median request into its TTFT part and its decode part
// (the TPOT growth times the output tokens after the first); the part at
// least twice the other is what grows. The server's queue time, when it
// reports one, must agree before the TTFT part is called queueing, and its
// decode phase before the decode part is called the server's: a client
// that cannot keep up with the stream (one Python thread reading every
// stream's chunks) stretches the TPOT it measures while the server's steps
// stay short.
const dominantShare = 2.0

// growthPastKnee says which phase grows from the knee step to the last one,
// or "" when the steps lack p50 TTFT, p50 TPOT or output token counts.
func growthPastKnee(knee, last *Step) string {
	k, l := &knee.Summary, &last.Summary
	if k.TTFT.P50 <= 0 || l.TTFT.P50 <= 0 || k.TPOT.P50 <= 0 || l.TPOT.P50 <= 0 || l.Completed == 0 || l.OutputTokens == 0 {
		return ""
	}
	outAfterFirst := float64(l.OutputTokens)/float64(l.Completed) - 1
	dTTFT := l.TTFT.P50 - k.TTFT.P50
	dDecode := (l.TPOT.P50 - k.TPOT.P50) * outAfterFirst
	head := fmt.Sprintf("from %s to %s, p50 TTFT grows %s → %s (%s) and decoding %.0f more tokens at p50 TPOT %s → %s takes %s",
		knee.Load, last.Load, ms(k.TTFT.P50), ms(l.TTFT.P50), signedMS(dTTFT), outAfterFirst, ms(k.TPOT.P50), ms(l.TPOT.P50), signedMS(dDecode))
	server := ""
	queueAgrees := true
	if k.ServerQueue != nil && l.ServerQueue != nil {
		dQueue := l.ServerQueue.P50 - k.ServerQueue.P50
		server = fmt.Sprintf("; the server's p50 queue time %s → %s", ms(k.ServerQueue.P50), ms(l.ServerQueue.P50))
		queueAgrees = dQueue >= dTTFT/2
	}
	switch {
	case dTTFT > 0 && dTTFT >= dominantShare*math.Max(dDecode, 0) && queueAgrees:
		return head + server + ": queueing is what grows — most of the added latency comes before the first token, waiting to be admitted, not from slower decoding"
	case dTTFT > 0 && dTTFT >= dominantShare*math.Max(dDecode, 0):
		return head + server + ": TTFT grows though the server's queue time does not: prefill slows"
	case dDecode > 0 && dDecode >= dominantShare*math.Max(dTTFT, 0):
		if k.ServerDecode != nil && l.ServerDecode != nil {
			dServer := l.ServerDecode.P50 - k.ServerDecode.P50
			server += fmt.Sprintf("; the server's p50 decode phase %s → %s (%s)", ms(k.ServerDecode.P50), ms(l.ServerDecode.P50), signedMS(dServer))
			if dServer < dDecode/dominantShare {
				return head + server + ": the client is what slows — the server's steps grow far less than the gaps the client measures, so the rest is time between the server's tokens and the client reading them (a client that cannot keep up with this many streams, or the network)"
			}
		}
		return head + server + ": decoding is what slows — each step carries more sequences, so every token takes longer"
	}
	return head + server
}

func signedMS(v float64) string {
	if v < 0 {
		return "−" + ms(-v)
	}
	return "+" + ms(v)
}

// SafePoint is the highest measured load at which every SLO holds, and
// below which every step held them too: a step that passes again after a
// failing one is treated as noise, not as safe (the Result warns about it).
func SafePoint(steps []Step, slos []string) Point {
	if len(slos) == 0 {
		return none("no SLOs given (--slo): no SLO-safe point")
	}
	if len(steps) == 0 {
		return none("no steps")
	}
	first := -1
	for i := range steps {
		if !steps[i].SLOMet {
			first = i
			break
		}
	}
	switch first {
	case 0:
		advice := "; start the sweep lower"
		for _, c := range steps[0].SLOs {
			if c.NoData {
				advice = "" // the failure says what to fix; a lower load would fail alike
			}
		}
		for _, cl := range steps[0].Classes {
			for _, c := range cl.SLOs {
				if c.NoData {
					advice = ""
				}
			}
		}
		return none("the lowest load (%s) already fails %s: no measured load is safe%s",
			steps[0].Load, failed(&steps[0]), advice)
	case -1:
		last := &steps[len(steps)-1]
		return Point{Index: len(steps) - 1, Load: last.Load.Value, Reason: fmt.Sprintf(
			"every step meets %s, up to the highest measured load %s (%s): the limit lies beyond the sweep",
			strings.Join(slos, ", "), last.Load, held(last))}
	}
	s := &steps[first-1]
	return Point{Index: first - 1, Load: s.Load.Value, Reason: fmt.Sprintf(
		"highest load where every SLO holds (%s); the next step %s fails %s",
		held(s), steps[first].Load, failed(&steps[first]))}
}

// noData says why a step has nothing to judge, and what to fix: "no
// completed requests — 100% http_5xx: the server fails the requests: its
// log says why".
func noData(s *Step) string {
	sum := &s.Summary
	if sum.Requests == 0 {
		return "no requests measured"
	}
	var parts []string
	top, topN := "", 0
	for _, k := range record.ErrorKinds {
		if n := sum.ErrorKinds[string(k)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%.3g%% %s", 100*float64(n)/float64(sum.Requests), k))
			if n > topN {
				top, topN = string(k), n
			}
		}
	}
	if len(parts) == 0 {
		return "no completed requests"
	}
	return "no completed requests — " + strings.Join(parts, ", ") + ": " + record.ErrorKind(top).Hint()
}

func held(s *Step) string {
	var parts []string
	for _, c := range s.SLOs {
		parts = append(parts, fmt.Sprintf("%s: %s", c.Objective, checkValue(c)))
	}
	for _, c := range s.Classes { // each class's own objectives
		for _, ch := range c.SLOs {
			if slices.Contains(c.Own, ch.Objective) {
				parts = append(parts, fmt.Sprintf("class %s %s: %s", c.Name, ch.Objective, checkValue(ch)))
			}
		}
	}
	if len(parts) == 0 {
		return "SLOs met"
	}
	return strings.Join(parts, ", ")
}

func failed(s *Step) string {
	var parts []string
	for _, c := range s.SLOs {
		switch {
		case c.NoData:
			parts = append(parts, fmt.Sprintf("%s (%s)", c.Objective, noData(s)))
		case !c.Met:
			parts = append(parts, fmt.Sprintf("%s (measured %s)", c.Objective, checkValue(c)))
		}
	}
	for _, c := range s.Classes {
		for _, ch := range c.SLOs {
			switch {
			case ch.NoData:
				parts = append(parts, fmt.Sprintf("class %s: %s (no completed request)", c.Name, ch.Objective))
			case !ch.Met:
				parts = append(parts, fmt.Sprintf("class %s: %s (measured %s)", c.Name, ch.Objective, checkValue(ch)))
			}
		}
	}
	if len(parts) == 0 {
		return "its SLOs"
	}
	return strings.Join(parts, ", ")
}

// checkValue prints a measured SLO value: rates as percentages, latencies in ms or s.
func checkValue(c Check) string {
	if strings.Contains(c.Objective, "rate") {
		return fmt.Sprintf("%.3g%%", 100*c.Value)
	}
	return ms(c.Value)
}

func metricName(metric string) string {
	if metric == MetricOutputTPS {
		return "output token throughput"
	}
	return "request throughput"
}

func metricUnit(metric string) string {
	if metric == MetricOutputTPS {
		return "tok/s"
	}
	return "req/s"
}

func num(v float64, unit string) string {
	return strings.TrimSpace(fmt.Sprintf("%.4g %s", v, unit))
}

// ms prints a latency given in milliseconds, in seconds from 1 s up.
func ms(v float64) string {
	if math.IsInf(v, 1) {
		return "∞"
	}
	if v >= 1000 {
		return fmt.Sprintf("%.3g s", v/1000)
	}
	return fmt.Sprintf("%.3g ms", v)
}
