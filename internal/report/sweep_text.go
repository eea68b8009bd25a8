package report

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/knee-dev/knee/internal/redact"
	"github.com/knee-dev/knee/internal/sweep"
)

// sweepTable is the load table of a sweep: one row per step, the knee and
// the SLO-safe point marked.
func sweepTable(r *sweep.Result) (header []string, rows [][]string) {
	header = []string{sweep.LoadColumn(r.LoadKind), "req/s", "out tok/s", "goodput/s", "TTFT p50", "TTFT p95", "TTFT p99", "ITL p95", "E2E p95"}
	withServer, withProbes, items := false, false, false
	// Energy: tokens per joule per step, the most efficient marked, so
	// the energy-optimal load stands beside the knee and the SLO-safe
	// point; dollars per million tokens with a GPU price.
	withEnergy, withPrice, bestJ := false, false, -1
	for i := range r.Steps {
		if e := r.Steps[i].Energy; e != nil && e.OutputTokensPerJ != nil {
			withEnergy = true
			withPrice = withPrice || e.USDPerMOutputTokens != nil
			if bestJ < 0 || *e.OutputTokensPerJ > *r.Steps[bestJ].Energy.OutputTokensPerJ {
				bestJ = i
			}
		}
	}
	for i := range r.Steps {
		withServer = withServer || r.Steps[i].Server != nil
		withProbes = withProbes || r.Steps[i].ProbeTTFTP95 != nil
		items = items || r.Steps[i].Summary.Items > 0
	}
	if items {
		header[2] = "items/s" // embeddings or rerank: nothing generated
	}
	if withProbes {
		// Probes beside each step: what the load did to an unrelated user.
		header = append(header, "probe TTFT p95")
	}
	if withServer {
		// The server's own view, where it was scraped (↑: its waiting
		// queue grew through the step).
		header = append(header, "srv queue p95", "running max", "waiting max", "KV max")
	}
	if withEnergy {
		header = append(header, "tok/J", "W/GPU")
		if withPrice {
			header = append(header, "$/M tok")
		}
	}
	header = append(header, "errors", "SLOs", "")
	for i := range r.Steps {
		s := &r.Steps[i]
		sum := &s.Summary
		good := none
		if sum.GoodputRPS != nil {
			good = fnum(*sum.GoodputRPS, 2)
		}
		slos := "-"
		if len(s.SLOs) > 0 || r.Judged() {
			slos = "met"
			if !s.SLOMet {
				var failed []string
				for _, c := range s.SLOs {
					if !c.Met {
						failed = append(failed, c.Objective)
					}
				}
				for _, c := range s.Classes {
					for _, ch := range c.SLOs {
						if !ch.Met {
							failed = append(failed, c.Name+":"+ch.Objective)
						}
					}
				}
				slos = "FAIL " + strings.Join(failed, " ")
			}
		}
		var marks []string
		if r.Knee.Found() && r.Knee.Index == i {
			marks = append(marks, "◀ knee")
		}
		if r.SLOSafe.Found() && r.SLOSafe.Index == i {
			marks = append(marks, "◀ SLO-safe")
		}
		if withEnergy && bestJ == i && len(r.Steps) > 1 {
			marks = append(marks, "◀ most tok/J")
		}
		if s.Refined {
			marks = append(marks, "(refined)")
		}
		if s.Oversaturated != "" {
			marks = append(marks, "(stopped: over-saturated)")
		}
		if partialStep(s) {
			marks = append(marks, "(partial)")
		}
		tput := fnum(sum.OutputTokenThroughputTPS, 0)
		if items {
			tput = fnum(sum.ItemThroughputPS, 1)
		}
		row := []string{
			strconv.FormatFloat(s.Load.Value, 'g', 6, 64), fnum(sum.RequestThroughputRPS, 2), tput, good,
			msCell(sum.TTFT.P50), msCell(sum.TTFT.P95), msCell(sum.TTFT.P99), msCell(sum.ITL.P95), msCell(sum.E2E.P95),
		}
		if withProbes {
			probe := none
			if s.ProbeTTFTP95 != nil {
				probe = msCell(*s.ProbeTTFTP95)
			}
			row = append(row, probe)
		}
		if withServer {
			row = append(row, serverCells(s.Server)...)
		}
		if withEnergy {
			tpj, w, usd := none, none, none
			if e := s.Energy; e != nil {
				w = fnum(e.AvgPowerWPerGPU, 0)
				if e.OutputTokensPerJ != nil {
					tpj = fnum(*e.OutputTokensPerJ, 2)
				}
				if e.USDPerMOutputTokens != nil {
					usd = fnum(*e.USDPerMOutputTokens, 3)
				}
			}
			row = append(row, tpj, w)
			if withPrice {
				row = append(row, usd)
			}
		}
		rows = append(rows, append(row, pct(sum.ErrorRate), slos, strings.Join(marks, " ")))
	}
	return header, rows
}

