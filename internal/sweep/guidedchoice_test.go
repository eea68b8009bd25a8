package sweep

import (
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/badinput"
)

func TestGuidedChoiceCheck(t *testing.T) {
	t.Parallel()
	auto := Plan{Kind: Rate, Min: 1, Max: 64, Factor: 2}
	none := func(string) bool { return false }
	g := GuidedChoice{On: true, Resolution: "5%", Budget: "10m"}
	if err := g.Check(none, auto); err != nil {
		t.Fatal(err)
	}
	if p := g.Plan(auto); p.Resolution != 0.05 || p.BudgetTime != 10*time.Minute || p.Min != 1 || p.Max != 64 {
		t.Errorf("plan %+v", p)
	}
	if kv := g.ConfigKV(); len(kv) != 3 || kv[1] != [2]string{"guided_resolution", "0.05"} {
		t.Errorf("config %q", kv)
	}
	for _, c := range []struct {
		g       GuidedChoice
		changed string
		plan    Plan
		want    string
	}{
		{GuidedChoice{}, "budget", auto, "--budget applies to a guided sweep: add --guided"},
		{GuidedChoice{On: true, Resolution: "10%"}, "", Plan{Kind: Rate, Loads: []float64{1, 2}}, "--guided chooses the loads itself"},
		{GuidedChoice{On: true, Resolution: "10%"}, "factor", auto, "--factor steers an automatic sweep"},
		{GuidedChoice{On: true, Resolution: "0.5%"}, "", auto, `--resolution "0.5%": want a step from 1% to 100%`},
		{GuidedChoice{On: true, Resolution: "10%", Budget: "-3"}, "", auto, `--budget "-3": want a positive number of requests`},
		{GuidedChoice{On: true, Resolution: "10%", Budget: "lots"}, "", auto, `--budget "lots": want a number of requests`},
	} {
		changed := func(f string) bool { return f == c.changed }
		if err := c.g.Check(changed, c.plan); !badinput.Is(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v (given --%s): %v, want %q", c.g, c.changed, err, c.want)
		}
	}
}
