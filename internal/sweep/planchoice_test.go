package sweep

import (
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/badinput"
)

func TestPlanChoice(t *testing.T) {
	t.Parallel()
	p, most, err := (&PlanChoice{Rate: "8, 2,4", Metric: MetricThroughputRPS}).Plan(100, 50)
	if err != nil || p.Kind != Rate || len(p.Loads) != 3 || p.Loads[0] != 2 || p.Loads[2] != 8 || most != 8 || p.Metric != MetricThroughputRPS {
		t.Errorf("--rate 8,2,4: %+v, most %v, %v; want rate steps 2, 4, 8", p, most, err)
	}
	p, _, err = (&PlanChoice{Concurrency: "auto", Min: 1, Factor: 2}).Plan(100_000, 50)
	if err != nil || !p.Auto() || p.Kind != Concurrency || p.Max != 1024 || p.Refine != -1 {
		t.Errorf("--concurrency auto: %+v %v; want an automatic sweep up to 1024 in flight, no bisection", p, err)
	}
	for _, c := range []struct {
		c    PlanChoice
		want string
	}{
		{PlanChoice{Concurrency: "1", Rate: "1"}, "give --concurrency or --rate, not both"},
		{PlanChoice{Concurrency: "1,4", Auto: true}, "--auto with a list of loads"},
		{PlanChoice{Concurrency: "1,x"}, `--concurrency: item 2 "x" is not a positive number`},
		{PlanChoice{Concurrency: "1.5"}, "want whole numbers of requests in flight"},
		{PlanChoice{Rate: "2,2"}, "--rate: 2 is listed twice"},
		{PlanChoice{Rate: "60"}, "load 60: at most 50 requests per second"},
		{PlanChoice{Rate: "1", Metric: "ttft"}, `--knee-metric "ttft": want output_tps or throughput_rps`},
	} {
		if _, _, err := c.c.Plan(100, 50); !badinput.Is(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.c, err, c.want)
		}
	}
}
