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
