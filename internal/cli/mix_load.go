package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/workload"
	"github.com/spf13/pflag"
)

// A mix's classes may bring their own load (workload.Mix): own rates are
// merged with the shared --rate into one open-loop schedule, own
// concurrencies are pools of users beside the --concurrency one. This file
// wires that into a run; mix_flags.go reads the file.

// checkOwnLoads refuses load flags that contradict the mix's own loads
// (exit 2): a run is open or closed loop, and a --rate or --concurrency
// needs a class that takes a share of it.
func (m *mixFlags) checkOwnLoads(fs *pflag.FlagSet) error {
	mix := m.mix
	if mix == nil || (!mix.OwnRates() && !mix.OwnUsers()) {
		return nil
	}
	own := ownLoadClasses(mix)
	for _, f := range []string{"sessions", "trace"} {
		if flagGiven(fs, f) {
			return Usagef("--mix %s: classes %s bring their own load: give no --%s with them", m.path, own, f)
		}
	}
	switch {
	case mix.OwnRates() && flagGiven(fs, "concurrency"):
		return Usagef("--mix %s: classes %s have their own rate (open loop): give no --concurrency with them; the classes with a share divide --rate", m.path, own)
	case mix.OwnUsers() && flagGiven(fs, "rate"):
		return Usagef("--mix %s: classes %s have their own concurrency (closed loop): give no --rate with them; the classes with a share divide --concurrency", m.path, own)
	case mix.OwnRates() && mix.HasShares() && !flagGiven(fs, "rate"):
		return Usagef("--mix %s: classes %s have their own rate, so the run is open loop: give the rate the classes with a share divide with --rate", m.path, own)
	case !mix.HasShares() && (flagGiven(fs, "rate") || flagGiven(fs, "concurrency")):
		return Usagef("--mix %s: every class brings its own load (%s): no class takes a share of --rate or --concurrency; give neither", m.path, own)
	}
	return nil
}

// ownLoadClasses names the classes with their own load.
func ownLoadClasses(mix *workload.Mix) string {
	var names []string
	for _, c := range mix.Classes {
		if c.OwnLoad() {
			names = append(names, c.Name)
		}
	}
	return strings.Join(names, ", ")
}

// applyLoad sets cfg's load and returns the request source: each request
// of its class, from that class's generator (base's tokenizer, overhead and
// prefixes). With own rates cfg's schedule becomes the merged one (shared:
// the --rate schedule, nil without share classes); with own concurrencies
// each such class is a pool of users of its own.
func (m *mixFlags) applyLoad(cfg *loadgen.Config, base any, shared workload.Arrivals, seed uint64) (loadgen.Source, error) {
	var spec workload.Spec
	if g, ok := base.(*workload.Generator); ok {
		spec = g.Spec()
	}
	mg, err := workload.NewMixGenerator(m.mix, spec, seed)
	if err != nil {
		return nil, Usagef("--mix %v", err)
	}
	classReq := func(k int, i int64) loadgen.Request {
		c := &m.mix.Classes[k]
		it := mg.Generator(k).Item(i)
		return loadgen.Request{Prompt: it.Prompt, PromptTokens: it.InputTokens, RequestedTokens: it.RequestedTokens, MaxTokens: it.MaxTokens,
			Class: c.Name, Model: c.Model}
	}
	switch {
	case m.mix.OwnRates():
		if !m.mix.HasShares() {
			shared = nil
		}
		sched, err := workload.NewMixSchedule(m.mix, shared, seed)
		if err != nil {
			return nil, Usagef("--mix %v", err)
		}
		mg.WithSchedule(sched)
		cfg.Arrivals, cfg.Concurrency = sched, 0
		if !m.mix.HasShares() {
			cfg.RateRPS = 0
		}
		for _, c := range m.mix.Classes {
			cfg.RateRPS += c.RateRPS // the offered rate is every class's
		}
	case m.mix.OwnUsers():
		if !m.mix.HasShares() {
			cfg.Concurrency = 0
		}
		for k, c := range m.mix.Classes {
			if c.Concurrency > 0 {
				cfg.UserClasses = append(cfg.UserClasses, loadgen.UserClass{Name: c.Name, Concurrency: c.Concurrency,
					Source: func(i int64) loadgen.Request { return classReq(k, i) }})
			}
		}
	}
	return func(i int64) loadgen.Request { return classReq(mg.ClassOf(i), i) }, nil
}