// serverCells are a step's server columns: queue p95 (mean when the
// server gives no buckets), running and waiting at most, KV usage at most.
func serverCells(v *sweep.ServerStep) []string {
	if v == nil {
		return []string{none, none, none, none}
	}
	cell := func(x *float64, f func(float64) string) string {
		if x == nil {
			return none
		}
		return f(*x)
	}
	q := cell(v.QueueP95MS, msCell)
	if v.QueueP95Bound {
		q = "≤" + q
	}
	if v.QueueP95MS == nil && v.QueueMeanMS != nil {
		q = "mean " + msCell(*v.QueueMeanMS)
	}
	waiting := cell(v.WaitingMax, func(x float64) string { return fnum(x, 0) })
	if v.WaitingGrowing {
		waiting += "↑"
	}
	return []string{q, cell(v.RunningMax, func(x float64) string { return fnum(x, 0) }), waiting,
		cell(v.KVUsageMax, func(x float64) string { return fnum(100*x, 0) + "%" })}
}

// msCell prints a latency cell; a value not measured (NaN: the step's
// source did not give it; 0: no such latency) is "–", never "0 ms".
func msCell(v float64) string {
	if v == 0 || math.IsNaN(v) {
		return none
	}
	if v >= 1000 {
		return fnum(v/1000, 2) + " s"
	}
	return fnum(v, 1) + " ms"
}

func pointLine(p sweep.Point, kind string) string {
	if !p.Found() {
		return "none — " + p.Reason
	}
	return fmt.Sprintf("%s — %s", sweep.Load{Kind: kind, Value: p.Load}, p.Reason)
}

// SweepText renders a sweep as a plain-text table with the knee, the
// SLO-safe point, and why each was chosen.
func SweepText(w io.Writer, r *sweep.Result) error {
	bw := bufio.NewWriter(redact.ControlWriter(w))
	fmt.Fprintf(bw, "Sweep over %s (knee placed on %s)\n", r.LoadKind, r.KneeMetric)
	if len(r.SLOs) > 0 {
		fmt.Fprintf(bw, "SLOs: %s\n", strings.Join(r.SLOs, ", "))
	}
	fmt.Fprintln(bw)
	header, rows := sweepTable(r)
	shortenVerdicts(header, rows)
	alignedTable(bw, header, rows, 1)
	if t := sweepClassTable(r); t != nil {
		fmt.Fprintln(bw, "\nPer class (latency in ms)")
		shortenVerdicts(t.header, t.rows)
		alignedTable(bw, t.header, t.rows, 2) // the load and the class
	}
	if len(r.ClassSLOs) > 0 {
		fmt.Fprintf(bw, "\nClass SLOs: %s\n", strings.Join(r.ClassSLOs, ", "))
	}
	if h, rows := guidedTable(r); h != nil {
		fmt.Fprintln(bw, "\nGuided steps, in the order measured: the model's prediction before each step (its range) and the measurement")
		alignedTable(bw, h, rows, 2)
	}
	// Lines wrap at textWidth, later lines under the text.
	const hang = "           "
	bw.WriteString("\n")
	writeWrapped(bw, "Knee:      ", hang, pointLine(r.Knee, r.LoadKind))
	writeWrapped(bw, "SLO-safe:  ", hang, pointLine(r.SLOSafe, r.LoadKind))
	if b := breaksFirstLine(r); b != "" {
		writeWrapped(bw, "Breaks first: ", hang, b)
	}
	for _, n := range r.Notes {
		writeWrapped(bw, "Note:      ", hang, n)
	}
	for _, wn := range sweepWarnings(r) {
		writeWrapped(bw, "Warning:   ", hang, wn)
	}
	bw.WriteString("\n")
	writeWrapped(bw, "", "", "The knee is the Kneedle point of the throughput curve (its running maximum); the SLO-safe point is the highest load below the first step that fails an SLO. Maximum accepted load is not a healthy operating point. See docs/sweep.md.")
	return bw.Flush()
}

