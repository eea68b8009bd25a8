package workload

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/knee-dev/knee/internal/badinput"
)

// A traffic mix (--mix FILE) is several classes of requests in one run:
// tenants or LoRA adapters on one base model, each with its own shapes,
// model name and objectives. Each request's class is drawn from (seed, i)
// by the classes' shares, so one seed reproduces the mix exactly.
//
//	seed: 7
//	classes:
//	  - name: chat
//	    share: 0.6
//	    input_tokens: "512"
//	    output_tokens: "128:256"
//	    model: adapter-chat     # a LoRA adapter's name, or omit for the base model
//	    api: chat               # chat, completions, ollama, embeddings, rerank or messages; omit for --api
//	    slo: ["p95(ttft)<1s"]
//	  - name: batch             # its own load instead of a share:
//	    rate: 4                 #   an open-loop rate (arrival poisson, constant, gamma with cv)
//	    arrival: gamma
//	    cv: 2
//	    dataset: prompts.jsonl  #   prompts from a dataset file, as --dataset reads
//	slos:                       # objectives by class name, beside each class's own
//	  chat: ["p99(itl)<80ms"]
//
// A class takes a share of the run's load (--rate or --concurrency), or
// brings its own: a rate (open loop, merged with the others' arrivals in
// time order) or a concurrency (a pool of users of its own in the closed
// loop). One run is open or closed loop, so a file's own loads are all
// rates or all concurrencies.

// Mix is a parsed mix file.
type Mix struct {
	Path    string
	Seed    uint64
	HasSeed bool
	Classes []MixClass
	cum     []float64 // cumulative shares of the share classes, the last exactly 1
	shareOf []int     // the class index of each cum entry
}

// MixClass is one class of a mix.
type MixClass struct {
	Name  string
	Share float64 // 0 for a class with its own load
	// RateRPS > 0: the class's own open-loop arrivals, of Arrival (poisson,
	// constant, gamma) with gaps of coefficient of variation CV (gamma).
	RateRPS float64
	Arrival string
	CV      float64
	// Concurrency > 0: the class's own pool of closed-loop users.
	Concurrency int
	// Dataset is a prompt file (as --dataset reads), relative paths
	// resolved from the mix file's folder; Input is then unused and
	// Output fills in entries without an output length.
	Dataset       string
	Input, Output Dist
	// Model is the model name the class's requests send ("" = the run's):
	// a LoRA adapter served beside the base model, or another model.
	Model string
	// API is the API the class's requests speak (openai.APIs; "" = the
	// run's --api), each sent to that API's endpoint.
	API string
	// SLOs are the class's own objectives (unparsed: the slo package
	// parses them), with the file's line of each for errors.
	SLOs     []string
	SLOLines []int
	Line     int
}

type mixFile struct {
	Seed    *uint64             `yaml:"seed"`
	Classes []mixClassFile      `yaml:"classes"`
	SLOs    map[string][]string `yaml:"slos"`
}

type mixClassFile struct {
	Name         string   `yaml:"name"`
	Share        *float64 `yaml:"share"`
	Rate         *float64 `yaml:"rate"`
	Arrival      string   `yaml:"arrival"`
	CV           *float64 `yaml:"cv"`
	Concurrency  *int     `yaml:"concurrency"`
	Dataset      string   `yaml:"dataset"`
	InputTokens  string   `yaml:"input_tokens"`
	OutputTokens string   `yaml:"output_tokens"`
	Model        string   `yaml:"model"`
	API          string   `yaml:"api"`
	SLO          []string `yaml:"slo"`
}

// mixAPIs are openai.APIs, written out: importing openai would pull its
// HTTP client and image encoders into the WebAssembly build (a test holds
// the two lists equal).
var mixAPIs = []string{"chat", "completions", "ollama", "embeddings", "rerank", "messages"}

// maxMixBytes and maxMixClasses bound what a mix file may make knee hold.
const (
	maxMixBytes   = 1 << 20
	maxMixClasses = 64
)

// LoadMix reads and checks a mix file. Errors name the file and line.
func LoadMix(path string) (*Mix, error) {
	b, err := badinput.ReadFile(path, maxMixBytes, "a mix file: it lists classes, not data")
	if err != nil {
		return nil, err
	}
	return ParseMix(path, b)
}

