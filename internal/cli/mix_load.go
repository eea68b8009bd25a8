package cli

import (
	"slices"
	"strings"

	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/workload"
	"github.com/spf13/pflag"
)

// A mix's classes may bring their own load (workload.Mix): own rates are
// merged with the shared --rate into one open-loop schedule, own
// concurrencies are pools of users beside the --concurrency one. This file
// wires that into a run; mix_flags.go reads the file.

// checkOwnLoads refuses load flags that contradict the mix's own loads
// (exit 2): a run is open or closed loop, and a --rate or --concurrency
// needs a class that takes a share of it. (--trace and --sessions are
// refused with any mix, by load.)
func (m *mixFlags) checkOwnLoads(fs *pflag.FlagSet) error {
	mix := m.mix
	if mix == nil || mix.OwnLoads() == "" {
		return nil
	}
	own := ownLoadClasses(mix)
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

// checkSweep refuses a mix a sweep cannot step: classes with their own
// load run beside every step, so their loop must be the steps' (rate steps
// for own rates, concurrency steps for own users), and some class must take
// a share of the stepped load.
func (m *mixFlags) checkSweep(rateSteps bool) error {
	mix := m.mix
	if mix == nil || mix.OwnLoads() == "" {
		return nil
	}
	own := ownLoadClasses(mix)
	switch {
	case !mix.HasShares():
		return Usagef("--mix %s: every class brings its own load (%s): a sweep steps the load that the classes with a share divide; give some class a share", m.path, own)
	case mix.OwnRates() && !rateSteps:
		return Usagef("--mix %s: classes %s have their own rate (open loop): sweep rate steps (--rate), not concurrency", m.path, own)
	case mix.OwnUsers() && rateSteps:
		return Usagef("--mix %s: classes %s have their own concurrency (closed loop): sweep concurrency steps (--concurrency), not rates", m.path, own)
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
func (m *mixFlags) applyLoad(cfg *loadgen.Config, base any, shared workload.Arrivals, seed uint64, first int64) (loadgen.Source, error) {
	var spec workload.Spec
	if g, ok := base.(*workload.Generator); ok {
		spec = g.Spec()
	}
	mg, err := workload.NewMixGenerator(m.mix, spec, seed)
	if err != nil {
		return nil, Usagef("--mix %v", err)
	}
	// A class's prompts start at first (a sweep step's own place; 0 for
	// a bench); which class request i is stays the mix's.
	classReq := func(k int, i int64) loadgen.Request { return m.request(mg, k, first+i) }
	switch {
	case m.mix.OwnRates():
		sched, err := m.schedule(mg, shared, seed)
		if err != nil {
			return nil, err
		}
		cfg.Arrivals, cfg.Concurrency, cfg.RateRPS = sched, 0, m.mix.OfferedRate(cfg.RateRPS)
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

// request is request i of class k: its prompt from that class's lengths,
// its model (a LoRA adapter) and API the class's.
func (m *mixFlags) request(mg *workload.MixGenerator, k int, i int64) loadgen.Request {
	c := &m.mix.Classes[k]
	it := mg.Generator(k).Item(i)
	return loadgen.Request{Prompt: it.Prompt, PromptTokens: it.InputTokens, RequestedTokens: it.RequestedTokens, MaxTokens: it.MaxTokens,
		Class: c.Name, Model: c.Model, API: c.API}
}

// schedule is the arrival schedule of a mix with own-rate classes (knee
// bench's and knee sim's); mg then gives each arrival its class.
func (m *mixFlags) schedule(mg *workload.MixGenerator, shared workload.Arrivals, seed uint64) (*workload.MixSchedule, error) {
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

// loadLine is the run's load line with the mix's own loads (workload's
// words): the shared load named as the share classes', the run's bound
// after every load, as it holds for all of them.
func (m *mixFlags) loadLine(full string, wl *workloadFlags) string {
	if m.mix == nil || m.mix.OwnLoads() == "" {
		return full
	}
	shared := *wl
	shared.Requests, shared.Duration, shared.Warmup = 0, 0, ""
	sharedLoad := shared.loadString()
	bound, ok := strings.CutPrefix(full, sharedLoad)
	if !ok { // not the flags' own words: keep them whole
		sharedLoad, bound = full, ""
	}
	return m.mix.LoadLine(sharedLoad, bound)
}

// splitNote says how a run's requests were split among the classes when
// some brought their own load ("" otherwise).
func (m *mixFlags) splitNote(count map[string]int) string {
	if m.mix == nil {
		return ""
	}
	return m.mix.Split(count)
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
	if own := m.mix.OwnLoads(); own != "" {
		kv = append(kv, [2]string{"mix_own_loads", own})
	}
	return kv
}

// usersOf counts the classes' own users.
func usersOf(classes []loadgen.UserClass) int {
	n := 0
	for _, c := range classes {
		n += c.Concurrency
	}
	return n
}

// offeredRate is the run's offered rate with the mix's own rates.
func (m *mixFlags) offeredRate(shared float64) float64 {
	if m.mix == nil {
		return shared
	}
	return m.mix.OfferedRate(shared)
}