// SweepMarkdown renders a sweep as a Markdown table with the same content.
func SweepMarkdown(w io.Writer, r *sweep.Result) error {
	bw := bufio.NewWriter(redact.ControlWriter(w))
	if err := sweepMarkdownBody(bw, r, "# "); err != nil {
		return err
	}
	return bw.Flush()
}

// sweepMarkdownBody writes the sweep under a heading of the given level.
func sweepMarkdownBody(bw *bufio.Writer, r *sweep.Result, heading string) error {
	fmt.Fprintf(bw, "%sSweep over %s\n\n", heading, r.LoadKind)
	if len(r.SLOs) > 0 {
		fmt.Fprintf(bw, "SLOs: `%s`\n\n", strings.Join(r.SLOs, "`, `"))
	}
	header, rows := sweepTable(r)
	mdGrid(bw, header, rows)
	if t := sweepClassTable(r); t != nil {
		fmt.Fprintf(bw, "\n%sPer class (latency in ms)\n\n", strings.Repeat("#", strings.Count(heading, "#")+1)+" ")
		mdGrid(bw, t.header, t.rows)
	}
	if len(r.ClassSLOs) > 0 {
		fmt.Fprintf(bw, "\nClass SLOs: `%s`\n", strings.Join(r.ClassSLOs, "`, `"))
	}
	if h, rows := guidedTable(r); h != nil {
		fmt.Fprintf(bw, "\n%sGuided steps, in the order measured\n\n", strings.Repeat("#", strings.Count(heading, "#")+1)+" ")
		mdGrid(bw, h, rows)
	}
	fmt.Fprintf(bw, "\n- **Knee:** %s\n- **SLO-safe point:** %s\n", mdEscape(pointLine(r.Knee, r.LoadKind)), mdEscape(pointLine(r.SLOSafe, r.LoadKind)))
	if b := breaksFirstLine(r); b != "" {
		fmt.Fprintf(bw, "- **Breaks first:** %s\n", mdEscape(b))
	}
	for _, n := range r.Notes {
		fmt.Fprintf(bw, "- Note: %s\n", mdEscape(n))
	}
	for _, wn := range sweepWarnings(r) {
		fmt.Fprintf(bw, "- **Warning:** %s\n", mdEscape(wn))
	}
	return nil
}

// breaksFirstLine says which class of a mix fails at the lowest load ("" when
// none is judged).
func breaksFirstLine(r *sweep.Result) string {
	switch {
	case r.BreaksFirst != nil:
		return r.BreaksFirst.Reason
	case len(r.ClassSLOs) > 0 || sweepHasClasses(r):
		if r.Judged() {
			return "no class fails its objectives at any measured load"
		}
	}
	return ""
}

func sweepHasClasses(r *sweep.Result) bool {
	for i := range r.Steps {
		if len(r.Steps[i].Classes) > 0 {
			return true
		}
	}
	return false
}

// sweepClassTable is a mix's classes at every step, in the mix's order:
// volume, goodput, latency and what each failed (nil without classes).
func sweepClassTable(r *sweep.Result) *table {
	if !sweepHasClasses(r) {
		return nil
	}
	t := &table{header: []string{sweep.LoadColumn(r.LoadKind), "class", "requests", "req/s", "out tok/s", "goodput/s",
		"TTFT p95", "ITL p95", "E2E p95", "errors", "SLOs"}, left: 2}
	for i := range r.Steps {
		s := &r.Steps[i]
		for _, c := range s.Classes {
			sum := &c.Summary
			good := none
			if sum.GoodputRPS != nil {
				good = fnum(*sum.GoodputRPS, 2)
			}
			verdict := "-"
			if len(c.SLOs) > 0 {
				verdict = "met"
				var failed []string
				for _, ch := range c.SLOs {
					if !ch.Met {
						failed = append(failed, ch.Objective)
					}
				}
				if len(failed) > 0 {
					verdict = "FAIL " + strings.Join(failed, " ")
				}
			}
			name := c.Name
			if b := r.BreaksFirst; b != nil && b.Class == c.Name && b.Load == s.Load.Value {
				name += " ◀ breaks first"
			}
			t.rows = append(t.rows, []string{strconv.FormatFloat(s.Load.Value, 'g', 6, 64), name, strconv.Itoa(sum.Requests),
				fnum(sum.RequestThroughputRPS, 2), fnum(sum.OutputTokenThroughputTPS, 0), good,
				msCell(sum.TTFT.P95), msCell(sum.ITL.P95), msCell(sum.E2E.P95), pct(sum.ErrorRate), verdict})
		}
	}
	return t
}

