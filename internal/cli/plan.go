package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/knee-dev/knee/internal/plan"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/report"
	"github.com/knee-dev/knee/internal/serverprofile"
	"github.com/knee-dev/knee/internal/sim"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/knee-dev/knee/internal/workload"
	"github.com/spf13/cobra"
)

type planFlags struct {
	wl                       workloadFlags
	model                    string
	space                    plan.SpaceChoice
	memUtil                  float64
	confidence               float64
	serverProfile            string
	presetFile               string
	slos                     stringList
	validateRequests         int64
	noPrefixCaching, jsonOut bool
	workers                  int
	label                    string
	source                   modelSourceFlags
	objective                string
	mix                      mixFlags
	lora                     loraFlags
	storeFlags
}

func newPlanCmd(ctx context.Context, env *Env) *cobra.Command {
	var f planFlags
	cmd := newCommand(env, "plan")
	fs := cmd.Flags()
	cmd.Long = helpText(func(w io.Writer) {
		fmt.Fprintln(w, "Usage: knee plan --model M --rate R --slo EXPR [--slo EXPR ...] [flags]")
		fmt.Fprintln(w, "\nSearches deployments (GPU × TP × replicas × engine limits × router) in the simulator for the cheapest that meets every SLO at the load.")
		fmt.Fprintln(w)
	})
	f.wl.register(fs, 32, 1500)
	fs.StringVar(&f.model, "model", "llama-3.1-8b", "model preset (knee sim --list)")
	fs.StringVar(&f.space.GPUs, "gpus", "h100,h200,a100-80gb", "GPU presets to consider, comma-separated")
	fs.StringVar(&f.space.TPs, "tp", "1,2,4,8", "tensor-parallel degrees to consider")
	fs.IntVar(&f.space.MaxReplicas, "max-replicas", 16, "most replicas of one deployment")
	fs.StringVar(&f.space.MaxNumSeqs, "max-num-seqs", "0,256,64", "max_num_seqs values to consider (0: vLLM's default)")
	fs.StringVar(&f.space.MaxBatchedTokens, "max-num-batched-tokens", "0,2048", "max_num_batched_tokens values to consider (0: vLLM's default)")
	fs.StringVar(&f.space.Routers, "routers", sim.RoundRobin+","+sim.LeastOutstanding, "routers to consider: "+strings.Join(sim.Routers, ", ")+" (prefix-affinity joins the default with --prefix-groups or --shared-prefix)")
	fs.Float64Var(&f.memUtil, "gpu-memory-utilization", 0.9, "fraction of GPU memory the engine may use")
	fs.BoolVar(&f.noPrefixCaching, "no-prefix-caching", false, "turn off automatic prefix caching")
	fs.StringVar(&f.presetFile, "preset-file", "", "YAML file with lists gpus: and models: of extra presets")
	f.source.register(fs)
	fs.StringVar(&f.space.CostFile, "cost-file", "", "YAML map of GPU name to USD per GPU-hour, over the defaults (docs/plan.md)")
	fs.Var(&f.slos, "slo", sloUsage+" (at least one)")
	fs.Int64Var(&f.validateRequests, "validate-requests", 10000, "requests in the winner's validation run (and the next cheaper candidate's)")
	fs.IntVar(&f.workers, "workers", 0, "simulations run at once (0: one per core)")
	fs.StringVar(&f.serverProfile, "server-profile", "", serverProfileHelp())
	fs.Float64Var(&f.confidence, "confidence", 0.8, "plan with the headroom that covers this share of knee's held-out prediction errors: latencies at the high end of that range, capacity at the low end (0: the point estimate; docs/validation.md)")
	fs.StringVar(&f.objective, "objective", plan.ObjectiveCost, "what the winner minimises among the deployments meeting every SLO: cost ($ per hour) or energy (joules per output token, the power model's; docs/energy.md)")
	fs.BoolVar(&f.jsonOut, "json", false, "print the answer as JSON")
	fs.StringVar(&f.label, "label", "", "label of the stored run (the winner's validation run)")
	f.mix.register(fs)
	f.lora.register(fs)
	f.storeFlags.register(fs)
	cmd.RunE = func(_ *cobra.Command, args []string) error {
		if fs.NArg() > 0 {
			return Usagef("unexpected argument %q (flags only; see knee plan -h)", fs.Arg(0))
		}
		if !(f.wl.Rate > 0) {
			return Usagef("--rate: give the target load in requests per second (plan searches for an open loop at that rate)")
		}
		if f.wl.TracePath != "" || f.wl.Dataset != "" {
			return Usagef("knee plan takes synthetic lengths (--input-tokens, --output-tokens, --prefix-groups); --trace and --dataset are not supported yet")
		}
		if err := f.wl.validate(); err != nil {
			return err
		}
		if f.wl.Requests <= 0 {
			return Usagef("--requests %d: give the requests of each search run (1500 by default)", f.wl.Requests)
		}
		headroom, err := plan.NewHeadroom(f.confidence)
		if err != nil {
			return Usagef("--confidence: %v", err)
		}
		if f.validateRequests < 1 {
			return Usagef("--validate-requests %d: want 1 or more", f.validateRequests)
		}
		objectives, err := slo.ParseAll(f.slos)
		if err != nil {
			return Usagef("--slo: %v", err)
		}
		if err := f.mix.load(fs, &f.wl); err != nil {
			return err
		}
		if len(objectives) == 0 && !f.mix.Judged() {
			return Usagef("give at least one --slo (e.g. --slo 'p95(ttft)<2s' --slo 'p99(itl)<100ms'), or a --mix whose classes have their own")
		}
		cat := simengine.NewCatalog()
		if f.presetFile != "" {
			if _, err := sim.LoadPresetFile(cat, f.presetFile); err != nil {
				return Usagef("--preset-file: %v", err)
			}
		}
		if name, err := f.source.addConfigModel(cat); err != nil {
			return err
		} else if name != "" && !flagGiven(fs, "model") {
			f.model = name
		}
		model, err := cat.LookupModel(f.model)
		if err != nil {
			return Usagef("--model: %v", err)
		}
		if model, err = f.source.withKVDtype(model); err != nil {
			return err
		}
		prefixes := f.wl.PrefixGroups > 0 || f.wl.SharedPrefix > 0
		space, err := f.space.Resolve(cat, prefixes && !flagGiven(fs, "routers"), maxReplicas)
		if err != nil {
			return err
		}
		switch {
		case !(f.memUtil > 0 && f.memUtil <= 1):
			return Usagef("--gpu-memory-utilization %v: want a fraction in (0, 1]", f.memUtil)
		case f.workers < 0:
			return Usagef("--workers %d: want 0 (one per core) or more", f.workers)
		case f.objective != plan.ObjectiveCost && f.objective != plan.ObjectiveEnergy:
			return Usagef("--objective %q: want %s or %s", f.objective, plan.ObjectiveCost, plan.ObjectiveEnergy)
		}
		costs, err := f.space.Costs(cat, space)
		if err != nil {
			return err
		}
		gen, err := f.wl.generator()
		if err != nil {
			return err
		}
		if err := f.wl.saveScenario(); err != nil {
			return err
		}
		in, _ := workload.ParseDist(f.wl.Input)
		out, _ := workload.ParseDist(f.wl.Output)
		if _, err := f.wl.arrivals(); err != nil {
			return err
		}
		base := simengine.DefaultConfig(simengine.GPU{}, model, 1)
		base.GPUMemoryUtilization, base.NoPrefixCaching = f.memUtil, f.noPrefixCaching
		base.Seed = int64(f.wl.ResolvedSeed())
		if f.serverProfile != "" {
			sp, err := serverprofile.Resolve(f.serverProfile)
			if err != nil {
				return Usagef("--server-profile: %v", err)
			}
			sp.Apply(&base)
		}
		var lengths sim.Lengths = gen
		meanTokens := in.Mean() + out.Mean()
		var classOf func(int64) (string, int32)
		if f.mix.File != nil {
			sm, err := f.mix.SimClasses(&base, f.lora.LoRA, gen, f.wl.ResolvedSeed())
			if err != nil {
				return err
			}
			lengths, classOf, meanTokens = sm.Gen, sm.Class, f.mix.LongestMean()
		}
		q := plan.Question{
			Base: base, Gen: lengths, RateRPS: f.wl.Rate, MeanTokens: meanTokens, SLOs: objectives,
			Class: classOf, ClassNames: f.mix.Names(), ClassSLOs: f.mix.SLOs,
			Arrivals: func() sim.Arrivals {
				a, _ := f.wl.arrivals() // validated above
				return a
			},
			SearchRequests: f.wl.Requests, ValidateRequests: f.validateRequests, Space: space, Costs: costs, Workers: f.workers,
			Headroom: headroom, Objective: f.objective,
		}
		// The winner's validation run is kept to be stored like any sim run.
		var winnerRecs []record.Request
		if !f.noStore {
			q.OnWinnerRecord = func(r *record.Request) {
				if len(winnerRecs) < maxStoredSimRecords {
					winnerRecs = append(winnerRecs, r.Clone())
				}
			}
		}
		start := time.Now()
		ans, err := plan.Search(ctx, q)
		if err != nil {
			return err
		}
		elapsed := time.Since(start)
		storedID := ""
		if ans.Winner != nil {
			if storedID, err = storePlanWinner(env, &f, model.Name, start, ans, objectives, winnerRecs); err != nil {
				fmt.Fprintf(env.Stderr, "knee plan: saving the winner's run: %v\n", err)
			}
		}
		hdr := plan.Header{Model: model.Name, RateRPS: f.wl.Rate, Arrival: f.wl.Arrival, Input: f.wl.Input, Output: f.wl.Output,
			Seed: f.wl.ResolvedSeed(), SLOs: f.slos, ElapsedS: elapsed.Seconds(), Workers: f.workers, StoredRun: storedID,
			Headroom: headroom, HeadroomNote: headroom.String(), Objective: f.objective}
		if v := ans.Validation; ans.Winner != nil && v != nil {
			hdr.WinnerRanges = heldOutRanges(&v.Summary, f.serverProfile != "" && f.serverProfile != "vllm" && f.serverProfile != "sglang", v.GPU, model.Name, v.Replicas)
		}
		if f.mix.File != nil {
			hdr.Input, hdr.Output = "by class", "by class"
			hdr.Mix, hdr.ClassSLOs = f.mix.Note(f.wl.ResolvedSeed()), f.mix.ClassSLOs()
		}
		if hdr.Workers == 0 {
			hdr.Workers = runtime.GOMAXPROCS(0)
		}
		if f.jsonOut {
			enc := json.NewEncoder(env.Stdout)
			enc.SetIndent("", "  ")
			if err := enc.Encode(struct {
				plan.Header
				plan.Answer
			}{hdr, ans}); err != nil {
				return err
			}
			// A script gates on the exit code: --json must not pass where
			// the text form fails.
			return planVerdict(ans)
		}
		plan.Print(env.Stdout, hdr, space, f.wl.Requests, ans)
		return planVerdict(ans)
	}
	return cmd
}

