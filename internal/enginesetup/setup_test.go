package enginesetup

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/simengine"
)

// defaults is what the flags hold when none is given.
func defaults() Choice {
	return Choice{GPU: "h100", Model: "llama-3.1-8b", TP: 1, MemUtil: 0.9, StepTimeScale: 1, FrontEndMS: -1,
		Source: ModelSource{KVCacheDtype: "auto"}, FileFlags: true}
}

func resolve(t *testing.T, c *Choice) (simengine.Config, error) {
	t.Helper()
	cat, err := c.Catalog()
	if err != nil {
		return simengine.Config{}, err
	}
	return c.Config(cat)
}

func TestDefaultsAreTheEnginesDefaults(t *testing.T) {
	c := defaults()
	got, err := resolve(t, &c)
	if err != nil {
		t.Fatal(err)
	}
	if got.Cost != nil || got.TP != 1 || !got.ChunkedPrefill || got.NoPrefixCaching || got.StepTimeScale != 1 {
		t.Errorf("defaults resolved to cost %v, tp %d, chunked %v, no prefix caching %v, scale %v",
			got.Cost, got.TP, got.ChunkedPrefill, got.NoPrefixCaching, got.StepTimeScale)
	}
	kv := c.ConfigKV(got)
	if kv[0] != [2]string{"gpu", got.GPU.Name} || slices.ContainsFunc(kv, func(p [2]string) bool { return p[0] == "front_end_ms" || p[0] == "server_profile" }) {
		t.Errorf("config of the defaults: %v", kv)
	}
}

// Each cost flag overrides its one field of the default cost and shows in
// the config under its key.
func TestCostOverridesOneFieldEach(t *testing.T) {
	c := defaults()
	c.CostDurations[0] = 9 * time.Millisecond // front-end-serial
	c.CostShares[1] = 0.5                     // compute-efficiency
	c.FrontEndMS, c.FrontEndSet = 0, true
	got, err := resolve(t, &c)
	if err != nil {
		t.Fatal(err)
	}
	want := simengine.DefaultCost
	want.FrontEndSerialNS, want.ComputeEfficiency, want.FrontEndNS, want.FrontEndPerTokenNS = 9e6, 0.5, 0, 0
	if got.Cost == nil || *got.Cost != want {
		t.Fatalf("cost %+v, want %+v", got.Cost, want)
	}
	kv := c.ConfigKV(got)
	for _, p := range [][2]string{{"front_end_serial", "9ms"}, {"compute_efficiency", "0.5"}, {"front_end_ms", "0"}} {
		if !slices.Contains(kv, p) {
			t.Errorf("config %v lacks %v", kv, p)
		}
	}
}

func TestOutOfRangeIsBadInputNamingTheFlag(t *testing.T) {
	for _, tc := range []struct {
		set  func(*Choice)
		want string
	}{
		{func(c *Choice) { c.TP = 0 }, "--tp 0: want 1 or more GPUs"},
		{func(c *Choice) { c.MemUtil = 1.5 }, "--gpu-memory-utilization 1.5: want a fraction in (0, 1]"},
		{func(c *Choice) { c.FrontEndMS, c.FrontEndSet = -2, true }, "--front-end-ms -2: want milliseconds >= 0"},
		{func(c *Choice) { c.CostShares[2] = 1.5 }, "--all-reduce-efficiency 1.5: want a share from 0 to 1, such as 0.75"},
		{func(c *Choice) { c.CostDurations[1] = -time.Millisecond }, "--front-end-load -1ms: want a duration of 0 or more per 1,000 tok/s streamed, such as 20ms"},
		{func(c *Choice) { c.GPU = "nope" }, "; or describe one in a YAML file with --gpu-file or --preset-file"},
		{func(c *Choice) { c.Source.KVCacheDtype = "int3" }, "--kv-cache-dtype: "},
		{func(c *Choice) { c.ServerProfileName, c.Profile = "vllm", "x.yaml" }, "--server-profile and --profile: give one"},
		{func(c *Choice) { c.ServerProfileName = "no-such-profile" }, "--server-profile: "},
	} {
		c := defaults()
		tc.set(&c)
		_, err := resolve(t, &c)
		if err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want bad input %q, got %v", tc.want, err)
		}
	}
}

// A host's server profile is a fitted host and shows in the config; the
// generic engine profiles are not.
func TestServerProfile(t *testing.T) {
	c := defaults()
	if c.FittedHost() {
		t.Error("no profile: fitted host")
	}
	c.ServerProfileName = "vllm"
	got, err := resolve(t, &c)
	if err != nil {
		t.Fatal(err)
	}
	if c.FittedHost() || !slices.Contains(c.ConfigKV(got), [2]string{"server_profile", "vllm"}) {
		t.Errorf("vllm: fitted %v, config %v", c.FittedHost(), c.ConfigKV(got))
	}
	c = defaults()
	c.Profile = "calibrated.yaml"
	if !c.FittedHost() {
		t.Error("a calibrated --profile is not a fitted host")
	}
}