// alignedTable writes a header and rows in tab-aligned columns, without
// trailing spaces.
func alignedTable(bw *bufio.Writer, header []string, rows [][]string, keep int) {
	widths := make([]int, len(header))
	for _, row := range append([][]string{header}, rows...) {
		for i, c := range row {
			if i < len(widths) {
				widths[i] = max(widths[i], len([]rune(c)))
			}
		}
	}
	// Wider than a terminal: narrower tables one under the other, each
	// with the first keep columns (the load, the class) and the marks.
	marks := len(header) > 0 && header[len(header)-1] == ""
	for g, cols := range columnGroups(widths, keep, marks, 0, 2) {
		if g > 0 {
			bw.WriteString("\n")
		}
		pick := func(row []string) []string {
			out := make([]string, 0, len(cols))
			for _, c := range cols {
				if c < len(row) {
					out = append(out, row[c])
				}
			}
			return out
		}
		picked := make([][]string, len(rows))
		for i, row := range rows {
			picked[i] = pick(row)
		}
		alignedGroup(bw, pick(header), picked)
	}
}

func alignedGroup(bw *bufio.Writer, header []string, rows [][]string) {
	var table strings.Builder
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, row := range rows {
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	tw.Flush()
	for _, line := range strings.SplitAfter(table.String(), "\n") {
		bw.WriteString(strings.TrimRight(line, " \n"))
		if strings.HasSuffix(line, "\n") {
			bw.WriteByte('\n')
		}
	}
}

// mdGrid writes a Markdown table.
func mdGrid(bw *bufio.Writer, header []string, rows [][]string) {
	mdRow(bw, header)
	sep := make([]string, len(header))
	for i := range sep {
		sep[i] = "---"
	}
	mdRow(bw, sep)
	for _, row := range rows {
		mdRow(bw, row)
	}
}

// verdictWidth bounds a step's SLOs cell in text, where every failed
// objective of every class would widen the table past a terminal.
const verdictWidth = 40

// shortenVerdicts cuts a step's list of failed objectives to the first
// ones and how many more (Markdown, JSON and HTML keep them all).
func shortenVerdicts(header []string, rows [][]string) {
	col := slices.Index(header, "SLOs")
	if col < 0 {
		return
	}
	for _, row := range rows {
		if col >= len(row) || len([]rune(row[col])) <= verdictWidth {
			continue
		}
		words := strings.Fields(row[col]) // "FAIL", then one objective each
		cell, n := words[0], 1
		for ; n < len(words); n++ {
			more := fmt.Sprintf(" +%d more", len(words)-n-1)
			if n > 1 && len([]rune(cell+" "+words[n]+more)) > verdictWidth {
				break
			}
			cell += " " + words[n]
		}
		if n < len(words) {
			cell += fmt.Sprintf(" +%d more", len(words)-n)
		}
		row[col] = cell
	}
}

// partialStep says whether a step was cut short (an interrupt, or another
// shard of a sharded sweep stopped): its runner says so in its warnings.
func partialStep(s *sweep.Step) bool {
	for _, w := range s.Warnings {
		if strings.HasPrefix(w, "partial step") {
			return true
		}
	}
	return false
}

// sweepWarnings are the sweep's warnings, with every step's own (as
// sweep.StepWarnings words them: "step LOAD: …", a warning several steps
// give once) where they are not among them: a sweep stored before the list
// was kept (runs.SweepKey) has only its steps' warnings, and the text must
// say what the JSON's steps say.
func sweepWarnings(r *sweep.Result) []string {
	out := slices.Clone(r.Warnings)
	for _, line := range sweep.StepWarnings(r.Steps) {
		if !slices.Contains(out, line) {
			out = append(out, line)
		}
	}
	return out
}
