package cluster

import (
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/badinput"
)

// The printed manifest carries a seed every shard shares, the Secret's
// key, and pods from the sizing advice when none is given.
func TestWriteChoosesSeedSecretAndPods(t *testing.T) {
	s := JobSpec{Name: "nightly", Image: "knee:v1", CPU: "500m", Memory: "1Gi",
		Args: []string{"bench", "--rate", "100", "--output-tokens", "normal:512,128"}}
	var b strings.Builder
	if err := Write(&b, s, "db-secret", 2, 0); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{`run named "nightly"`, "# sizing: ", "--seed", "name: db-secret", "key: url", "- \"100\""} {
		if !strings.Contains(out, want) {
			t.Errorf("manifest lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "shard(s)") && strings.Contains(out, "job: 0 shard") {
		t.Errorf("zero pods:\n%s", out)
	}
	if err := Write(&b, s, "x", -1, 0); !badinput.Is(err) {
		t.Errorf("--retries -1: %v", err)
	}
}

func TestTokensPerSecondOf(t *testing.T) {
	for args, want := range map[string]float64{
		"--rate 10 --output-tokens 100":            1000,
		"-rate=2 --output-tokens=256:1024":         1280,
		"--rate 4 --output-tokens normal:512,128":  2048,
		"--output-tokens 100":                      0,
		"--rate 4 --output-tokens lognormal:300,1": 1200,
	} {
		if got := tokensPerSecondOf(strings.Fields(args)); got != want {
			t.Errorf("%s: %v, want %v", args, got, want)
		}
	}
}