// ParseMix parses a mix file's contents; path names it in errors.
func ParseMix(path string, b []byte) (*Mix, error) {
	fail := func(line int, format string, args ...any) error {
		if line > 0 {
			return fmt.Errorf("%s:%d: %s", path, line, fmt.Sprintf(format, args...))
		}
		return fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...))
	}
	var mf mixFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&mf); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fail(0, "empty; want a list of classes under \"classes:\"")
		}
		// yaml's messages start "yaml: line N: …"; say the file instead.
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		msg = strings.ReplaceAll(msg, "unmarshal errors:\n  ", "")
		if rest, ok := strings.CutPrefix(msg, "line "); ok {
			return nil, fmt.Errorf("%s:%s (known keys: seed, classes, slos; in a class: name, share, rate, arrival, cv, concurrency, dataset, input_tokens, output_tokens, model, api, slo)", path, rest)
		}
		return nil, fail(0, "%s", msg)
	}
	// Lines of each class and each slos key, from the node tree.
	var root yaml.Node
	_ = yaml.Unmarshal(b, &root)
	classLines, sloKeyLines, sloItemLines := mixLines(&root)

	if len(mf.Classes) == 0 {
		return nil, fail(0, "no classes; want at least one under \"classes:\"")
	}
	if len(mf.Classes) > maxMixClasses {
		return nil, fail(classLines[maxMixClasses], "%d classes: at most %d", len(mf.Classes), maxMixClasses)
	}
	m := &Mix{Path: path}
	if mf.Seed != nil {
		m.Seed, m.HasSeed = *mf.Seed, true
	}
	seen := map[string]int{}
	sum := 0.0
	firstShare, firstRate, firstUsers := 0, 0, 0 // lines of the first class of each kind
	for k, c := range mf.Classes {
		line := classLines[k]
		loads := 0
		for _, given := range []bool{c.Share != nil, c.Rate != nil, c.Concurrency != nil} {
			if given {
				loads++
			}
		}
		switch {
		case c.Name == "":
			return nil, fail(line, "class %d has no name", k+1)
		case c.Name == "probe" || c.Name == "main":
			return nil, fail(line, "class name %q is reserved (probes and the unclassed requests use it)", c.Name)
		case loads == 0:
			return nil, fail(line, "class %s has no share, rate or concurrency; want a share of the run's load (the shares summing to 1) or a load of its own", c.Name)
		case loads > 1:
			return nil, fail(line, "class %s gives more than one of share, rate and concurrency; want one: a share of the run's load, or its own rate or concurrency", c.Name)
		case c.Share != nil && (*c.Share <= 0 || *c.Share > 1 || math.IsNaN(*c.Share)):
			return nil, fail(line, "class %s: share %g; want a fraction in (0, 1]", c.Name, *c.Share)
		case c.Rate != nil && (!(*c.Rate > 0) || *c.Rate > maxClassRate):
			return nil, fail(line, "class %s: rate %g; want requests per second in (0, %d]", c.Name, *c.Rate, maxClassRate)
		case c.Concurrency != nil && (*c.Concurrency < 1 || *c.Concurrency > maxClassUsers):
			return nil, fail(line, "class %s: concurrency %d; want 1 to %d users", c.Name, *c.Concurrency, maxClassUsers)
		case c.Rate == nil && (c.Arrival != "" || c.CV != nil):
			return nil, fail(line, "class %s: arrival and cv describe a class's own rate; give rate with them", c.Name)
		case c.CV != nil && c.Arrival != ArrivalGamma:
			return nil, fail(line, "class %s: cv applies to arrival gamma (the gaps' coefficient of variation), not %s", c.Name, cmp.Or(c.Arrival, "poisson (the default)"))
		case c.CV != nil && (!(*c.CV > 0) || *c.CV > 100):
			return nil, fail(line, "class %s: cv %g; want the gaps' coefficient of variation in (0, 100] (1: Poisson)", c.Name, *c.CV)
		case c.Dataset == "" && (c.InputTokens == "" || c.OutputTokens == ""):
			return nil, fail(line, "class %s needs input_tokens and output_tokens (e.g. \"512\" or \"256:1024\"), or a dataset", c.Name)
		case c.Dataset != "" && c.InputTokens != "":
			return nil, fail(line, "class %s: its dataset gives the prompts: give no input_tokens with it", c.Name)
		case c.API != "" && !slices.Contains(mixAPIs, c.API):
			return nil, fail(line, "class %s: api %q; want one of %s", c.Name, c.API, strings.Join(mixAPIs, ", "))
		}
		if prev, dup := seen[c.Name]; dup {
			return nil, fail(line, "class %s is also defined at line %d", c.Name, prev)
		}
		seen[c.Name] = line
		mc := MixClass{Name: c.Name, Model: c.Model, API: c.API, SLOs: c.SLO, Line: line, Dataset: c.Dataset}
		var err error
		if c.InputTokens != "" {
			if mc.Input, err = ParseDist(c.InputTokens); err != nil {
				return nil, fail(line, "class %s: input_tokens: %v", c.Name, err)
			}
		}
		if c.OutputTokens != "" {
			if mc.Output, err = ParseDist(c.OutputTokens); err != nil {
				return nil, fail(line, "class %s: output_tokens: %v", c.Name, err)
			}
		}
		switch {
		case c.Share != nil:
			mc.Share = *c.Share
			sum += *c.Share
			firstShare = cmp.Or(firstShare, line)
		case c.Rate != nil:
			mc.RateRPS, mc.Arrival = *c.Rate, cmp.Or(c.Arrival, ArrivalPoisson)
			if c.CV != nil {
				mc.CV = *c.CV
			}
			// The arrival kind is checked here, where the line is known.
			if _, err := NewArrivals(mc.Arrival, mc.RateRPS, mc.burstiness(), 1); err != nil {
				return nil, fail(line, "class %s: %v", c.Name, err)
			}
			firstRate = cmp.Or(firstRate, line)
		default:
			mc.Concurrency = *c.Concurrency
			firstUsers = cmp.Or(firstUsers, line)
		}
		if firstRate > 0 && firstUsers > 0 {
			return nil, fail(max(firstRate, firstUsers), "class %s: one run is open or closed loop: a class with its own rate (line %d) and one with its own concurrency (line %d) cannot run together",
				c.Name, firstRate, firstUsers)
		}
		for range c.SLO {
			mc.SLOLines = append(mc.SLOLines, line)
		}
		m.Classes = append(m.Classes, mc)
	}
	if firstShare > 0 && math.Abs(sum-1) > 1e-6 {
		return nil, fail(firstShare, "the classes' shares sum to %g; want 1 (classes with their own rate or concurrency take no share)", sum)
	}
	for name, exprs := range mf.SLOs {
		k := -1
		for i := range m.Classes {
			if m.Classes[i].Name == name {
				k = i
			}
		}
		if k < 0 {
			return nil, fail(sloKeyLines[name], "slos names class %q, which the file does not define (classes: %s)", name, strings.Join(m.Names(), ", "))
		}
		m.Classes[k].SLOs = append(m.Classes[k].SLOs, exprs...)
		for j := range exprs {
			line := sloKeyLines[name]
			if j < len(sloItemLines[name]) {
				line = sloItemLines[name][j]
			}
			m.Classes[k].SLOLines = append(m.Classes[k].SLOLines, line)
		}
	}
	acc := 0.0
	for k, c := range m.Classes {
		if c.Share > 0 {
			acc += c.Share
			m.cum = append(m.cum, acc/sum)
			m.shareOf = append(m.shareOf, k)
		}
	}
	if len(m.cum) > 0 {
		m.cum[len(m.cum)-1] = 1
	}
	return m, nil
}

