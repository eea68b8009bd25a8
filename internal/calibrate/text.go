package calibrate

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/scrape"
	"github.com/knee-dev/knee/internal/simengine"
)

// maxHoldOutError is the held-out prediction error beyond which a profile
// is not to be trusted as it stands.
const maxHoldOutError = 0.10

// Warnings says when the held-out step, which the fit never saw, is
// predicted badly: the profile then does not describe the server (a
// busy machine, a server doing something the model lacks).
func (res *Result) Warnings() []string {
	var warn []string
	if len(res.Disturbed) > 0 {
		warn = append(warn, "some measurements look disturbed, as on a busy machine or server (the fit may be off; calibrate on a quiet machine): "+strings.Join(res.Disturbed, "; "))
	}
	h := res.HoldOut
	var off []string
	for _, e := range []struct {
		name string
		v    float64
	}{{"TTFT p50", h.TTFTError}, {"TPOT p50", h.TPOTError}, {"output tokens/s", h.ThroughputError}} {
		if math.Abs(e.v) > maxHoldOutError {
			off = append(off, fmt.Sprintf("%s %+.1f%%", e.name, 100*e.v))
		}
	}
	if len(off) == 0 {
		return warn
	}
	check := "check the server runs the --gpu, --model and --tp given"
	if res.Fit.Linear != nil {
		check = "check --parallel is the server's parallel slots"
	}
	return append(warn, fmt.Sprintf("the held-out step is predicted more than %.0f%% off (%s): this profile may not describe the server. "+
		"Calibrate again on a quiet machine (knee selftest shows its floor), with more --prefill-requests and a longer --decode-duration, "+
		"and %s", 100*maxHoldOutError, strings.Join(off, ", "), check))
}

// WriteText writes a live calibration as knee calibrate prints it: the
// points measured and fitted, the fitted constants, the held-out step, and
// the profile (or where it was written, out).
func WriteText(w io.Writer, res *Result, prof Profile, out string) {
	f := res.Fit
	if f.Linear != nil { // no roofline terms to show
		fmt.Fprintf(w, "\n%-8s %7s %6s %8s | %11s %10s\n", "point", "tokens", "batch", "samples", "measured ms", "fitted ms")
		for _, p := range res.Points {
			fmt.Fprintf(w, "%-8s %7d %6d %8d | %11.3f %10.3f\n", p.Kind, p.InputTokens, p.Batch, p.Samples, p.MeasuredMS, p.FittedMS)
		}
	} else {
		fmt.Fprintf(w, "\n%-8s %7s %6s %8s | %11s %10s | %8s %8s %8s | %s\n", "point", "tokens", "batch", "samples", "measured ms", "fitted ms", "mem ms", "cmp ms", "ar ms", "bound")
		for _, p := range res.Points {
			fmt.Fprintf(w, "%-8s %7d %6d %8d | %11.3f %10.3f | %8.3f %8.3f %8.3f | %s\n", p.Kind, p.InputTokens, p.Batch, p.Samples, p.MeasuredMS, p.FittedMS, p.MemMS(), p.CmpMS(), p.ArMS, p.Bound)
		}
	}
	if f.Linear != nil {
		l := f.Linear
		fmt.Fprintf(w, "\nfitted: step = %.3f ms + %.3f µs per prompt token + %.3f ms per decoding sequence + %.4f ns per attention pair (new token × context token); request overhead %.3f ms (in TTFT, outside steps)\n",
			l.BaseMS, l.PerPrefillTokenUS, l.PerDecodeSeqMS, l.PerAttentionPairNS, f.RequestOverheadMS)
		for _, c := range []struct {
			what, by string
			curve    []ProfileCurvePoint
		}{{"prompt", "prompt tokens", l.PromptCurve}, {"decode", "decoding sequences", l.DecodeCurve}} {
			if len(c.curve) == 0 {
				continue
			}
			var pts []string
			for _, p := range c.curve {
				pts = append(pts, fmt.Sprintf("%d: %.2f", p.Tokens, p.MS))
			}
			fmt.Fprintf(w, "%s steps: measured times (ms, attention aside) by %s, interpolated, in place of the line: %s\n", c.what, c.by, strings.Join(pts, ", "))
		}
		if f.StepTimeCV > 0 {
			fmt.Fprintf(w, "step times vary by %.1f%% (coefficient of variation of the decode gaps), simulated step by step\n", 100*f.StepTimeCV)
		}
		if f.FrontEndRateInSteps > 0 {
			fmt.Fprintf(w, "the front end works at %.0f%% of its idle speed while steps run (fitted to the decode points' restarts)\n", 100*f.FrontEndRateInSteps)
		}
	} else {
		fmt.Fprintf(w, "\nfitted: step overhead %.3f ms + %.1f µs per sequence, memory efficiency %.4f, compute efficiency %.4f; request overhead %.3f ms (in TTFT, outside engine steps)\n",
			f.StepOverheadMS, f.StepPerSeqUS, f.MemEfficiency, f.ComputeEfficiency, f.RequestOverheadMS)
	}
	fmt.Fprintf(w, "fit error: rms %.1f%%, worst point %.1f%%\n", 100*f.RMSRelError, 100*f.MaxRelError)
	if f.Undetermined != "" {
		fmt.Fprintf(w, "not determined by these measurements, kept at the default: %s\n", f.Undetermined)
	}
	h := res.HoldOut
	fmt.Fprintf(w, "\nheld-out step (never fitted): %d streams started one by one over %v, %d prompt / %d output tokens, %v after %v warm-up; %d requests measured\n",
		h.Concurrency, h.Ramp.Round(time.Millisecond), h.Measured.InputTokens, h.Output, h.Duration.Round(time.Millisecond), h.Warmup.Round(time.Millisecond), h.Measured.Requests)
	fmt.Fprintf(w, "  %-22s %10s %10s %8s\n", "", "measured", "predicted", "error")
	row := func(name string, m, p, e float64) {
		fmt.Fprintf(w, "  %-22s %10.2f %10.2f %+7.1f%%\n", name, m, p, 100*e)
	}
	row("TTFT p50 ms", h.Measured.TTFTP50MS, h.Predicted.TTFTP50MS, h.TTFTError)
	row("TPOT p50 ms", h.Measured.TPOTP50MS, h.Predicted.TPOTP50MS, h.TPOTError)
	row("output tokens/s", h.Measured.OutputTPS, h.Predicted.OutputTPS, h.ThroughputError)
	fmt.Fprintln(w, "  (output tokens/s: concurrency × output tokens / mean end-to-end time, the closed loop's steady rate)")
	if out != "" {
		fmt.Fprintf(w, "\nprofile written to %s: knee sim --profile %s, knee serve --profile %s\n", out, out, out)
	} else {
		fmt.Fprintln(w, "\nprofile (--out FILE to save it):")
		prof.Write(w)
	}
	if f.Linear != nil {
		fmt.Fprintln(w, "\nModel: a step takes a base time plus its prompt tokens (the measured curve when there is one), decoding sequences and attention pairs times their fitted costs;")
		fmt.Fprintln(w, "the profile's gpu and model only size the simulator's memory, max_num_seqs is the server's parallel slots (docs/simulator.md).")
		return
	}
	fmt.Fprintln(w, "\nModel: a step takes overhead + max(memory traffic / (bandwidth × memory efficiency), FLOPs / (achievable matmul rate × compute efficiency))")
	fmt.Fprintln(w, "+ all-reduce; mem/cmp/ar ms above are each point's terms at full efficiency (docs/simulator.md).")
}

