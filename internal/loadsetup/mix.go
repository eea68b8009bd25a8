package loadsetup

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/openai"
	"github.com/knee-dev/knee/internal/report"
	"github.com/knee-dev/knee/internal/sim"
	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/knee-dev/knee/internal/sweep"
	"github.com/knee-dev/knee/internal/workload"
)

// Mix is --mix: a traffic mix file of classes (tenants, LoRA adapters)
// with their own shapes, model names, APIs, objectives and, for some, their
// own load: own rates are merged with the shared --rate into one open-loop
// schedule, own concurrencies are pools of users beside the --concurrency
// one. Mix is nil without --mix; every method then leaves the run as it is.
type Mix struct {
	Path string
	File *workload.Mix      // the file as read (nil: no --mix)
	SLOs map[string]slo.Set // each class's own objectives
}

// Load reads the mix file and parses every class's objectives; errors
// name the file and line (exit 2). The file's seed is the run's (c's)
// unless --seed was given; given are the flags given.
func (m *Mix) Load(given Given, c *Choice) error {
	if m.Path == "" {
		return nil
	}
	for _, other := range []string{"dataset", "trace", "sessions", "input-tokens", "output-tokens"} {
		if given[other] {
			return badinput.Errorf("--mix gives each class its own lengths: give no --%s with it", other)
		}
	}
	mix, err := workload.LoadMix(m.Path)
	if err != nil {
		return badinput.Errorf("--mix %v", err)
	}
	m.File, m.SLOs = mix, map[string]slo.Set{}
	if mix.HasSeed && !given["seed"] {
		// The file's seed is the run's: arrivals, jitter and classes.
		c.Seed, c.SeedSet = mix.Seed, true
	}
	for _, c := range mix.Classes {
		for j, expr := range c.SLOs {
			o, err := slo.Parse(expr)
			if err != nil {
				return badinput.Errorf("--mix %s:%d: class %s: %v", m.Path, c.SLOLines[j], c.Name, err)
			}
			m.SLOs[c.Name] = append(m.SLOs[c.Name], o)
		}
	}
	return nil
}

// Adapters lists the model names the classes send (for the embedded
// server to answer for).
func (m *Mix) Adapters() []string {
	if m.File == nil {
		return nil
	}
	var out []string
	for _, c := range m.File.Classes {
		if c.Model != "" && !slices.Contains(out, c.Model) {
			out = append(out, c.Model)
		}
	}
	return out
}

// Names are the classes in file order (nil without a mix).
func (m *Mix) Names() []string {
	if m.File == nil {
		return nil
	}
	return m.File.Names()
}

// Classes are the mix's classes as a sweep judges them (nil without a mix).
func (m *Mix) Classes() *sweep.Classes {
	if m.File == nil {
		return nil
	}
	return &sweep.Classes{Names: m.File.Names(), Own: m.SLOs}
}

// ClassSLOs lists the classes' own objectives as "class: objective".
func (m *Mix) ClassSLOs() []string {
	if m.File == nil {
		return nil
	}
	var out []string
	for _, c := range m.File.Classes {
		for _, o := range m.SLOs[c.Name] {
			out = append(out, c.Name+": "+o.String())
		}
	}
	return out
}

// ConfigKV is what a stored run keeps of the mix.
func (m *Mix) ConfigKV() [][2]string {
	if m.File == nil {
		return nil
	}
	return [][2]string{{"mix", m.Path}, {report.ConfigClasses, strings.Join(m.File.Names(), ",")}, {report.ConfigClassSLOs, strings.Join(m.ClassSLOs(), "; ")}}
}

// Judged reports whether some class has its own objectives.
func (m *Mix) Judged() bool {
	for _, objs := range m.SLOs {
		if len(objs) > 0 {
			return true
		}
	}
	return false
}

// LongestMean is the largest class's mean prompt + output tokens (what
// must fit the context).
func (m *Mix) LongestMean() float64 {
	most := 0.0
	for _, c := range m.File.Classes {
		most = max(most, c.Input.Mean()+c.Output.Mean())
	}
	return most
}

// Source builds the request source: each request's class drawn by share,
// its prompt from that class's lengths (base's tokenizer and prefixes),
// its model the class's. Request i's class is the mix's i-th; its prompt
// is its class's first+i-th, so each sweep step sends prompts of its own.
func (m *Mix) Source(base any, seed uint64) (func(first int64) loadgen.Source, error) {
	mg, err := m.generator(base, seed)
	if err != nil {
		return nil, err
	}
	return func(first int64) loadgen.Source {
		return func(i int64) loadgen.Request { return m.request(mg, mg.ClassOf(i), first+i) }
	}, nil
}

