package sim

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/knee-dev/knee/internal/simengine"
)

// Target names a simulated engine as a run's target; like is what it
// resembles ("vLLM-like", serverprofile.Profile.Like; "" names none).
func Target(c simengine.Config, like string) string {
	if like != "" {
		like += " "
	}
	return fmt.Sprintf("simulated %sengine: %s on %d× %s", like, c.Model.Name, c.TP, c.GPU.Name)
}

// Notes are a simulated run's report notes on the engine: what a run of
// virtual time is, its memory plan, its steps and its prefix cache.
func Notes(eng *simengine.Engine, res Result, elapsed time.Duration) []string {
	s := res.Engine
	notes := []string{
		"simulated: times are virtual (a discrete-event model of the engine; see docs/simulator.md), exact server phase times in every record",
		fmt.Sprintf("memory per GPU: %s; KV cache %d tokens (%d blocks of %d)", eng.MemoryPlan(), s.KVCapacityTokens, s.KVBlocksTotal, simengine.BlockTokens),
		fmt.Sprintf("engine: %d steps, %d preemptions, %d rejected; %.1f s of virtual time simulated in %.2f s",
			s.Steps, s.Preemptions, s.Rejected, res.End.Seconds(), elapsed.Seconds()),
	}
	if n := cappedNote(res); n != "" {
		notes = append(notes, n)
	}
	if eng.Config().NoPrefixCaching {
		notes = append(notes, "prefix caching off (--no-prefix-caching): every prompt is prefilled in full")
	} else if s.PrefixCacheQueries > 0 {
		notes = append(notes, fmt.Sprintf("prefix cache: %d of %d prompt tokens hit (%.1f%%), %d tokens prefilled",
			s.PrefixCacheHits, s.PrefixCacheQueries, 100*float64(s.PrefixCacheHits)/float64(s.PrefixCacheQueries), s.PrefillTokens))
	}
	return notes
}

// ListPresets prints the catalog's GPU and model presets with the numbers
// the model uses (knee sim --list).
func ListPresets(w io.Writer, cat *simengine.Catalog) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	// The achievable matmul rate is what prefill computes at; "~" marks one
	// taken as the default share of the peak, not measured.
	fmt.Fprintln(tw, "GPU\tmemory GiB\tbandwidth GB/s\tBF16 TFLOP/s\tachievable\tFP8 TFLOP/s\tinterconnect GB/s\tlink\taliases")
	for _, g := range cat.GPUs() {
		fp8 := "-"
		if g.FP8TFLOPS > 0 {
			fp8 = strconv.FormatFloat(g.FP8TFLOPS, 'g', -1, 64)
		}
		mm := strconv.FormatFloat(g.AchievableBF16TFLOPS(), 'f', 1, 64)
		if g.BF16MatmulTFLOPS == 0 {
			mm = "~" + mm
		}
		link := g.Interconnect
		if link == "" {
			link = "-"
		}
		fmt.Fprintf(tw, "%s\t%g\t%g\t%g\t%s\t%s\t%g\t%s\t%s\n", g.Name, g.MemoryGiB, g.BandwidthGBps, g.BF16TFLOPS, mm, fp8, g.InterconnectGBps, link, strings.Join(g.Aliases, ", "))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "model\tparams (active)\tlayers\thidden\theads/kv\tffn (experts)\tvocab\tcontext\tweights\tKV KiB/token\taliases")
	for _, m := range cat.Models() {
		prec := m.WeightPrecision
		if prec == "" {
			prec = "bf16"
		}
		params, ffn := fmt.Sprintf("%.2fB", m.Params()/1e9), strconv.Itoa(m.FFNSize)
		if m.Experts > 0 {
			params += fmt.Sprintf(" (%.2fB)", m.ActiveParams()/1e9)
			ffn = fmt.Sprintf("%d (%d of %d)", m.ExpertFFNSize, m.ExpertsPerToken, m.Experts)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d/%d\t%s\t%d\t%d\t%s %.1f GiB\t%.0f\t%s\n", m.Name, params, m.Layers, m.HiddenSize,
			m.Heads, m.KVHeads, ffn, m.VocabSize, m.MaxContext, prec, m.WeightBytes()/(1<<30), m.KVBytesPerToken(1)/1024, strings.Join(m.Aliases, ", "))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "Select with --gpu NAME --model NAME --tp N (names and aliases match case-insensitively);")
	fmt.Fprintln(tw, "add your own with --gpu-file, --model-file or --preset-file (YAML, same keys as docs/simulator.md),")
	fmt.Fprintln(tw, "or simulate any model from its Hugging Face config.json with --model-config FILE.")
	return tw.Flush()
}
