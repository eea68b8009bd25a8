package workload

import (
	"strings"
	"testing"
)

// BenchmarkEncode1000 encodes ~1,000 tokens of mixed English text with each
// built-in encoding (this package's scanner + BPE), next to tiktoken-go.
func BenchmarkEncode1000(b *testing.B) {
	text := strings.Repeat(tokenizerSamples[2]+" "+tokenizerSamples[3]+"\n", 40)
	for _, name := range builtinEncodings {
		tk, err := LoadTokenizer(name)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			n := tk.Count(text)
			for b.Loop() {
				tk.Encode(text)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/token")
		})
	}
	b.Run("tiktoken-go/cl100k_base", func(b *testing.B) {
		ref := reference(b, "cl100k_base")
		n := len(ref.EncodeOrdinary(text))
		for b.Loop() {
			ref.EncodeOrdinary(text)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/token")
	})
}

// BenchmarkPrompt1024 builds (and verifies) one 1,024-token prompt.
func BenchmarkPrompt1024(b *testing.B) {
	for _, name := range builtinEncodings {
		b.Run(name, func(b *testing.B) {
			g, err := NewGenerator(Spec{Input: mustDist(b, "1024"), Output: mustDist(b, "128"), Seed: 1, Tokenizer: mustTokenizer(b, name)})
			if err != nil {
				b.Fatal(err)
			}
			g.Item(0) // warm the piece cache as a running load test would
			i := int64(0)
			b.ReportAllocs()
			for b.Loop() {
				i++
				if it := g.Item(i); it.InputTokens != 1024 {
					b.Fatalf("got %d tokens", it.InputTokens)
				}
			}
		})
	}
}

// BenchmarkLengths is the simulator's per-request cost.
func BenchmarkLengths(b *testing.B) {
	for _, c := range []struct{ in, out string }{{"1024", "128"}, {"lognormal:1000,400", "normal:200,50"}} {
		b.Run(c.in+"_"+c.out, func(b *testing.B) {
			g, err := NewGenerator(Spec{Input: mustDist(b, c.in), Output: mustDist(b, c.out), Seed: 1})
			if err != nil {
				b.Fatal(err)
			}
			i := int64(0)
			b.ReportAllocs()
			for b.Loop() {
				i++
				g.Lengths(i)
			}
		})
	}
}
