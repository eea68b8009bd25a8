package plan

import (
	"fmt"
	"github.com/knee-dev/knee/internal/redact"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/knee-dev/knee/internal/report"
)

// AllInvalid gives the causes when every family of the search is an invalid
// configuration ("" otherwise): that is bad input (e.g. --tp 3 for a model
// whose heads do not divide by 3), not an SLO that failed.
func AllInvalid(fams []Family) string {
	var causes []string
	seen := map[string]bool{}
	for _, f := range fams {
		if f.Verdict != "invalid" {
			return ""
		}
		if !seen[f.Reason] {
			seen[f.Reason] = true
			causes = append(causes, f.Reason)
		}
	}
	return strings.Join(causes, "; ")
}

// Header is what knee plan asked and how long the search took: the
// first lines of the text answer and the head of the --json one.
type Header struct {
	Model    string   `json:"model"`
	RateRPS  float64  `json:"rate_rps"`
	Arrival  string   `json:"arrival"`
	Input    string   `json:"input_tokens"`
	Output   string   `json:"output_tokens"`
	Seed     uint64   `json:"seed"`
	SLOs     []string `json:"slos"`
	ElapsedS float64  `json:"elapsed_s"`
	Workers  int      `json:"workers"`
	// Objective is what the winner minimises: cost or energy.
	Objective string `json:"objective"`
	// Mix describes a --mix's classes; ClassSLOs are their own objectives.
	Mix       string   `json:"mix,omitempty"`
	ClassSLOs []string `json:"class_slos,omitempty"`
	// StoredRun is the run id the winner's validation run was stored as.
	StoredRun string `json:"stored_run,omitempty"`
	// Headroom is what plan allowed for the simulator's error.
	Headroom     Headroom `json:"headroom"`
	HeadroomNote string   `json:"headroom_note"`
	// WinnerRanges are the winner's validation figures with their
	// held-out ranges.
	WinnerRanges *report.PredictionRanges `json:"prediction_ranges,omitempty"`
}

