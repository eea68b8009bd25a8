package cli

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type simClientSummary struct {
	TPOT struct{ P50 float64 } `json:"tpot_ms"`
	ITL  struct{ P50 float64 } `json:"itl_ms"`
	TTFT struct{ P50 float64 } `json:"ttft_ms"`
}

// knee sim --client-chunk-cost: 16 streams of an 8B model on one H100
// (~6.6 ms decode steps) and a client that needs 2 ms a chunk cannot keep
// up; each stream sees a token per round of the 16 streams' chunks, so
// TPOT and ITL are 16 × 2 ms, where knee's own client sees the step.
// The settings go through --save-scenario and replay the same.
func TestSimClientChunkCost(t *testing.T) {
	dir := t.TempDir()
	scen := filepath.Join(dir, "client.yaml")
	args := []string{"sim", "--concurrency", "16", "--input-tokens", "45", "--output-tokens", "64", "--requests", "160",
		"--quiet", "--json", "--no-store"}
	code, ideal, errs := kneeCmd(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	code, slow, errs := kneeCmd(t, append(args, "--client-chunk-cost", "2ms", "--client-start", "1s", "--save-scenario", scen)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var si, ss simClientSummary
	if err := json.Unmarshal([]byte(ideal), &si); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(slow), &ss); err != nil {
		t.Fatal(err)
	}
	if si.TPOT.P50 > 10 {
		t.Errorf("knee's own client: TPOT p50 %.2f ms, want the decode step (under 10 ms)", si.TPOT.P50)
	}
	if math.Abs(ss.TPOT.P50-32) > 1 || math.Abs(ss.ITL.P50-32) > 1 {
		t.Errorf("2 ms a chunk, 16 streams: TPOT p50 %.2f, ITL p50 %.2f ms; want 16 × 2 = 32 ms", ss.TPOT.P50, ss.ITL.P50)
	}
	b, err := os.ReadFile(scen)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"client-chunk-cost: 2ms", "client-start: 1s"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("saved scenario lacks %q:\n%s", want, b)
		}
	}
	code, replay, errs := kneeCmd(t, "sim", "--scenario-file", scen, "--quiet", "--json", "--no-store")
	if code != 0 {
		t.Fatalf("replay: exit %d: %s", code, errs)
	}
	var sr simClientSummary
	json.Unmarshal([]byte(replay), &sr)
	if sr != ss {
		t.Errorf("replayed scenario: %+v, want %+v", sr, ss)
	}
}

func TestSimClientFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--client-chunk-cost", "-1ms"}, "--client-chunk-cost -1ms: want a duration"},
		{[]string{"--client-gap", "soon"}, "--client-gap"},
		{[]string{"--client-start", "-2s"}, "--client-start -2s"},
		{[]string{"--rate", "5", "--client-gap", "80ms"}, "--client-gap applies to closed loops"},
		{[]string{"--rate", "5", "--client-start", "1s"}, "--client-start applies to closed loops"},
		{[]string{"--concurrency", "4", "--duration", "10s", "--client-start", "10s"}, "--client-start 10s: the client would start after the run's --duration 10s ends"},
	} {
		args := append([]string{"sim", "--requests", "10", "--quiet", "--no-store"}, c.args...)
		code, _, errs := kneeCmd(t, args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming %q", c.args, code, errs, c.want)
		}
	}
}

// knee sim sweep takes the same client flags: at 16 streams and 2 ms a
// chunk the step's ITL is the client's round, 16 × 2 ms.
func TestSimSweepClient(t *testing.T) {
	code, out, errs := kneeCmd(t, "sim", "sweep", "--concurrency", "1,16", "--input-tokens", "45", "--output-tokens", "64",
		"--requests", "160", "--client-chunk-cost", "2ms", "--no-store")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	row := ""
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "16 ") {
			row += l + " " // a wide steps table prints in parts, each with the load
		}
	}
	if !strings.Contains(out, "client modelled (client_chunk_cost 2ms)") || !strings.Contains(row, " 32.0 ms ") {
		t.Errorf("sweep with a 2 ms client: want its note and a 32.0 ms ITL p95 at 16 in flight (row %q):\n%s", row, out)
	}
	if code, _, errs := kneeCmd(t, "sim", "sweep", "--rate", "1,2", "--requests", "20", "--client-start", "1s", "--no-store"); code != 2 ||
		!strings.Contains(errs, "--client-start applies to closed loops") {
		t.Errorf("rate sweep with --client-start: exit %d, %q; want exit 2", code, errs)
	}
}