// Bounds of a class's own load.
const (
	maxClassRate  = 100_000
	maxClassUsers = 100_000
)

// burstiness is the gamma shape of the class's gaps: CV² = 1/shape.
func (c *MixClass) burstiness() float64 {
	if c.Arrival != ArrivalGamma || c.CV == 0 {
		return 0
	}
	return 1 / (c.CV * c.CV)
}

// OwnLoad reports whether the class brings its own rate or concurrency
// instead of a share of the run's load.
func (c *MixClass) OwnLoad() bool { return c.RateRPS > 0 || c.Concurrency > 0 }

// HasShares reports whether some class takes a share of the run's load
// (which then needs --rate or --concurrency).
func (m *Mix) HasShares() bool { return len(m.cum) > 0 }

// OwnRates reports whether some class brings its own rate; OwnUsers,
// its own concurrency.
func (m *Mix) OwnRates() bool {
	return slices.ContainsFunc(m.Classes, func(c MixClass) bool { return c.RateRPS > 0 })
}

func (m *Mix) OwnUsers() bool {
	return slices.ContainsFunc(m.Classes, func(c MixClass) bool { return c.Concurrency > 0 })
}

// mixLines finds the line of each class and of each slos key and item.
func mixLines(root *yaml.Node) (classes []int, sloKeys map[string]int, sloItems map[string][]int) {
	sloKeys, sloItems = map[string]int{}, map[string][]int{}
	if root.Kind != yaml.DocumentNode || len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return nil, sloKeys, sloItems
	}
	top := root.Content[0].Content
	for i := 0; i+1 < len(top); i += 2 {
		switch top[i].Value {
		case "classes":
			for _, c := range top[i+1].Content {
				classes = append(classes, c.Line)
			}
		case "slos":
			v := top[i+1].Content
			for j := 0; j+1 < len(v); j += 2 {
				sloKeys[v[j].Value] = v[j].Line
				for _, it := range v[j+1].Content {
					sloItems[v[j].Value] = append(sloItems[v[j].Value], it.Line)
				}
			}
		}
	}
	for len(classes) <= maxMixClasses {
		classes = append(classes, 0)
	}
	return classes, sloKeys, sloItems
}

