package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/record"
)

// knee sim --replicas runs a fleet: records name their replica, the report
// has a line per replica, and bad fleet flags are usage errors.
func TestSimFleet(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := kneeCmd(t, "sim", "--detail", "--replicas", "3", "--router", "least-outstanding", "--rate", "30", "--requests", "300",
		"--input-tokens", "256:1024", "--output-tokens", "64", "--seed", "3", "--out", dir, "--no-store")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"simulated fleet: 3× (Llama-3.1-8B on 1× H100-SXM) behind a least-outstanding router", "replica r0: ", "replica r2: ", "router                  least-outstanding"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	recs := readRecords(t, filepath.Join(dir, "records.jsonl"))
	per := map[string]int{}
	for _, r := range recs {
		per[r.Replica]++
	}
	if len(recs) != 300 || len(per) != 3 || per["r0"] == 0 || per["r1"] == 0 || per["r2"] == 0 {
		t.Fatalf("%d records over replicas %v; want 300 over r0, r1, r2", len(recs), per)
	}
	code, out, errs = kneeCmd(t, "sim", "--detail", "--prefill-replicas", "1", "--decode-replicas", "2", "--rate", "10", "--requests", "200",
		"--input-tokens", "2000", "--output-tokens", "32", "--seed", "3", "--no-store")
	if code != 0 {
		t.Fatalf("disaggregated: exit %d: %s", code, errs)
	}
	for _, want := range []string{"simulated disaggregated fleet: 1 prefill + 2 decode replicas", "replica p0: 200 routed, 200 completed", "replica d1: ", "kv_link_gbps"} {
		if !strings.Contains(out, want) {
			t.Errorf("disaggregated report lacks %q", want)
		}
	}
	fleetFile := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(fleetFile, []byte("replicas:\n  - {gpu: h100, count: 2}\n  - {gpu: a100-80gb, max_num_seqs: 128}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = kneeCmd(t, "sim", "--detail", "--fleet-file", fleetFile, "--rate", "10", "--requests", "90", "--seed", "3", "--no-store")
	if code != 0 || !strings.Contains(out, "simulated mixed fleet of Llama-3.1-8B: 2× H100-SXM TP1 + 1× A100-80GB TP1") ||
		!strings.Contains(out, "replica r2 (A100-80GB TP1, max_num_seqs 128") {
		t.Errorf("--fleet-file: exit %d: %s\n%s", code, errs, out)
	}
	for _, args := range [][]string{
		{"--fleet-file", fleetFile, "--replicas", "2"}, {"--fleet-file", filepath.Join(t.TempDir(), "none.yaml")},
		{"--prefill-replicas", "1"}, {"--prefill-replicas", "1", "--decode-replicas", "1", "--replicas", "3"},
		{"--prefill-replicas", "1", "--decode-replicas", "1", "--kv-link-gbps", "0"},
		{"--replicas", "0"}, {"--replicas", "2", "--router", "random"}, {"--gateway-queue-limit", "-1"},
	} {
		code, _, errs := kneeCmd(t, append([]string{"sim", "--requests", "10", "--no-store"}, args...)...)
		if code != 2 || !strings.Contains(errs, "--") {
			t.Errorf("%v: exit %d (%s), want 2 naming the flag", args, code, errs)
		}
	}
}

// knee sim sweep steps a fleet: four replicas serve about four times the
// rate one replica does at the same p95 TTFT, and the note names the fleet.
func TestSimSweepFleet(t *testing.T) {
	code, out, errs := kneeCmd(t, "sim", "sweep", "--rate", "40,160", "--replicas", "4", "--router", "least-outstanding",
		"--duration", "20s", "--seed", "3", "--slo", "p95(ttft)<2s", "--quiet", "--no-store", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r struct {
		Steps []struct {
			Load    float64 `json:"load"`
			Summary struct {
				RPS float64 `json:"request_throughput_rps"`
			} `json:"summary"`
		} `json:"steps"`
		Notes []string `json:"notes"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Steps) != 2 || r.Steps[1].Summary.RPS < 140 || !strings.Contains(strings.Join(r.Notes, " "), "4 replicas") {
		t.Errorf("fleet sweep: %+v", r)
	}
	if code, _, errs := kneeCmd(t, "sim", "sweep", "--rate", "1", "--router", "random"); code != ExitUsage || !strings.Contains(errs, "--router") {
		t.Errorf("--router random: exit %d: %s", code, errs)
	}
}

// knee sim --replicas runs what one engine runs: sessions, a client-side
// max concurrency, the client and server-loop models, and a traffic mix on
// LoRA adapters, each record naming its replica.
func TestSimFleetRunsWhatOneEngineRuns(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		code int
		// check looks at the records and the report.
		check func(t *testing.T, recs []record.Request, out string)
	}{
		{"sessions", []string{"--replicas", "2", "--router", "session-affinity", "--sessions", "6", "--turns", "3", "--input-tokens", "200", "--output-tokens", "20"}, 0,
			func(t *testing.T, recs []record.Request, out string) {
				onto := map[string]string{}
				for _, r := range recs {
					if r.Session == "" || r.Turn < 1 || r.Turn > 3 {
						t.Fatalf("record %d: session %q turn %d", r.ID, r.Session, r.Turn)
					}
					if prev, ok := onto[r.Session]; ok && prev != r.Replica {
						t.Errorf("session %s on %s and %s under session affinity", r.Session, prev, r.Replica)
					}
					onto[r.Session] = r.Replica
				}
				if len(recs) != 18 {
					t.Errorf("%d records, want 6 sessions × 3 turns", len(recs))
				}
			}},
		{"max concurrency", []string{"--replicas", "3", "--rate", "80", "--requests", "200", "--max-concurrency", "4"}, 0,
			func(t *testing.T, recs []record.Request, out string) {
				late := 0
				for _, r := range recs {
					if r.InFlightAtSend > 4 {
						t.Fatalf("record %d sent with %d in flight, over --max-concurrency 4", r.ID, r.InFlightAtSend)
					}
					if r.Lag() > 0 {
						late++
					}
				}
				if len(recs) != 200 || late == 0 {
					t.Errorf("%d records, %d sent late; want 200, some held in the client", len(recs), late)
				}
			}},
		{"client chunk cost", []string{"--replicas", "2", "--concurrency", "4", "--requests", "40", "--client-chunk-cost", "1ms"}, 0,
			func(t *testing.T, recs []record.Request, out string) {
				if !strings.Contains(out, "client_chunk_cost") {
					t.Error("the report does not name the client model")
				}
			}},
		{"server loop", []string{"--replicas", "2", "--rate", "20", "--requests", "40", "--server-chunk-cost", "1ms"}, 0, nil},
		{"mix on adapters", []string{"--replicas", "2", "--mix", writeMix(t, threeClassMix), "--rate", "20", "--requests", "90", "--max-loras", "2"}, ExitSLO,
			func(t *testing.T, recs []record.Request, out string) {
				classes := map[string]int{}
				for _, r := range recs {
					classes[r.Class]++
				}
				if len(classes) != 3 || classes[""] > 0 {
					t.Errorf("records by class %v, want the mix's three classes", classes)
				}
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"sim", "--detail", "--seed", "3", "--no-store", "--quiet", "--out", dir}, c.args...)
			code, out, errs := kneeEnv(t, benchEnv(t), args...)
			if code != c.code {
				t.Fatalf("%v: exit %d (want %d): %s", c.args, code, c.code, errs)
			}
			recs := readRecords(t, filepath.Join(dir, "records.jsonl"))
			per := map[string]int{}
			for _, r := range recs {
				per[r.Replica]++
			}
			if len(recs) == 0 || per[""] > 0 || !strings.Contains(out, "replica r1: ") {
				t.Fatalf("%d records over replicas %v; report:\n%s", len(recs), per, out)
			}
			if c.check != nil {
				c.check(t, recs, out)
			}
		})
	}
}
