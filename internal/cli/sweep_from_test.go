package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sweep --from takes other tools' result files: several vLLM results (one
// per load step, the load from max_concurrency), a folder of AIPerf
// exports, a GuideLLM benchmarks.json, inference-perf's per-stage reports.
func TestSweepFromOtherTools(t *testing.T) {
	vllm, _ := filepath.Glob(ingestData + "vllm-sweep/*.json")
	stages, _ := filepath.Glob(ingestData + "inference-perf/stage_*_lifecycle_metrics.json")
	for _, c := range []struct {
		name     string
		args     []string
		kind     string
		loads    []float64
		safe     float64
		contains string
	}{
		{"vLLM results, one per concurrency", append(append([]string{"--from"}, vllm...), "--slo", "p99(ttft)<200ms"),
			"concurrency", []float64{1, 4, 8, 16, 32}, 8, "points read from 5 files"},
		{"AIPerf folder", []string{"--from", ingestData + "aiperf", "--slo", "p95(ttft)<150ms"},
			"concurrency", []float64{1, 4, 16, 32}, 16, "points read from 4 files"},
		{"GuideLLM sweep profile", []string{"--from", ingestData + "guidellm_benchmarks.json", "--slo", "p95(ttft)<500ms"},
			"rate", []float64{3, 6, 9, 12}, 9, "left out (no request rate"},
		{"inference-perf stages", append(append([]string{"--from"}, stages...), "--slo", "p99(ttft)<1s"),
			"rate", []float64{1, 2, 4, 8, 12}, 8, "points read from 5 files"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := kneeCmd(t, append([]string{"sweep"}, append(c.args, "--json")...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			var res struct {
				LoadKind string `json:"load_kind"`
				Steps    []struct {
					Load float64 `json:"load"`
				} `json:"steps"`
				SLOSafe struct {
					Load *float64 `json:"load"`
				} `json:"slo_safe"`
				Notes []string `json:"notes"`
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			var loads []float64
			for _, s := range res.Steps {
				loads = append(loads, s.Load)
			}
			if res.LoadKind != c.kind || len(loads) != len(c.loads) {
				t.Fatalf("kind %s loads %v; want %s %v", res.LoadKind, loads, c.kind, c.loads)
			}
			for i := range loads {
				if loads[i] != c.loads[i] {
					t.Errorf("loads %v, want %v", loads, c.loads)
				}
			}
			if res.SLOSafe.Load == nil || *res.SLOSafe.Load != c.safe {
				t.Errorf("SLO-safe %v, want %v", res.SLOSafe.Load, c.safe)
			}
			if !strings.Contains(strings.Join(res.Notes, "\n"), c.contains) {
				t.Errorf("notes %v lack %q", res.Notes, c.contains)
			}
		})
	}
}

func TestSweepFromBadResults(t *testing.T) {
	dir := t.TempDir()
	one := ingestData + "vllm-sweep/openai-chat-infqps-concurrency4-Qwen3-8B-20261101.json"
	copyOf := filepath.Join(dir, "again.json")
	b, _ := os.ReadFile(one)
	os.WriteFile(copyOf, b, 0o644)
	vllm, _ := filepath.Glob(ingestData + "vllm-sweep/*.json")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"the same load twice", []string{"--from", one, copyOf}, "again.json repeats the load 4 in flight of " + one},
		{"a percentile vLLM did not write", append(append([]string{"--from"}, vllm...), "--slo", "p95(ttft)<1s"), "needs column ttft_p95_ms, which not every step gives"},
		{"no load", []string{"--from", ingestData + "vllm_detailed.json,", ingestData + "vllm_summary.json"}, ""},
		{"not a result", []string{"--from", writeFile(t, dir, "x.json", `{"hello": 1}`)}, "unknown import format"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := kneeCmd(t, append([]string{"sweep"}, c.args...)...)
			if c.want == "" { // a concurrency step and a rate step: one is left out, said in a note
				if code != 0 || !strings.Contains(out, "left out") {
					t.Errorf("exit %d: %s%s", code, out, errs)
				}
				return
			}
			if code != ExitUsage || !strings.Contains(errs, c.want) {
				t.Errorf("exit %d, %q; want 2 and %q", code, errs, c.want)
			}
		})
	}
}

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// knee import stores other tools' results where they carry a run's figures.
func TestImportOtherTools(t *testing.T) {
	code, out, errs := kneeCmd(t, "import", ingestData+"guidellm_benchmarks.json", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var got []struct {
		Format   string `json:"format"`
		Requests int    `json:"requests"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got) != 6 || got[0].Format != "guidellm-benchmarks" {
		t.Fatalf("%v %s", err, out)
	}
	for _, f := range []string{"aiperf/c4/profile_export_aiperf.json", "inference-perf/stage_1_lifecycle_metrics.json"} {
		if code, out, errs := kneeCmd(t, "import", ingestData+f); code != 0 || !strings.Contains(out, "summary only") {
			t.Errorf("%s: exit %d %s%s", f, code, out, errs)
		}
	}
	dir := t.TempDir()
	thin := writeFile(t, dir, "thin.json", `{"request_count": {"unit": "requests", "avg": 10}, "time_to_first_token": {"unit": "ms", "avg": 20}}`)
	if code, _, errs := kneeCmd(t, "import", thin); code != ExitUsage || !strings.Contains(errs, "no throughput to import") {
		t.Errorf("AIPerf export without throughput: exit %d %s", code, errs)
	}
}