// Names lists the classes' names in file order.
func (m *Mix) Names() []string {
	out := make([]string, len(m.Classes))
	for i, c := range m.Classes {
		out[i] = c.Name
	}
	return out
}

// streamMix is the random stream of class draws.
const streamMix uint64 = 0x6d69780000000000 // "mix"

// Class returns the index of request i's class among those that take a
// share: a pure function of (seed, i), drawn by the shares (-1 when no
// class takes one).
func (m *Mix) Class(seed uint64, i int64) int {
	if len(m.cum) == 0 {
		return -1
	}
	u := float64(mix64(seed^streamMix^mix64(uint64(i)))>>11) / (1 << 53)
	for k, c := range m.cum {
		if u < c {
			return m.shareOf[k]
		}
	}
	return m.shareOf[len(m.cum)-1]
}

// MixGenerator gives request i its class and that class's workload.
type MixGenerator struct {
	mix   *Mix
	seed  uint64
	gens  []*Generator
	sched classSource // own-rate classes' schedule or own-concurrency pools: each request's class
}

// classSource says the class of request i that an own load sent (-1: drawn
// by the shares): a MixSchedule's or MixPools'.
type classSource interface{ ClassAt(i int64) int }

// NewMixGenerator builds one generator per class from base (its tokenizer,
// overhead and prefixes), each on a seed of its own derived from seed. A
// class's dataset is read here.
func NewMixGenerator(m *Mix, base Spec, seed uint64) (*MixGenerator, error) {
	mg := &MixGenerator{mix: m, seed: seed}
	for k, c := range m.Classes {
		spec := base
		spec.Dataset = m.datasetPath(c.Dataset)
		if spec.Dataset != "" {
			spec.SharedPrefixTokens, spec.PrefixGroups = 0, 0
		}
		spec.Input, spec.Output = c.Input, c.Output
		spec.Seed = mix64(seed + uint64(k) + 1)
		g, err := NewGenerator(spec)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: class %s: %w", m.Path, c.Line, c.Name, err)
		}
		mg.gens = append(mg.gens, g)
	}
	return mg, nil
}

// datasetPath resolves a class's dataset from the mix file's folder.
func (m *Mix) datasetPath(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(filepath.Dir(m.Path), p)
}

// WithSchedule makes the classes of open-loop arrival i those s gave it
// (s merges the own-rate classes' arrivals with the shared ones).
func (g *MixGenerator) WithSchedule(s *MixSchedule) *MixGenerator {
	g.sched = s
	return g
}

// WithPools makes the class of closed-loop request i its user pool's (the
// simulator's own-concurrency classes).
func (g *MixGenerator) WithPools(p *MixPools) *MixGenerator {
	g.sched = p
	return g
}

// Item is request i's workload and the index of its class.
func (g *MixGenerator) Item(i int64) (Item, int) {
	k := g.ClassOf(i)
	return g.gens[k].Item(i), k
}

// Generator is class k's generator.
func (g *MixGenerator) Generator(k int) *Generator { return g.gens[k] }

// Lengths is request i's prompt and output lengths, from its class (the
// simulator's view of the mix).
func (g *MixGenerator) Lengths(i int64) (in, out int) {
	return g.gens[g.ClassOf(i)].Lengths(i)
}

// ClassOf is the index of request i's class: its schedule's, for an arrival
// of an own-rate class, else drawn by the shares.
func (g *MixGenerator) ClassOf(i int64) int {
	if g.sched != nil {
		if k := g.sched.ClassAt(i); k >= 0 {
			return k
		}
	}
	return max(0, g.mix.Class(g.seed, i))
}