// ParseDecodePoints reads BATCHxPROMPT pairs; empty means the defaults.
func ParseDecodePoints(s string) ([]DecodePoint, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var pts []DecodePoint
	for _, f := range strings.Split(s, ",") {
		b, in, ok := strings.Cut(strings.TrimSpace(f), "x")
		bn, err1 := strconv.Atoi(b)
		inN, err2 := strconv.Atoi(in)
		if !ok || err1 != nil || err2 != nil || bn < 1 || inN < 1 {
			return nil, badinput.Errorf("--decode-points %q: want BATCHxPROMPT pairs separated by commas, such as 1x64,64x1024", s)
		}
		pts = append(pts, DecodePoint{Batch: bn, Input: inN})
	}
	return pts, nil
}

// JSONSafe is r with the NaN errors (a figure the file lacks) replaced by
// 0, which JSON can carry; the text report says "-".
func (r *FromResult) JSONSafe() *FromResult {
	c := *r
	fix := func(v *float64) {
		if math.IsNaN(*v) || math.IsInf(*v, 0) {
			*v = 0
		}
	}
	for _, m := range []*MetricErrors{&c.FitErrors, &c.HoldOutErrors, &c.Range} {
		for _, v := range []*float64{&m.TTFTMedian, &m.TTFTMax, &m.TPOTMedian, &m.TPOTMax, &m.TPSMedian, &m.TPSMax} {
			fix(v)
		}
	}
	for _, list := range [][]Comparison{c.Fitted, c.HeldOut} {
		for i := range list {
			fix(&list[i].TTFTError)
			fix(&list[i].TPOTError)
			fix(&list[i].TPSError)
		}
	}
	return &c
}

