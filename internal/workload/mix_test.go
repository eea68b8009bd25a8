package workload

import (
	"math"
	"strings"
	"testing"
)

const goodMix = `seed: 7
classes:
  - name: chat
    share: 0.5
    input_tokens: "256"
    output_tokens: "64"
    model: adapter-chat
    slo: ["p95(ttft)<500ms"]
  - name: summarize
    share: 0.3
    input_tokens: "1024"
    output_tokens: "32"
    model: adapter-sum
  - name: base
    share: 0.2
    input_tokens: "128:256"
    output_tokens: "128"
slos:
  summarize: ["p99(e2e)<5s"]
`

func TestMixParsesAndDrawsByShare(t *testing.T) {
	m, err := ParseMix("mix.yaml", []byte(goodMix))
	if err != nil {
		t.Fatal(err)
	}
	if !m.HasSeed || m.Seed != 7 || len(m.Classes) != 3 || m.Classes[0].Model != "adapter-chat" {
		t.Fatalf("parsed %+v", m)
	}
	if got := m.Classes[1].SLOs; len(got) != 1 || got[0] != "p99(e2e)<5s" || m.Classes[1].SLOLines[0] != 19 {
		t.Errorf("summarize's SLOs %v at lines %v: want the slos entry, line 19", got, m.Classes[1].SLOLines)
	}
	const n = 20000
	counts := make([]int, 3)
	for i := range int64(n) {
		counts[m.Class(7, i)]++
	}
	for k, c := range m.Classes {
		if got := float64(counts[k]) / n; math.Abs(got-c.Share) > 0.015 {
			t.Errorf("class %s drawn %.3f of the time, want %.2f", c.Name, got, c.Share)
		}
	}
}

func TestMixSeedReproduces(t *testing.T) {
	m, err := ParseMix("mix.yaml", []byte(goodMix))
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewMixGenerator(m, Spec{}, 7)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewMixGenerator(m, Spec{}, 7)
	c, _ := NewMixGenerator(m, Spec{}, 8)
	differ := 0
	for i := range int64(200) {
		ia, ka := a.Item(i)
		ib, kb := b.Item(i)
		if ka != kb || ia != ib {
			t.Fatalf("request %d: class %d vs %d, items differ: one seed must reproduce the mix", i, ka, kb)
		}
		if _, kc := c.Item(i); kc != ka {
			differ++
		}
		if float64(ia.InputTokens) != m.Classes[ka].Input.Mean() && m.Classes[ka].Name != "base" {
			t.Fatalf("request %d of class %s has %d input tokens, want %g", i, m.Classes[ka].Name, ia.InputTokens, m.Classes[ka].Input.Mean())
		}
	}
	if differ == 0 {
		t.Error("seeds 7 and 8 drew the same classes for 200 requests")
	}
}

func TestMixErrorsNameTheLine(t *testing.T) {
	for _, tc := range []struct{ name, file, want string }{
		{"unknown key", "classes:\n  - name: a\n    share: 1\n    input_tokens: \"8\"\n    output_tokens: \"8\"\n    colour: red\n", "mix.yaml:6:"},
		{"shares", "classes:\n  - name: a\n    share: 0.5\n    input_tokens: \"8\"\n    output_tokens: \"8\"\n  - name: b\n    share: 0.3\n    input_tokens: \"8\"\n    output_tokens: \"8\"\n", "mix.yaml:2: the classes' shares sum to 0.8; want 1"},
		{"unknown class in slos", "classes:\n  - name: a\n    share: 1\n    input_tokens: \"8\"\n    output_tokens: \"8\"\nslos:\n  b: [\"p95(ttft)<1s\"]\n", "mix.yaml:7: slos names class \"b\""},
		{"bad length", "classes:\n  - name: a\n    share: 1\n    input_tokens: \"many\"\n    output_tokens: \"8\"\n", "mix.yaml:2: class a: input_tokens"},
		{"duplicate", "classes:\n  - name: a\n    share: 0.5\n    input_tokens: \"8\"\n    output_tokens: \"8\"\n  - name: a\n    share: 0.5\n    input_tokens: \"8\"\n    output_tokens: \"8\"\n", "mix.yaml:6: class a is also defined at line 2"},
		{"empty", "", "mix.yaml: empty"},
	} {
		_, err := ParseMix("mix.yaml", []byte(tc.file))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
}