// planVerdict is the exit of a finished search: nil with a winner, a usage
// error when every configuration was invalid, else a failed SLO (exit 3).
func planVerdict(ans plan.Answer) error {
	if ans.Winner != nil {
		return nil
	}
	if why := plan.AllInvalid(ans.Families); why != "" {
		return Usagef("no deployment in the search space is a valid configuration: %s (check --tp and --model)", why)
	}
	return &SLOError{Failed: []string{"no deployment in the search space meets every SLO"}}
}

// storePlanWinner stores the winner's validation run as a sim run (records,
// summary, SLO verdicts), so knee report, runs and compare can show it.
func storePlanWinner(env *Env, f *planFlags, model string, start time.Time, ans plan.Answer, objectives slo.Set, recs []record.Request) (string, error) {
	w, v := ans.Winner, ans.Validation
	target := fmt.Sprintf("simulated fleet: %d× (%s on %d× %s) behind a %s router (knee plan's winner)", w.Replicas, model, w.TP, w.GPU, w.Router)
	config := append(f.wl.config(),
		[2]string{"gpu", w.GPU}, [2]string{"model", model}, [2]string{"tp", strconv.Itoa(w.TP)},
		[2]string{"max_num_seqs", strconv.Itoa(w.MaxNumSeqs)}, [2]string{"max_num_batched_tokens", strconv.Itoa(w.MaxBatchedTokens)},
		[2]string{"replicas", strconv.Itoa(w.Replicas)}, [2]string{"router", w.Router},
		[2]string{"cost_usd_per_hour", strconv.FormatFloat(w.CostPerHour, 'f', 2, 64)})
	config = append(config, f.mix.ConfigKV()...)
	load := fmt.Sprintf("open loop, %g req/s %s, %d requests (knee plan's validation run)", f.wl.Rate, f.wl.Arrival, v.Requests)
	stored, err := f.storeFlags.begin(env, runMeta{Kind: "sim", Target: target, Model: model, Label: f.label, Load: load, Config: config})
	if err != nil || stored == nil {
		return "", err
	}
	for i := range recs {
		stored.Add(&recs[i])
	}
	notes := []string{fmt.Sprintf("knee plan: the cheapest of %d deployments meeting every SLO, %s; this is its validation run", ans.Candidates, w.Candidate)}
	if nc := ans.NextCheaper; nc != nil {
		notes = append(notes, fmt.Sprintf("next cheaper: %s — %s", nc.Candidate, strings.Join(nc.Verdicts, "; ")))
	}
	workloadText := fmt.Sprintf("input %s, output %s tokens", f.wl.Input, f.wl.Output)
	if f.mix.File != nil {
		workloadText = f.mix.Note(f.wl.ResolvedSeed())
	}
	rep := &report.Run{Kind: "sim", Version: Version, Target: target, Model: model, Load: load,
		Workload: workloadText, Config: config, Start: start,
		Summary: v.Summary, SLOs: objectives.Evaluate(v.Summary), Notes: notes}
	rep.ID = stored.ID()
	return rep.ID, stored.Finish(rep, "complete")
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string { return plan.SplitList(s) }