// Note describes the mix for the report.
func (m *Mix) Note(seed uint64) string {
	parts := make([]string, len(m.File.Classes))
	for i, c := range m.File.Classes {
		parts[i] = c.Describe()
	}
	return fmt.Sprintf("traffic mix %s, seed %d: %s", m.Path, seed, strings.Join(parts, "; "))
}

// SimMix is a mix as a simulated run serves it: each request's lengths,
// class and LoRA adapter from its class, the own-rate classes' arrivals
// and the own-concurrency classes' users.
type SimMix struct {
	Gen       *workload.MixGenerator
	mix       *Mix
	adapterOf []int32
	seed      uint64
}

// SimClasses makes a simulated run serve the mix: the engine's adapter
// slots set on ecfg from l, each request's lengths from its class (base's
// tokenizer and prefixes).
func (m *Mix) SimClasses(ecfg *simengine.Config, l LoRA, base *workload.Generator, seed uint64) (*SimMix, error) {
	adapterOf, err := l.Apply(ecfg, m)
	if err != nil {
		return nil, err
	}
	return m.ForSim(base.Spec(), adapterOf, seed)
}

// ForSim is SimClasses once the adapters are numbered (LoRA.Apply).
func (m *Mix) ForSim(base workload.Spec, adapterOf []int32, seed uint64) (*SimMix, error) {
	mg, err := workload.NewMixGenerator(m.File, base, seed)
	if err != nil {
		return nil, badinput.Errorf("--mix %v", err)
	}
	return &SimMix{Gen: mg, mix: m, adapterOf: adapterOf, seed: seed}, nil
}

// Class is request i's class name and adapter (sim.Config.Class).
func (s *SimMix) Class(i int64) (string, int32) {
	k := s.Gen.ClassOf(i)
	return s.mix.File.Classes[k].Name, s.adapterOf[k]
}

// Arrivals is the run's schedule: with own-rate classes theirs merged
// with shared (a step's or --rate's), else shared.
func (s *SimMix) Arrivals(shared workload.Arrivals) (workload.Arrivals, error) {
	if !s.mix.File.OwnRates() {
		return shared, nil
	}
	return s.mix.schedule(s.Gen, shared, s.seed)
}

// Pools are the own-concurrency classes' pools of users (sim.Config.Pools
// and Pool; nil without), each request of its pool's class.
func (s *SimMix) Pools() (users []int, issue func(i int64, pool int)) {
	if !s.mix.File.OwnUsers() {
		return nil, nil
	}
	pools := workload.NewMixPools(s.mix.File)
	s.Gen.WithPools(pools)
	return pools.Users(), pools.Issue
}

// SimPools makes cfg's closed loop a pool of users per own-concurrency
// class beside the --concurrency users the share classes divide (none when
// no class takes a share).
func (s *SimMix) SimPools(cfg *sim.Config) {
	if s == nil || !s.mix.File.OwnUsers() {
		return
	}
	cfg.Pools, cfg.Pool = s.Pools()
	if !s.mix.File.HasShares() {
		cfg.Concurrency = 0
	}
}

// CheckOwnLoads refuses load flags that contradict the mix's own loads
// (exit 2): a run is open or closed loop, and a --rate or --concurrency
// needs a class that takes a share of it. (--trace and --sessions are
// refused with any mix, by load.)
func (m *Mix) CheckOwnLoads(given Given) error {
	mix := m.File
	if mix == nil || mix.OwnLoads() == "" {
		return nil
	}
	own := ownLoadClasses(mix)
	switch {
	case mix.OwnRates() && given["concurrency"]:
		return badinput.Errorf("--mix %s: classes %s have their own rate (open loop): give no --concurrency with them; the classes with a share divide --rate", m.Path, own)
	case mix.OwnUsers() && given["rate"]:
		return badinput.Errorf("--mix %s: classes %s have their own concurrency (closed loop): give no --rate with them; the classes with a share divide --concurrency", m.Path, own)
	case mix.OwnRates() && mix.HasShares() && !given["rate"]:
		return badinput.Errorf("--mix %s: classes %s have their own rate, so the run is open loop: give the rate the classes with a share divide with --rate", m.Path, own)
	case !mix.HasShares() && (given["rate"] || given["concurrency"]):
		return badinput.Errorf("--mix %s: every class brings its own load (%s): no class takes a share of --rate or --concurrency; give neither", m.Path, own)
	}
	return nil
}

