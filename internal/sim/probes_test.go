package sim

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
)

// probeRun runs users closed-loop users of in/out tokens for 20 s of
// virtual time with probes of 16 in, 1 out at 5/s beside them, and returns
// the probes' TTFTs (ms, sorted) and the main load's records.
func probeRun(t *testing.T, users, in, out int) (probeTTFT []float64, main []record.Request, res Result) {
	t.Helper()
	ecfg := engineConfig(t, "h100", "llama-3.1-8b", 1)
	ecfg.Seed = 3
	recs, res, err := Collect(context.Background(), Config{Engine: ecfg, Gen: fixed{in, out}, Concurrency: users,
		Duration: 20 * time.Second, Probes: Probes{RateRPS: 5, Gen: fixed{16, 1}}})
	if err != nil {
		t.Fatal(err)
	}
	probes := 0
	for _, r := range recs {
		if r.Class != record.ProbeClass {
			if r.ID >= ProbeIDBase {
				t.Fatalf("main request with probe ID %d", r.ID)
			}
			main = append(main, r)
			continue
		}
		probes++
		if r.ID < ProbeIDBase || r.InputTokens != 16 || r.OutputTokens != 1 {
			t.Fatalf("probe %d: %d in, %d out; want IDs from ProbeIDBase, 16 in, 1 out", r.ID, r.InputTokens, r.OutputTokens)
		}
		if want := time.Duration(float64(r.ID-ProbeIDBase) / 5 * float64(time.Second)); r.Scheduled != want || r.Sent != want {
			t.Fatalf("probe %d scheduled %v, sent %v; want both at %v (a constant 5/s from the start)", r.ID-ProbeIDBase, r.Scheduled, r.Sent, want)
		}
		if v, ok := r.TTFT(); ok {
			probeTTFT = append(probeTTFT, float64(v)/1e6)
		}
	}
	if probes != 100 || res.Probes != 100 || len(probeTTFT) != 100 {
		t.Fatalf("%d probe records, %d sent, %d answered in 20 s at 5/s; want 100", probes, res.Probes, len(probeTTFT))
	}
	if res.Issued != int64(len(main)) || res.Completed != res.Issued {
		t.Fatalf("issued %d, completed %d, %d main records: probes must not count as the main load's", res.Issued, res.Completed, len(main))
	}
	sort.Float64s(probeTTFT)
	return probeTTFT, main, res
}

// With a heavy background load the probes' TTFT rises: a short request
// waits behind long prompts and a full batch.
func TestProbesDelayedByBackgroundLoad(t *testing.T) {
	light, _, _ := probeRun(t, 1, 128, 32)
	heavy, _, _ := probeRun(t, 96, 4096, 256)
	lp50, hp50 := light[len(light)/2], heavy[len(heavy)/2]
	t.Logf("probe TTFT p50: %.1f ms beside 1 light user, %.1f ms beside 96 heavy users", lp50, hp50)
	if !(hp50 > 3*lp50) {
		t.Errorf("probe TTFT p50 %.1f ms under heavy load, %.1f ms under light; want the heavy load to delay probes (> 3×)", hp50, lp50)
	}
}

// Probes take no place under MaxConcurrency: held arrivals wait, probes
// are sent on time, and Requests bounds the main load alone.
func TestProbesBesideMaxConcurrency(t *testing.T) {
	ecfg := engineConfig(t, "h100", "llama-3.1-8b", 1)
	recs, res, err := Collect(context.Background(), Config{Engine: ecfg, Gen: fixed{2048, 128}, Arrivals: poisson(t, 50, 1),
		MaxConcurrency: 2, Requests: 40, Probes: Probes{RateRPS: 10, Gen: fixed{16, 1}}})
	if err != nil {
		t.Fatal(err)
	}
	lagged, probes := 0, 0
	for _, r := range recs {
		switch {
		case r.Class == record.ProbeClass:
			probes++
			if r.Sent != r.Scheduled {
				t.Errorf("probe %d sent %v after its time: probes do not wait for a concurrency slot", r.ID-ProbeIDBase, r.Sent-r.Scheduled)
			}
		case r.Sent > r.Scheduled:
			lagged++
		}
	}
	if res.Issued != 40 || len(recs)-probes != 40 || probes == 0 || lagged == 0 {
		t.Errorf("%d issued, %d main records, %d probes, %d held; want 40 main requests, some held, and probes", res.Issued, len(recs)-probes, probes, lagged)
	}
	if peak := peakInFlight(recs, ""); peak > 2 {
		t.Errorf("%d main requests in flight at once; want at most MaxConcurrency 2", peak)
	}
}
