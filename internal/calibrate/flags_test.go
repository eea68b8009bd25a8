package calibrate

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/badinput"
)

func okConfig() Config {
	return Config{API: "chat", StepModel: StepModelRoofline, PrefillRequests: 5, DecodeDuration: time.Second, DecodeOutput: 256,
		HoldOut: HoldOutConfig{Concurrency: 16, Input: 512, Output: 128, Duration: time.Second}}
}

func TestCheckNamesTheFlag(t *testing.T) {
	if c := okConfig(); c.Check(0) != nil {
		t.Fatalf("defaults refused: %v", c.Check(0))
	}
	for want, change := range map[string]func(*Config){
		"--prefill-requests 0":                 func(c *Config) { c.PrefillRequests = 0 },
		"--decode-duration 0s":                 func(c *Config) { c.DecodeDuration = 0 },
		"--decode-output-tokens 4":             func(c *Config) { c.DecodeOutput = 4 },
		"--holdout-output-tokens 1":            func(c *Config) { c.HoldOut.Output = 1 },
		"--holdout-duration -1s":               func(c *Config) { c.HoldOut.Duration = -time.Second },
		`--api "embeddings"`:                   func(c *Config) { c.API = "embeddings" },
		`--step-model "cubic"`:                 func(c *Config) { c.StepModel = "cubic" },
		"--step-model linear needs --parallel": func(c *Config) { c.StepModel = StepModelLinear },
	} {
		c := okConfig()
		change(&c)
		if err := c.Check(0); !badinput.Is(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", want, err)
		}
	}
	c := okConfig()
	if err := c.Check(4); err == nil || !strings.Contains(err.Error(), "--parallel is for --step-model linear") {
		t.Errorf("--parallel on a roofline: %v", err)
	}
}

func TestLinearDefaults(t *testing.T) {
	c := okConfig()
	c.PrefillLengths = []int{128}
	c.LinearDefaults(map[string]bool{}, 4)
	if c.PrefillLengths != nil || c.HoldOut.Input != 64 || c.HoldOut.Output != 64 {
		t.Errorf("unset settings kept the roofline's: %+v", c)
	}
	if c.HoldOut.Concurrency != 3 && c.HoldOut.Concurrency != 5 {
		t.Errorf("held-out concurrency %d, want one off the 4 slots", c.HoldOut.Concurrency)
	}
	for _, d := range DefaultLinearDecodePoints(4) {
		if d.Batch == c.HoldOut.Concurrency {
			t.Errorf("held-out concurrency %d is a measured decode batch", d.Batch)
		}
	}
	given := okConfig()
	given.PrefillLengths = []int{128}
	given.LinearDefaults(map[string]bool{"prefill-lengths": true, "holdout-concurrency": true, "holdout-input-tokens": true, "holdout-output-tokens": true}, 4)
	if len(given.PrefillLengths) != 1 || given.HoldOut != okConfig().HoldOut {
		t.Errorf("given settings were replaced: %+v", given)
	}
}

func TestInterruptedKeepsPoints(t *testing.T) {
	res := &Result{Points: []Point{{Kind: "prefill", Batch: 1, InputTokens: 128, MeasuredMS: 12.5, Samples: 5}}}
	var b strings.Builder
	err := Interrupted(&b, okConfig().Engine, "t", "", res, errors.New("signal"))
	if err == nil || !strings.Contains(err.Error(), "1 points kept above, too few for a profile") || !strings.Contains(b.String(), "prefill  batch    1     128 tokens     12.500 ms  (5 samples)") {
		t.Errorf("%v\n%s", err, b.String())
	}
	if err := (Profile{}).Save(filepath.Join(t.TempDir(), "no", "p.yaml")); err == nil || !strings.HasPrefix(err.Error(), "--out: ") {
		t.Errorf("Save into a missing folder: %v", err)
	}
	path := filepath.Join(t.TempDir(), "p.yaml")
	if err := (Profile{}).Save(path); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), "knee calibrate profile") {
		t.Errorf("saved %q", b)
	}
}
