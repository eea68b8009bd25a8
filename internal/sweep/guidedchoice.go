package sweep

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/knee-dev/knee/internal/badinput"
)

// GuidedChoice is what a user chose for knee sweep --guided: the
// simulator chooses where to measure, each measured step refits it
// (docs/sweep.md, "Guided sweep"); Bisect is the same search without the
// model. Resolution and Budget are as given ("10%", "2000" or "10m").
type GuidedChoice struct {
	On, Bisect         bool
	Resolution, Budget string
	// SaveProfile is where to write the last refit's host profile ("":
	// nowhere).
	SaveProfile string
	// ServerProfile and ModelConfig say what a --url server runs, for the
	// model's prior.
	ServerProfile, ModelConfig string

	// resolved by Check
	res            float64
	budgetRequests int64
	budgetTime     time.Duration
}

// Check resolves the choice against the plan; changed says which flags
// were given. Errors are bad input.
func (g *GuidedChoice) Check(changed func(flag string) bool, plan Plan) error {
	if !g.On {
		for _, name := range []string{"resolution", "budget", "bisect", "save-profile", "server-profile", "model-config"} {
			if changed(name) {
				return badinput.Errorf("--%s applies to a guided sweep: add --guided", name)
			}
		}
		return nil
	}
	if !plan.Auto() {
		return badinput.Errorf("--guided chooses the loads itself: give --concurrency auto or --rate auto (or neither) with --min and --max for the range, not a list")
	}
	for _, name := range []string{"factor", "refine", "auto"} {
		if changed(name) {
			return badinput.Errorf("--%s steers an automatic sweep; --guided chooses its loads itself: drop --%s", name, name)
		}
	}
	if g.Bisect {
		for _, name := range []string{"save-profile", "server-profile", "model-config"} {
			if changed(name) {
				return badinput.Errorf("--%s is for the guided sweep's model; --bisect runs without a model: drop one", name)
			}
		}
	}
	// --shards needs no refusal: every shard is handed each step judged
	// over every shard's records, and the model is deterministic, so
	// every shard computes the same next load (the run database refuses
	// a shard that asks for another).
	r := strings.TrimSpace(g.Resolution)
	pct := strings.HasSuffix(r, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(r, "%"), 64)
	if pct {
		v /= 100
	}
	if err != nil || !(v >= 0.01) || v > 1 {
		return badinput.Errorf("--resolution %q: want a step from 1%% to 100%% (10%% or 0.1)", g.Resolution)
	}
	g.res = v
	if b := strings.TrimSpace(g.Budget); b != "" {
		if n, err := strconv.ParseInt(b, 10, 64); err == nil {
			if n <= 0 {
				return badinput.Errorf("--budget %q: want a positive number of requests (2000) or a duration (10m)", g.Budget)
			}
			g.budgetRequests = n
		} else if d, err := time.ParseDuration(b); err == nil && d > 0 {
			g.budgetTime = d
		} else {
			return badinput.Errorf("--budget %q: want a number of requests (2000) or a duration (10m)", g.Budget)
		}
	}
	return nil
}

// Plan is the guided sweep's plan over the automatic plan's range.
func (g *GuidedChoice) Plan(p Plan) GuidedPlan {
	return GuidedPlan{Kind: p.Kind, Min: p.Min, Max: p.Max, Resolution: g.res,
		BudgetRequests: g.budgetRequests, BudgetTime: g.budgetTime, Metric: p.Metric}
}

// ConfigKV is what a stored guided sweep records of its search.
func (g *GuidedChoice) ConfigKV() [][2]string {
	if !g.On {
		return nil
	}
	mode := "true"
	if g.Bisect {
		mode = "bisect"
	}
	kv := [][2]string{{"guided", mode}, {"guided_resolution", strconv.FormatFloat(math.Round(g.res*1e4)/1e4, 'g', -1, 64)}}
	if g.Budget != "" {
		kv = append(kv, [2]string{"guided_budget", g.Budget})
	}
	if g.ServerProfile != "" {
		kv = append(kv, [2]string{"guided_server_profile", g.ServerProfile})
	}
	if g.ModelConfig != "" {
		kv = append(kv, [2]string{"guided_model_config", g.ModelConfig})
	}
	return kv
}