// ownLoadsLine is the load line's account of the classes' own loads
// ("" when none): each class's own arrival process or users.
func (m *mixFlags) ownLoadsLine() string {
	if m.mix == nil {
		return ""
	}
	var parts []string
	for _, c := range m.mix.Classes {
		switch {
		case c.RateRPS > 0:
			parts = append(parts, fmt.Sprintf("%s open loop %g req/s %s", c.Name, c.RateRPS, arrivalWords(&c)))
		case c.Concurrency > 0:
			parts = append(parts, fmt.Sprintf("%s closed loop %d users", c.Name, c.Concurrency))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "own loads: " + strings.Join(parts, "; ")
}

// loadLine is the run's load line with the mix's own loads: beside the
// shared load when some class takes a share, instead of it otherwise.
func (m *mixFlags) loadLine(shared string, wl *workloadFlags) string {
	own := m.ownLoadsLine()
	switch {
	case own == "":
		return shared
	case m.mix.HasShares():
		return shared + "; " + own
	}
	line := own
	if wl.requests > 0 {
		line += fmt.Sprintf(", %d requests", wl.requests)
	}
	if wl.duration > 0 {
		line += fmt.Sprintf(", %v", wl.duration)
	}
	return line
}

func arrivalWords(c *workload.MixClass) string {
	if c.CV > 0 {
		return fmt.Sprintf("%s (cv %g)", c.Arrival, c.CV)
	}
	return c.Arrival
}

// splitNote says how a run's requests were split among the classes when
// some brought their own load: each class's count and share of the
// requests, and its own rate or users ("" for a mix of shares only).
func (m *mixFlags) splitNote(recs []record.Request) string {
	if m.mix == nil || m.ownLoadsLine() == "" {
		return ""
	}
	count := map[string]int{}
	total := 0
	for i := range recs {
		if recs[i].Class != record.ProbeClass {
			count[recs[i].Class]++
			total++
		}
	}
	if total == 0 {
		return ""
	}
	var parts []string
	for _, c := range m.mix.Classes {
		n := count[c.Name]
		var how string
		switch {
		case c.RateRPS > 0:
			how = fmt.Sprintf("its own %g req/s %s", c.RateRPS, arrivalWords(&c))
		case c.Concurrency > 0:
			how = fmt.Sprintf("its own %d users", c.Concurrency)
		default:
			how = fmt.Sprintf("a %.0f%% share of the shared load", c.Share*100)
		}
		parts = append(parts, fmt.Sprintf("%s %d (%.1f%%, %s)", c.Name, n, 100*float64(n)/float64(total), how))
	}
	return fmt.Sprintf("load split among the mix's classes, of %d requests: %s", total, strings.Join(parts, "; "))
}

// classWords describes a class for the report: its share or own load, its
// lengths or dataset, its model.
func classWords(c *workload.MixClass) string {
	load := fmt.Sprintf("%.0f%%", c.Share*100)
	switch {
	case c.RateRPS > 0:
		load = fmt.Sprintf("own %g req/s %s", c.RateRPS, arrivalWords(c))
	case c.Concurrency > 0:
		load = fmt.Sprintf("own %d users", c.Concurrency)
	}
	in := "dataset " + c.Dataset
	if c.Input != nil {
		in = c.Input.String()
	}
	out := "the dataset's"
	if c.Output != nil {
		out = c.Output.String()
	}
	model := "base model"
	if c.Model != "" {
		model = c.Model
	}
	return fmt.Sprintf("%s %s (%s in, %s out, %s)", c.Name, load, in, out, model)
}

// usersOf counts the classes' own users.
func usersOf(classes []loadgen.UserClass) int {
	n := 0
	for _, c := range classes {
		n += c.Concurrency
	}
	return n
}

// simOwnLoads checks a mix's own loads for knee sim: own rates run (the
// simulator takes any arrival schedule); own concurrencies do not, since
// the simulator's closed loop is one pool of users.
func (m *mixFlags) simOwnLoads(fs *pflag.FlagSet) error {
	if m.mix == nil {
		return nil
	}
	if m.mix.OwnUsers() {
		return Usagef("--mix %s: classes %s have their own concurrency, which knee sim does not run (its closed loop is one pool of users): give them shares of --concurrency, or own rates, or measure them with knee bench",
			m.path, ownLoadClasses(m.mix))
	}
	return m.checkOwnLoads(fs)
}

// simSchedule is the simulator's arrival schedule of a mix with own-rate
// classes; mg then gives each arrival its class.
func (m *mixFlags) simSchedule(mg *workload.MixGenerator, shared workload.Arrivals, seed uint64) (workload.Arrivals, error) {
	if !m.mix.HasShares() {
		shared = nil
	}
	sched, err := workload.NewMixSchedule(m.mix, shared, seed)
	if err != nil {
		return nil, Usagef("--mix %v", err)
	}
	mg.WithSchedule(sched)
	return sched, nil
}

// offeredRate is the run's offered rate: shared (--rate) for the share
// classes, if any, plus every own-rate class's.
func (m *mixFlags) offeredRate(shared float64) float64 {
	if m.mix == nil || !m.mix.OwnRates() {
		return shared
	}
	if !m.mix.HasShares() {
		shared = 0
	}
	for _, c := range m.mix.Classes {
		shared += c.RateRPS
	}
	return shared
}

// config adapts a run's configuration pairs to the mix: the file, the
// classes' own loads, and no shared load setting when no class takes a
// share of it.
func (m *mixFlags) config(kv [][2]string) [][2]string {
	if m.mix == nil {
		return kv
	}
	if !m.mix.HasShares() {
		kv = slices.DeleteFunc(kv, func(p [2]string) bool {
			return p[0] == "concurrency" || p[0] == "rate_rps" || p[0] == "arrival" || p[0] == "burstiness"
		})
	}
	kv = append(kv, [2]string{"mix", m.path})
	if own := m.ownLoadsLine(); own != "" {
		kv = append(kv, [2]string{"mix_own_loads", strings.TrimPrefix(own, "own loads: ")})
	}
	return kv
}