// CheckSweep refuses a mix a sweep cannot step: classes with their own
// load run beside every step, so their loop must be the steps' (rate steps
// for own rates, concurrency steps for own users), and some class must take
// a share of the stepped load.
func (m *Mix) CheckSweep(rateSteps bool) error {
	mix := m.File
	if mix == nil || mix.OwnLoads() == "" {
		return nil
	}
	own := ownLoadClasses(mix)
	switch {
	case !mix.HasShares():
		return badinput.Errorf("--mix %s: every class brings its own load (%s): a sweep steps the load that the classes with a share divide; give some class a share", m.Path, own)
	case mix.OwnRates() && !rateSteps:
		return badinput.Errorf("--mix %s: classes %s have their own rate (open loop): sweep rate steps (--rate), not concurrency", m.Path, own)
	case mix.OwnUsers() && rateSteps:
		return badinput.Errorf("--mix %s: classes %s have their own concurrency (closed loop): sweep concurrency steps (--concurrency), not rates", m.Path, own)
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

// generator is the mix's generator over base's tokenizer, overhead and
// prefixes (none when base is not a synthetic generator).
func (m *Mix) generator(base any, seed uint64) (*workload.MixGenerator, error) {
	var spec workload.Spec
	if g, ok := base.(*workload.Generator); ok {
		spec = g.Spec()
	}
	mg, err := workload.NewMixGenerator(m.File, spec, seed)
	if err != nil {
		return nil, badinput.Errorf("--mix %v", err)
	}
	return mg, nil
}

// ApplyLoad sets cfg's load and returns the request source: each request
// of its class, from that class's generator (base's tokenizer, overhead and
// prefixes). With own rates cfg's schedule becomes the merged one (shared:
// the --rate schedule, nil without share classes); with own concurrencies
// each such class is a pool of users of its own.
//
// A class's prompts start at first (a sweep step's own place; 0 for a
// bench); which class request i is stays the mix's.
func (m *Mix) ApplyLoad(cfg *loadgen.Config, base any, shared workload.Arrivals, seed uint64, first int64) (loadgen.Source, error) {
	mg, err := m.generator(base, seed)
	if err != nil {
		return nil, err
	}
	classReq := func(k int, i int64) loadgen.Request { return m.request(mg, k, first+i) }
	switch {
	case m.File.OwnRates():
		sched, err := m.schedule(mg, shared, seed)
		if err != nil {
			return nil, err
		}
		cfg.Arrivals, cfg.Concurrency, cfg.RateRPS = sched, 0, m.File.OfferedRate(cfg.RateRPS)
	case m.File.OwnUsers():
		if !m.File.HasShares() {
			cfg.Concurrency = 0
		}
		for k, c := range m.File.Classes {
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
func (m *Mix) request(mg *workload.MixGenerator, k int, i int64) loadgen.Request {
	c := &m.File.Classes[k]
	it := mg.Generator(k).Item(i)
	return loadgen.Request{Prompt: it.Prompt, PromptTokens: it.InputTokens, RequestedTokens: it.RequestedTokens, MaxTokens: it.MaxTokens,
		Class: c.Name, Model: c.Model, API: c.API}
}

// schedule is the arrival schedule of a mix with own-rate classes (knee
// bench's and knee sim's); mg then gives each arrival its class.
func (m *Mix) schedule(mg *workload.MixGenerator, shared workload.Arrivals, seed uint64) (*workload.MixSchedule, error) {
	if !m.File.HasShares() {
		shared = nil
	}
	sched, err := workload.NewMixSchedule(m.File, shared, seed)
	if err != nil {
		return nil, badinput.Errorf("--mix %v", err)
	}
	mg.WithSchedule(sched)
	return sched, nil
}

// SplitNote says how a run's requests were split among the classes when
// some brought their own load ("" otherwise).
func (m *Mix) SplitNote(count map[string]int) string {
	if m.File == nil {
		return ""
	}
	return m.File.Split(count)
}

// Config adapts a run's configuration pairs to the mix: the file, the
// classes' own loads, and no shared load setting when no class takes a
// share of it.
func (m *Mix) Config(kv [][2]string) [][2]string {
	if m.File == nil {
		return kv
	}
	if !m.File.HasShares() {
		kv = slices.DeleteFunc(kv, func(p [2]string) bool {
			return p[0] == "concurrency" || p[0] == "rate_rps" || p[0] == "arrival" || p[0] == "burstiness"
		})
	}
	kv = append(kv, [2]string{"mix", m.Path})
	if own := m.File.OwnLoads(); own != "" {
		kv = append(kv, [2]string{"mix_own_loads", own})
	}
	return kv
}

// OfferedRate is the run's offered rate with the mix's own rates.
func (m *Mix) OfferedRate(shared float64) float64 {
	if m.File == nil {
		return shared
	}
	return m.File.OfferedRate(shared)
}

// LoadLine is the run's load line with the mix's own loads (workload's
// words): the shared load named as the share classes', the run's bound
// after every load, as it holds for all of them.
func (m *Mix) LoadLine(full string, c *Choice, trace *workload.Trace) string {
	if m.File == nil || m.File.OwnLoads() == "" {
		return full
	}
	shared := *c
	shared.Requests, shared.Duration, shared.Warmup = 0, 0, ""
	sharedLoad := shared.LoadString(trace)
	bound, ok := strings.CutPrefix(full, sharedLoad)
	if !ok { // not the flags' own words: keep them whole
		sharedLoad, bound = full, ""
	}
	return m.File.LoadLine(sharedLoad, bound)
}

// SplitOf says how a simulated run's measured requests were split among
// the mix's classes when some brought their own load, as bench's note
// does ("" otherwise).
func (m *Mix) SplitOf(classes []report.Class) string {
	if m.File == nil {
		return ""
	}
	count := map[string]int{}
	for _, c := range classes {
		count[c.Name] = c.Summary.Requests
	}
	return m.File.Split(count)
}

// APIs are the APIs a run speaks: api (--api), and each class's own.
func (m *Mix) APIs(api string) []string {
	apis := []string{api}
	if m.File == nil {
		return apis
	}
	for _, c := range m.File.Classes {
		if c.API != "" && !slices.Contains(apis, c.API) {
			apis = append(apis, c.API)
		}
	}
	return apis
}

// CheckAPIs refuses what a mix class's API cannot be judged by: a
// class's own TTFT, ITL or TPOT objective on embeddings or rerank (naming
// its line), and the run's when any class speaks one of those APIs.
func (m *Mix) CheckAPIs(api string, run slo.Set) error {
	if m.File == nil {
		return nil
	}
	for _, c := range m.File.Classes {
		capi := cmp.Or(c.API, api)
		if !openai.ItemsAPI(capi) {
			continue
		}
		for j, o := range m.SLOs[c.Name] {
			if err := CheckAPIObjectives(capi, slo.Set{o}); err != nil {
				return badinput.Errorf("--mix %s:%d: class %s speaks %s, answered whole, with no first token or token gaps: %s has no %s; judge it by e2e", m.Path, c.SLOLines[j], c.Name, capi, o, o.Metric)
			}
		}
		if err := CheckAPIObjectives(capi, run); err != nil {
			return badinput.Errorf("%v (class %s at %s:%d speaks %s; give the other classes that objective in the mix file instead)", err, c.Name, m.Path, c.Line, capi)
		}
	}
	return nil
}

// LoRA is the simulated engine's adapter limits (vLLM's flags and
// defaults), in effect when a mix names adapters.
type LoRA struct {
	MaxLoRAs, MaxRank int
	LoadMS            float64
}

// Apply enables adapters on ecfg when the mix names any; it returns each
// class's adapter number (0: the base model).
func (l LoRA) Apply(ecfg *simengine.Config, m *Mix) ([]int32, error) {
	switch {
	case l.MaxLoRAs < 1 || l.MaxLoRAs > 1024:
		return nil, badinput.Errorf("--max-loras %d: want 1 to 1024", l.MaxLoRAs)
	case l.MaxRank < 1 || l.MaxRank > 512:
		return nil, badinput.Errorf("--max-lora-rank %d: want 1 to 512", l.MaxRank)
	case l.LoadMS < 0 || l.LoadMS > 60_000:
		return nil, badinput.Errorf("--lora-load-ms %g: want 0 to 60000", l.LoadMS)
	}
	names := m.Adapters()
	ids := make([]int32, len(m.File.Classes))
	for k, c := range m.File.Classes {
		if c.Model != "" {
			ids[k] = int32(slices.Index(names, c.Model) + 1)
		}
	}
	if len(names) > 0 {
		ecfg.LoRA = simengine.LoRAConfig{MaxLoRAs: l.MaxLoRAs, MaxLoRARank: l.MaxRank, LoadNS: int64(l.LoadMS * 1e6)}
	}
	return ids, nil
}
