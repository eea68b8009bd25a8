package scrape

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func parseFile(t *testing.T, name string) *Parsed {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := Parse(f, Limits{})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return p
}

func TestParseServers(t *testing.T) {
	type hist struct {
		count, sum float64
		buckets    bool
	}
	cases := []struct {
		file   string
		server string
		values map[Metric]float64
		hists  map[Metric]hist
		absent []Metric
	}{
		{"vllm_v1.prom", "vllm",
			map[Metric]float64{Running: 64, Waiting: 4, KVUsage: 0.4, Preemptions: 7, PrefixQueries: 10000, PrefixHits: 2500,
				PromptTokens: 120000, GenerationTokens: 30000, RequestsDone: 100},
			map[Metric]hist{TTFT: {100, 18, true}, ITL: {29900, 598, true}, Queue: {100, 2, true}, Prefill: {100, 15, true},
				Decode: {100, 600, true}, E2E: {100, 620, true}},
			[]Metric{PrefixHitRate, Inference}},
		{"vllm_v1_early.prom", "vllm",
			map[Metric]float64{Running: 8, Waiting: 0, KVUsage: 0.25, PrefixQueries: 400, PrefixHits: 100, Preemptions: 0},
			map[Metric]hist{ITL: {792, 15, true}, TTFT: {8, 0.4, true}}, []Metric{Queue}},
		{"vllm_v0.prom", "vllm",
			map[Metric]float64{Running: 12, Waiting: 6, KVUsage: 0.91, PrefixHitRate: 0.4, Preemptions: 17, PromptTokens: 51200},
			map[Metric]hist{ITL: {12700, 508, true}, Queue: {100, 40, true}}, []Metric{PrefixQueries}},
		{"sglang.prom", "sglang",
			map[Metric]float64{Running: 32, Waiting: 5, KVUsage: 0.28, PrefixHitRate: 0.0075, PromptTokens: 8.128902e+06, RequestsDone: 83},
			map[Metric]hist{TTFT: {83, 30.4, true}, ITL: {2000, 40, true}, Queue: {83, 8.3, true}, E2E: {83, 415, true}}, []Metric{Prefill}},
		{"tgi.prom", "tgi",
			map[Metric]float64{Running: 14, Waiting: 9, RequestsDone: 118, PromptTokens: 70800, GenerationTokens: 14160},
			map[Metric]hist{Queue: {118, 23.6, false}, Inference: {118, 259.6, false}, ITL: {118, 2.95, false}, E2E: {118, 283.2, true}},
			[]Metric{KVUsage}},
		{"llamacpp.prom", "llamacpp",
			map[Metric]float64{Running: 2, Waiting: 3, KVUsage: 0.12, PromptTokens: 33065, GenerationTokens: 7801, PromptSeconds: 235.743, DecodeSeconds: 390.05},
			nil, []Metric{TTFT}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			p := parseFile(t, c.file)
			if p.Server != c.server {
				t.Fatalf("server %q, want %q", p.Server, c.server)
			}
			if len(p.Malformed) > 0 {
				t.Errorf("malformed lines reported in a clean file: %v", p.Malformed)
			}
			for m, want := range c.values {
				got, ok := p.Sample.Values[m]
				if !ok || math.Abs(got-want) > 1e-9*math.Max(1, want) {
					t.Errorf("%s = %v (present %v), want %v", m, got, ok, want)
				}
			}
			for m, want := range c.hists {
				h := p.Sample.Hists[m]
				if h == nil {
					t.Errorf("histogram %s missing", m)
					continue
				}
				if h.Count != want.count || math.Abs(h.Sum-want.sum) > 1e-9 || (len(h.LE) > 0) != want.buckets {
					t.Errorf("%s: count %v sum %v buckets %d, want %+v", m, h.Count, h.Sum, len(h.LE), want)
				}
			}
			for _, m := range c.absent {
				if _, ok := p.Sample.Values[m]; ok {
					t.Errorf("%s present, want absent", m)
				}
				if p.Sample.Hists[m] != nil {
					t.Errorf("histogram %s present, want absent", m)
				}
			}
		})
	}
}

func TestParseSumsEnginesAndBuckets(t *testing.T) {
	p := parseFile(t, "vllm_v1.prom")
	h := p.Sample.Hists[TTFT]
	if !sameBounds(h.LE, []float64{0.1, 0.25, 0.5}) || !sameBounds(h.Cum, []float64{20, 80, 100}) {
		t.Fatalf("TTFT buckets %v %v", h.LE, h.Cum)
	}
	// 50th of 100 falls in (0.1, 0.25]: 30 of its 60.
	if q := h.Quantile(0.5); math.Abs(q-0.175) > 1e-12 {
		t.Errorf("p50 %v, want 0.175", q)
	}
}