// Print writes the answer as text: the question, the winner (or why none)
// with its validation, the verdict by GPU and TP, and the Pareto front.
func Print(w io.Writer, h Header, sp Space, searchN int64, a Answer) {
	// Class names and the mix's path come from a file and flags: control
	// characters in them are escaped before a terminal sees them.
	w = redact.ControlWriter(w)
	fmt.Fprintf(w, "knee plan: %s at %g req/s (%s), input %s / output %s tokens; SLOs %s; seed %d\n",
		h.Model, h.RateRPS, h.Arrival, h.Input, h.Output, strings.Join(append(append([]string{}, h.SLOs...), h.ClassSLOs...), ", "), h.Seed)
	if h.Mix != "" {
		fmt.Fprintf(w, "%s\n", h.Mix)
	}
	var gpus []string
	for _, g := range sp.GPUs {
		gpus = append(gpus, g.Name)
	}
	fmt.Fprintf(w, "searched %s × TP %v × 1–%d replicas × max_num_seqs %v × max_num_batched_tokens %v × %s: %d deployments whose weights fit, %d simulated (%d requests each) in %.1f s on %d workers\n\n",
		strings.Join(gpus, ", "), sp.TPs, sp.MaxReplicas, sp.MaxNumSeqs, sp.MaxBatchedTokens, strings.Join(sp.Routers, ", "),
		a.Candidates, a.Simulated, searchN, h.ElapsedS, h.Workers)
	fmt.Fprintf(w, "headroom for the simulator's error: %s\n\n", h.HeadroomNote)
	if a.Winner == nil {
		fmt.Fprintln(w, "No deployment in the search space meets every SLO at this load.")
		if len(a.Rejected) > 0 {
			fmt.Fprintf(w, "(%d met them in the %d-request search run and failed the longer validation run; the cheapest: %s)\n", len(a.Rejected), searchN, a.Rejected[0].Candidate)
		}
	} else {
		if h.StoredRun != "" {
			defer fmt.Fprintf(w, "\nThe winner's validation run is stored as run %s (knee report %s).\n", h.StoredRun, h.StoredRun)
		}
		if len(a.Rejected) > 0 {
			fmt.Fprintf(w, "Rejected at validation (met every SLO in the %d-request search run, not in the longer one):\n", searchN)
			for i := range a.Rejected {
				fmt.Fprintf(w, "  %s\n", a.Rejected[i].Candidate)
				printValidation(w, "validation", &a.Rejected[i])
			}
		}
		if h.Objective == ObjectiveEnergy {
			fmt.Fprintf(w, "Most energy-efficient deployment meeting every SLO (fewest joules per output token):\n  %s\n", a.Winner.Candidate)
		} else {
			fmt.Fprintf(w, "Cheapest deployment meeting every SLO:\n  %s\n", a.Winner.Candidate)
		}
		printValidation(w, "validation", a.Validation)
		printEnergy(w, a.Validation)
		if c := a.Cheapest; c != nil && h.Objective == ObjectiveEnergy {
			why := fmt.Sprintf("  why: the fewest joules per output token of the %d deployments (engine variant × router, each at its fewest replicas) meeting every SLO in the search runs", a.Meeting)
			if c.Candidate != a.Winner.Candidate && a.Winner.EnergyJPerToken > 0 {
				why += fmt.Sprintf("; the cheapest of them, %s, spends %.4f J per output token (%+.1f%%) for $%.2f/h less",
					c.Candidate, c.EnergyJPerToken, 100*(c.EnergyJPerToken/a.Winner.EnergyJPerToken-1), a.Winner.CostPerHour-c.CostPerHour)
			} else {
				why += "; it is also the cheapest"
			}
			fmt.Fprintln(w, why)
		}
		if r := h.WinnerRanges; r != nil && len(r.Figures) > 0 {
			var parts []string
			for _, f := range r.Figures {
				parts = append(parts, f.String())
			}
			fmt.Fprintf(w, "  predicted: %s (%s)\n", strings.Join(parts, "; "), r.Basis)
		}
		if a.NextCheaper != nil {
			fmt.Fprintf(w, "Next cheaper deployment:\n  %s\n", a.NextCheaper.Candidate)
			printValidation(w, "same run", a.NextCheaper)
			printEnergy(w, a.NextCheaper)
		}
	}
	fmt.Fprintln(w, "\nBy GPU and TP:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  GPU\tTP\tverdict\twhy")
	for _, f := range a.Families {
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\n", f.GPU, f.TP, f.Verdict, f.Reason)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nPareto front (cost against TTFT p95 and goodput; search runs):")
	const maxRows = 24 // --json has them all
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "  $/h\tGPUs\tTTFT p95 ms\tITL p99 ms\tgoodput req/s\tSLOs\t deployment")
	for i, o := range a.Pareto {
		if i == maxRows {
			fmt.Fprintf(tw, "  … %d more (--json)\n", len(a.Pareto)-maxRows)
			break
		}
		met := "met"
		if !o.Met {
			met = "not met"
		}
		fmt.Fprintf(tw, "  %.2f\t%d\t%.0f\t%.1f\t%.2f\t%s\t %d× %s TP%d, seqs %d, budget %d, %s\n", o.CostPerHour, o.GPUs, o.TTFTP95MS, o.ITLP99MS,
			o.GoodputRPS, met, o.Replicas, o.GPU, o.TP, o.MaxNumSeqs, o.MaxBatchedTokens, o.Router)
	}
	tw.Flush()
}

// printEnergy is an outcome's power-model figures, each with its range
// where it has one (docs/energy.md).
func printEnergy(w io.Writer, o *Outcome) {
	if o == nil || o.EnergyJPerToken <= 0 {
		return
	}
	r := o.EnergyRanges
	if r == nil {
		fmt.Fprintf(w, "  energy (power model, no range): %.4f J per output token, %.0f W per GPU; $%.3f per million output tokens at this load\n",
			o.EnergyJPerToken, o.AvgPowerWPerGPU, o.USDPerMOutputTokens)
		return
	}
	j := fmt.Sprintf("%.4f J per output token", o.EnergyJPerToken)
	if r.JPerOutputToken != nil {
		j += fmt.Sprintf(" (%.4f–%.4f)", r.JPerOutputToken.Low, r.JPerOutputToken.High)
	}
	usd := fmt.Sprintf("$%.3f per million output tokens at this load", o.USDPerMOutputTokens)
	if u := r.USDPerMOutputTokens; u != nil {
		usd = fmt.Sprintf("$%.3f per million output tokens at this load ($%.3f–$%.3f)", o.USDPerMOutputTokens, u.Low, u.High)
	}
	fmt.Fprintf(w, "  energy (power model, %.0f%% ranges): %s, %.0f W per GPU (%.0f–%.0f); %s\n",
		100*r.Share, j, o.AvgPowerWPerGPU, r.AvgPowerWPerGPU.Low, r.AvgPowerWPerGPU.High, usd)
}

func printValidation(w io.Writer, label string, o *Outcome) {
	if o == nil {
		return
	}
	verdict := "meets every SLO"
	if !o.Met {
		verdict = "FAILS"
	}
	fmt.Fprintf(w, "  %s (%d requests): %s — %s; goodput %.2f req/s\n", label, o.Requests, strings.Join(o.Verdicts, "; "), verdict, o.GoodputRPS)
}
