package lab

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/knee-dev/knee/internal/report"
	"github.com/knee-dev/knee/internal/stats"
)

// Text renders a scenario's result for a terminal: the lesson, the phase
// evidence side by side, the verdict and its action — or the sweep table.
func Text(w io.Writer, r *Result) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "knee lab: %s\n%s\n\n%s\n\n", r.Scenario, r.Title, wrap(r.Lesson, 78))
	fmt.Fprintf(bw, "Engine: %s; seed %d.\n\n", r.Engine, r.Seed)
	if r.Sweep != nil {
		if err := report.SweepText(bw, r.Sweep); err != nil {
			return err
		}
		if r.HighestUnder2s != nil {
			fmt.Fprintf(bw, "\nHighest swept rate whose p95 TTFT stays under 2 s: %g req/s.\n", *r.HighestUnder2s)
		} else {
			fmt.Fprintln(bw, "\nNo swept rate keeps p95 TTFT under 2 s.")
		}
		return bw.Flush()
	}
	b, in := &r.Baseline.Summary, &r.Incident.Summary
	fmt.Fprintf(bw, "Baseline: %s\nIncident: %s\n\n", r.Baseline.Load, r.Incident.Load)
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase evidence (mean unless noted)\tbaseline\tincident\tchange\t")
	row := func(name string, bv, iv float64, unit string) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", name, num(bv, unit), num(iv, unit), change(bv, iv))
	}
	mean := func(d *stats.Dist) float64 {
		if d == nil {
			return 0
		}
		return d.Mean
	}
	row("server queue", mean(b.ServerQueue), mean(in.ServerQueue), "ms")
	row("server prefill", mean(b.ServerPrefill), mean(in.ServerPrefill), "ms")
	row("server decode", mean(b.ServerDecode), mean(in.ServerDecode), "ms")
	row("time per output token", b.TPOT.Mean, in.TPOT.Mean, "ms")
	row("TTFT p50", b.TTFT.P50, in.TTFT.P50, "ms")
	row("TTFT p95", b.TTFT.P95, in.TTFT.P95, "ms")
	row("E2E p95", b.E2E.P95, in.E2E.P95, "ms")
	row("input tokens", b.Shape.InputTokens.Mean, in.Shape.InputTokens.Mean, "")
	row("throughput", b.RequestThroughputRPS, in.RequestThroughputRPS, "req/s")
	row("output throughput", b.OutputTokenThroughputTPS, in.OutputTokenThroughputTPS, "tok/s")
	tw.Flush()
	d := r.Diagnosis
	fmt.Fprintf(bw, "\nknee diagnose (%s):\n  verdict: %s\n", d.Basis, d.Verdict)
	for _, e := range d.Evidence {
		fmt.Fprintf(bw, "  - %s\n", e.Text)
	}
	fmt.Fprintf(bw, "  action: %s\n", d.Action)
	return bw.Flush()
}

func num(v float64, unit string) string {
	switch {
	case unit == "ms" && v >= 1000:
		return fmt.Sprintf("%.2f s", v/1000)
	case unit == "":
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f %s", v, unit)
}

func change(b, i float64) string {
	if b <= 0 {
		if i <= 0 {
			return "–"
		}
		return "new"
	}
	return fmt.Sprintf("×%.2f", i/b)
}

func wrap(s string, width int) string {
	var b strings.Builder
	n := 0
	for _, w := range strings.Fields(s) {
		if n > 0 && n+1+len(w) > width {
			b.WriteByte('\n')
			n = 0
		} else if n > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}