func TestParseUnknownServer(t *testing.T) {
	in := "# TYPE http_requests_total counter\nhttp_requests_total{code=\"200\"} 7\n# TYPE go_goroutines gauge\ngo_goroutines 12\n"
	p, err := Parse(strings.NewReader(in), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Server != "" || p.Families != 2 || len(p.Sample.Values) != 0 {
		t.Fatalf("unknown server read as %+v", p)
	}
	s := &Series{URL: "http://x/metrics", Samples: []Sample{{TMS: 0}, {TMS: 1000}}}
	s.Summarize()
	if len(s.Notes) != 1 || !strings.Contains(s.Notes[0], "unknown server") {
		t.Fatalf("notes %q", s.Notes)
	}
}

func TestParseMalformedLinesDropped(t *testing.T) {
	p := parseFile(t, "malformed.prom")
	if p.Server != "vllm" {
		t.Fatalf("server %q", p.Server)
	}
	if len(p.Malformed) != 3 {
		t.Fatalf("want 3 malformed lines reported, got %d: %q", len(p.Malformed), p.Malformed)
	}
	if p.Sample.Values[Running] != 4 || p.Sample.Values[KVUsage] != 0.5 || p.Sample.Values[GenerationTokens] != 100 {
		t.Errorf("good lines lost: %v", p.Sample.Values)
	}
	if _, ok := p.Sample.Values[Waiting]; ok {
		t.Errorf("the non-numeric waiting value was read")
	}
}

func TestParseGarbage(t *testing.T) {
	for _, in := range []string{"", "\x00\x01\x02", "<html><body>502 Bad Gateway</body></html>", strings.Repeat("{", 1000)} {
		p, err := Parse(strings.NewReader(in), Limits{})
		if err != nil {
			t.Errorf("%.20q: %v", in, err)
			continue
		}
		if p.Server != "" {
			t.Errorf("%.20q read as server %q", in, p.Server)
		}
	}
}

// bigExposition streams n bytes of series, known or not, without holding
// them: the memory measured is the parser's.
type bigExposition struct {
	n, done int
	line    []byte
	pos     int
}

func (b *bigExposition) Read(p []byte) (int, error) {
	if b.done >= b.n {
		return 0, io.EOF
	}
	k := 0
	for k < len(p) && b.done < b.n {
		c := copy(p[k:], b.line[b.pos:])
		k += c
		b.done += c
		b.pos = (b.pos + c) % len(b.line)
	}
	return k, nil
}

func heapAlloc() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

func TestParse20MBResponseBounded(t *testing.T) {
	// 20 MB of series knee does not read (a big exporter beside vLLM's few)
	// are filtered as they stream: little memory, and the vLLM series after
	// them are still read.
	const size = 20 << 20
	noise := &bigExposition{n: size, line: []byte("other_exporter_series{shard=\"12345\",pod=\"abcdefgh\"} 1.0\n")}
	tail := strings.NewReader("# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting 17\n")
	before := heapAlloc()
	p, err := Parse(io.MultiReader(noise, tail), Limits{})
	allocated := heapAlloc() - before
	if err != nil {
		t.Fatal(err)
	}
	if p.Sample.Values[Waiting] != 17 {
		t.Fatalf("series after 20 MB of noise lost: %v", p.Sample.Values)
	}
	t.Logf("20 MB of unknown series: %d KiB allocated", allocated>>10)
	if allocated > 4<<20 && !raceOn {
		t.Errorf("parsing 20 MB of unknown series allocated %d MiB; want it streamed (< 4 MiB)", allocated>>20)
	}

	// 20 MB of known series (runaway label cardinality) stop at the kept
	// limit with a clear error, having kept at most that much.
	known := &bigExposition{n: size, line: []byte("vllm:num_requests_running{engine=\"0000000000\",model_name=\"m\"} 1.0\n")}
	before = heapAlloc()
	_, err = Parse(known, Limits{})
	allocated = heapAlloc() - before
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("20 MB of known series: err %v, want ErrTooLarge", err)
	}
	if allocated > 4*DefaultMaxKeptBytes && !raceOn { // the kept buffer doubles as it grows
		t.Errorf("allocated %d MiB before giving up; want about the %d MiB kept limit", allocated>>20, DefaultMaxKeptBytes>>20)
	}

	// Past the body limit: refused, not read on.
	_, err = Parse(&bigExposition{n: size, line: []byte("x 1\n")}, Limits{MaxBodyBytes: 1 << 20})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("body over the limit: err %v, want ErrTooLarge", err)
	}
}

func TestParseLongLineSkipped(t *testing.T) {
	in := "vllm:num_requests_running{x=\"" + strings.Repeat("a", 100<<10) + "\"} 3\n# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting 2\n"
	p, err := Parse(strings.NewReader(in), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Malformed) != 1 || p.Sample.Values[Waiting] != 2 {
		t.Fatalf("malformed %q values %v", p.Malformed, p.Sample.Values)
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"vllm_v1.prom", "vllm_v0.prom", "sglang.prom", "tgi.prom", "llamacpp.prom", "malformed.prom"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		p, err := Parse(bytes.NewReader(in), Limits{MaxBodyBytes: 1 << 20, MaxKeptBytes: 1 << 20})
		if err != nil {
			return
		}
		for m, h := range p.Sample.Hists {
			if len(h.LE) != len(h.Cum) {
				t.Fatalf("%s: %d bounds, %d counts", m, len(h.LE), len(h.Cum))
			}
			for _, q := range []float64{0.5, 0.99} {
				if v := h.Quantile(q); h.Count > 0 && len(h.LE) > 0 && math.IsNaN(v) {
					t.Fatalf("%s: NaN quantile of a non-empty histogram", m)
				}
			}
		}
		// A sample must survive the store's JSON round trip.
		s := Series{Samples: []Sample{p.Sample, p.Sample}}
		_ = s.Window(0, 1)
	})
}
