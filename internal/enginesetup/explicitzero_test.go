package enginesetup

import (
	"slices"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/simengine"
)

// An explicit 0 on a duration cost flag is a value: it overrides a server
// profile that sets the field (or the default's 8 ms serial admission),
// and shows in the run's config; left out, the profile's value stands.
func TestExplicitZeroDurationOverridesTheProfile(t *testing.T) {
	// Each flag's field is above 0 in the profile named beside it.
	profiles := map[string]string{"front-end-serial": "kvcached-h100", "front-end-load": "wmx-l4", "step-per-seq": "kvcached-h100"}
	for i, f := range CostDurations {
		for _, profile := range []string{"", profiles[f.Name]} {
			if profile == "" && f.Name != "front-end-serial" {
				continue // the default has none of the others
			}
			c := defaults()
			c.ServerProfileName = profile
			kept, err := resolve(t, &c)
			if err != nil {
				t.Fatal(err)
			}
			cost := simengine.DefaultCost
			if kept.Cost != nil {
				cost = *kept.Cost
			}
			if *f.field(&cost) == 0 {
				t.Fatalf("profile %q: --%s's field is already 0; the test needs one that sets it", profile, f.Name)
			}
			c = defaults()
			c.ServerProfileName = profile
			c.CostDurationsSet[i] = true // --<flag> 0
			got, err := resolve(t, &c)
			if err != nil {
				t.Fatal(err)
			}
			if got.Cost == nil || *f.field(got.Cost) != 0 {
				t.Errorf("profile %q, --%s 0: field %v, want 0", profile, f.Name, got.Cost)
				continue
			}
			want := cost
			*f.field(&want) = 0
			if *got.Cost != want {
				t.Errorf("profile %q, --%s 0 changed more than its field:\n got %+v\nwant %+v", profile, f.Name, *got.Cost, want)
			}
			if kv := c.ConfigKV(got); !slices.Contains(kv, [2]string{f.Key, "0s"}) {
				t.Errorf("profile %q, --%s 0: config %v lacks %s 0s", profile, f.Name, kv, f.Key)
			}
		}
	}
}

// An efficiency of 0 would price work at infinite time: given explicitly
// it is refused, naming the flag, rather than read as "the default"; the
// split's 0 (one turn) is a value.
func TestExplicitZeroShare(t *testing.T) {
	for i, f := range CostShares {
		c := defaults()
		c.ServerProfileName = "gpustack-a100" // sets all three shares
		c.CostSharesSet[i] = true
		got, err := resolve(t, &c)
		if f.zero {
			if err != nil || got.Cost == nil || *f.field(got.Cost) != 0 {
				t.Errorf("--%s 0 over gpustack-a100: cost %+v, %v; want the field 0", f.Name, got.Cost, err)
			}
			continue
		}
		if err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), "--"+f.Name+" 0: want a share above 0") {
			t.Errorf("--%s 0: want bad input naming it, got %v", f.Name, err)
		}
	}
}
