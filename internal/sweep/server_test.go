package sweep

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// queueRunner is capRunner whose server also reports its own view: beyond
// capacity the waiting queue grows without bound while running requests
// stay pinned at the batch limit.
type queueRunner struct{ capRunner }

func (q *queueRunner) Run(ctx context.Context, l Load) (Step, error) {
	s, _ := q.capRunner.Run(ctx, l)
	f := func(v float64) *float64 { return &v }
	over := l.Value > q.capacity
	srv := &ServerStep{Server: "vllm", RunningMax: f(math.Min(l.Value, q.capacity)), QueueMeanMS: f(1), PrefillMeanMS: f(40),
		WaitingMax: f(math.Max(l.Value-q.capacity, 0))}
	if over {
		srv.QueueMeanMS = f(40 * (l.Value - q.capacity))
		srv.WaitingGrowing = true
	}
	s.Server = srv
	return s, nil
}

func TestAutoStopsWhenServerQueueGrows(t *testing.T) {
	// No SLO: without the server's view the sweep would run on to the
	// plateau; the growing waiting queue stops it at the first load beyond
	// capacity.
	r := &queueRunner{capRunner{capacity: 20}}
	res, err := Run(context.Background(), r, Plan{Kind: Concurrency, Min: 1, Max: 1024, Refine: -1}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if last := r.seen[len(r.seen)-1]; last != 32 {
		t.Fatalf("loads %v: want the sweep to stop at 32, the first step beyond capacity 20", r.seen)
	}
	found := false
	for _, n := range res.Notes {
		found = found || strings.Contains(n, "stopped growing at 32 in flight: the server's waiting queue grew without bound")
	}
	if !found {
		t.Errorf("notes %q lack the reason", res.Notes)
	}
	if !strings.Contains(res.Knee.Reason, "the server's metrics from 16 in flight to 32 in flight: server queue mean rose ×480 (1 → 480 ms), prefill mean flat (40 → 40 ms), running requests max 16 → 20, waiting up to 12 and still growing") {
		t.Errorf("knee reason lacks the server evidence: %s", res.Knee.Reason)
	}
	b, err := json.Marshal(res.Steps[len(res.Steps)-1])
	if err != nil {
		t.Fatal(err)
	}
	var back Step
	if err := json.Unmarshal(b, &back); err != nil || back.Server == nil || !back.Server.WaitingGrowing || *back.Server.QueueMeanMS != 480 {
		t.Errorf("server view lost in the step's JSON: %v %s", err, b)
	}
}

func TestKneeReasonWithoutServer(t *testing.T) {
	r := &capRunner{capacity: 20}
	res, err := Run(context.Background(), r, Plan{Kind: Concurrency, Min: 1, Max: 256, Refine: -1}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Knee.Reason, "server's metrics") {
		t.Errorf("server evidence without a server view: %s", res.Knee.Reason)
	}
}
