package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDiagnoseBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("queue_ms,prefill_ms,decode_ms\n1,2,x\n"), 0o644)
	empty := filepath.Join(dir, "empty.csv")
	os.WriteFile(empty, nil, 0o644)
	ok := filepath.Join(dir, "ok.csv")
	os.WriteFile(ok, []byte("queue_ms,prefill_ms,decode_ms\n1,2,3\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{bad}, `line 2, column 3 (decode_ms): "x" is not a non-negative number`},
		{[]string{empty}, "empty input"},
		{[]string{}, "want one input file"},
		{[]string{"--split", "10s", ok}, "has no send times"},
		{[]string{"--split", "soon", ok}, `--split "soon"`},
		{[]string{"--window", "5s", ok}, "want A:B"},
		{[]string{"--baseline", ok, "--split", "1s", ok}, "give one of"},
		{[]string{"../diagnose/testdata/vllm_summary.json"}, "rerun vllm bench serve with --save-result --save-detailed"},
	} {
		code, _, errs := kneeCmd(t, append([]string{"diagnose"}, c.args...)...)
		if code != ExitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, errs, c.want)
		}
	}
}

func TestLabCLI(t *testing.T) {
	code, out, errs := kneeCmd(t, "lab", "--scenario", "decode")
	if code != 0 || !strings.Contains(out, "verdict: decode_slowdown") {
		t.Errorf("exit %d %s\n%s", code, errs, out)
	}
	code, out, _ = kneeCmd(t, "lab", "--scenario", "sweep", "--json")
	var r struct {
		Sweep struct {
			SLOSafe struct{ Load *float64 } `json:"slo_safe"`
		}
		Highest *float64 `json:"highest_rate_p95_ttft_under_2s_rps"`
	}
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil || r.Highest == nil || r.Sweep.SLOSafe.Load == nil {
		t.Errorf("exit %d, %v: %+v", code, err, r)
	}
	if code, _, errs := kneeCmd(t, "lab", "--scenario", "nope"); code != ExitUsage || !strings.Contains(errs, "unknown scenario") {
		t.Errorf("exit %d %s", code, errs)
	}
}

func TestLabAndSimSweepAreStored(t *testing.T) {
	db := filepath.Join(t.TempDir(), "knee.db")
	env := map[string]string{"KNEE_DB": db}
	if code, _, errs := kneeEnv(t, env, "lab", "--scenario", "decode"); code != ExitOK {
		t.Fatalf("lab: exit %d: %s", code, errs)
	}
	if code, _, errs := kneeEnv(t, env, "sim", "sweep", "--quiet", "--rate", "2,4", "--requests", "50", "--seed", "1"); code != ExitOK {
		t.Fatalf("sim sweep: exit %d: %s", code, errs)
	}
	code, out, errs := kneeEnv(t, env, "runs")
	if code != ExitOK {
		t.Fatalf("runs: exit %d: %s", code, errs)
	}
	for _, want := range []string{"lab decode", "sweep"} {
		if !strings.Contains(out, want) {
			t.Errorf("knee runs lacks %q:\n%s", want, out)
		}
	}
}

// Without a baseline, a uniformly slow decode is judged against what the
// simulator says the model and GPU should do: from summary.json beside the
// records (knee sim/bench --out), from --gpu/--model, or against an --slo.
func TestDiagnoseDecodeBoundWithoutBaseline(t *testing.T) {
	dir := t.TempDir()
	healthy, slow := filepath.Join(dir, "healthy"), filepath.Join(dir, "slow")
	for _, c := range []struct {
		out   string
		scale string
	}{{healthy, "1"}, {slow, "2"}} {
		if code, _, errs := kneeCmd(t, "sim", "--no-store", "--rate", "10", "--requests", "300", "--seed", "4", "--step-time-scale", c.scale, "--out", c.out); code != 0 {
			t.Fatalf("sim: %s", errs)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{filepath.Join(healthy, "records.jsonl")}, "Verdict:  healthy"},
		{[]string{filepath.Join(slow, "records.jsonl")}, "Verdict:  decode_slowdown"},
		{[]string{filepath.Join(slow, "records.jsonl"), "--gpu", "a100-80gb", "--model", "llama-3.1-8b"}, "Verdict:  healthy"},
		{[]string{filepath.Join(slow, "records.jsonl"), "--gpu", "h100", "--model", "llama-3.1-8b"}, "Verdict:  decode_slowdown"},
		{[]string{filepath.Join(healthy, "records.jsonl"), "--slo", "mean(tpot)<5ms"}, "Verdict:  decode_slowdown"},
	} {
		code, out, errs := kneeCmd(t, append([]string{"diagnose"}, c.args...)...)
		if code != 0 || !strings.Contains(out, c.want) || !strings.Contains(out, "Decode dominates") {
			t.Errorf("diagnose %v: exit %d, want %q and the dominant phase\n%s%s", c.args, code, c.want, out, errs)
		}
	}
	// The same file copied away from its summary.json, with no flags: the
	// decode is named as dominant, and the way to judge it is said.
	lone := filepath.Join(t.TempDir(), "records.jsonl")
	b, _ := os.ReadFile(filepath.Join(slow, "records.jsonl"))
	os.WriteFile(lone, b, 0o644)
	code, out, _ := kneeCmd(t, "diagnose", lone, "--json")
	if code != 0 || !strings.Contains(out, `"dominant_phase": "decode"`) || !strings.Contains(out, "--gpu and --model") {
		t.Errorf("diagnose without a reference:\n%s", out)
	}
	if code, _, errs := kneeCmd(t, "diagnose", lone, "--gpu", "h100"); code != ExitUsage || !strings.Contains(errs, "--model") {
		t.Errorf("--gpu without --model: exit %d %q", code, errs)
	}
}
