package plan

import (
	"bytes"
	"strings"
	"testing"
)

// A class name from a --mix file reaches the answer's text with its control
// characters escaped: a terminal never sees the file's escape sequences.
func TestPrintEscapesControlCharacters(t *testing.T) {
	evil := "chat\x1b]0;PWNED\x07"
	h := Header{Model: "Llama-3.1-8B", RateRPS: 5, Arrival: "poisson", Input: "by class", Output: "by class", Seed: 1,
		ClassSLOs: []string{evil + ": p95(ttft)<150ms"}, Mix: "traffic mix m.yaml: " + evil + " 50%"}
	var b bytes.Buffer
	Print(&b, h, Space{}, 100, Answer{})
	out := b.String()
	if strings.ContainsAny(out, "\x1b\x07") || !strings.Contains(out, `chat\x1b]0;PWNED\x07`) {
		t.Fatalf("control characters reach the text:\n%q", out)
	}
}