// WriteFromText writes a calibration from measurements (knee calibrate
// --from) as knee prints it: the constants, how the fit reproduces the
// steps fitted and held out, the ranges to expect, and the profile.
func WriteFromText(w io.Writer, ec simengine.Config, res *FromResult, prof Profile, out string) {
	fmt.Fprintf(w, "knee calibrate --from: %d load steps measured elsewhere, fitted against %s × %d running %s\n",
		len(res.Fitted)+len(res.HeldOut), ec.GPU.Name, ec.TP, ec.Model.Name)
	for _, n := range res.Notes {
		fmt.Fprintln(w, "  note: "+n)
	}
	fmt.Fprintln(w, "\nconstants:")
	for _, c := range res.Constants {
		state := "pinned "
		if !c.Pinned {
			state = "default"
		}
		val := ""
		if c.Unit != "" || c.Value != 0 {
			val = strconv.FormatFloat(c.Value, 'g', 4, 64) + " " + c.Unit
		}
		fmt.Fprintf(w, "  %-8s %-22s %-12s %s\n", state, c.Name, val, c.Why)
	}
	pct := func(v float64) string {
		if math.IsNaN(v) {
			return "      -"
		}
		return fmt.Sprintf("%+6.1f%%", 100*v)
	}
	abs := func(v float64) string {
		if math.IsNaN(v) {
			return "-"
		}
		return fmt.Sprintf("%.1f%%", 100*v)
	}
	table := func(title string, cs []Comparison) {
		if len(cs) == 0 {
			return
		}
		fmt.Fprintf(w, "\n%s\n  %-58s %17s %17s %19s\n", title, "load step", "TTFT p50 ms", "TPOT p50 ms", "output tok/s")
		for _, c := range cs {
			o := c.Observation
			src := o.Source
			if len(src) > 58 {
				src = "…" + src[len(src)-57:]
			}
			fmt.Fprintf(w, "  %-58s %8.1f %s %8.2f %s %10.0f %s\n", src, o.TTFTP50MS, pct(c.TTFTError), o.TPOTP50MS, pct(c.TPOTError), o.OutputTPS, pct(c.TPSError))
		}
	}
	table("how the fitted profile reproduces the steps it was fitted to (measured, then the simulation's error):", res.Fitted)
	table("held-out steps (never fitted, only predicted):", res.HeldOut)
	e, r := res.FitErrors, res.Range
	fmt.Fprintf(w, "\nfit: median |error| TTFT %s, TPOT %s, throughput %s\n", abs(e.TTFTMedian), abs(e.TPOTMedian), abs(e.TPSMedian))
	if len(res.HeldOut) > 0 {
		h := res.HoldOutErrors
		fmt.Fprintf(w, "held out: median |error| TTFT %s, TPOT %s, throughput %s; worst %s, %s, %s\n",
			abs(h.TTFTMedian), abs(h.TPOTMedian), abs(h.TPSMedian), abs(h.TTFTMax), abs(h.TPOTMax), abs(h.TPSMax))
	}
	fmt.Fprintf(w, "expect on loads it was not fitted to: TTFT within ±%s, TPOT ±%s, throughput ±%s (twice the worst fitted error, at least %.0f%%)\n",
		abs(r.TTFTMax), abs(r.TPOTMax), abs(r.TPSMax), 100*MinStatedRange)
	if out != "" {
		fmt.Fprintf(w, "\nprofile written to %s: knee sim --profile %s, knee serve --profile %s\n", out, out, out)
	} else {
		fmt.Fprintln(w, "\nprofile (--out FILE to save it):")
		prof.Write(w)
	}
}

// WriteServerSummary is calibrate's account of what the server's own
// metrics showed over the whole calibration.
func WriteServerSummary(w io.Writer, v *scrape.View) {
	if v == nil {
		return
	}
	fmt.Fprintf(w, "\nserver metrics (%s at %s):", scrape.ServerLabel(v.Server), v.URL)
	if win := v.Window; win != nil {
		if g, ok := win.Gauges[scrape.Running]; ok {
			fmt.Fprintf(w, " running at most %.0f (the batch or parallel slots used);", g.Max)
		}
		if g, ok := win.Gauges[scrape.Waiting]; ok {
			fmt.Fprintf(w, " waiting at most %.0f;", g.Max)
		}
		if d, ok := win.Deltas[scrape.Preemptions]; ok {
			fmt.Fprintf(w, " %.0f preemptions;", d)
		}
		if h, ok := win.Hists[scrape.TTFT]; ok {
			fmt.Fprintf(w, " server TTFT mean %.1f ms over %.0f requests;", h.MeanMS, h.Count)
		}
		fmt.Fprintf(w, " %d scrapes", win.Scrapes)
	}
	fmt.Fprintln(w)
	for _, n := range v.Notes {
		fmt.Fprintf(w, "  - %s\n", n)
	}
}
