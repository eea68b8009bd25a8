package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/simserver"
	"github.com/knee-dev/knee/internal/simserver/simservertest"
	"github.com/knee-dev/knee/internal/store"
)

type sweepJSON struct {
	LoadKind string `json:"load_kind"`
	Steps    []struct {
		Load   float64 `json:"load"`
		SLOMet bool    `json:"slo_met"`
	} `json:"steps"`
	Knee    struct{ Load *float64 } `json:"knee"`
	SLOSafe struct {
		Load   *float64
		Reason string
	} `json:"slo_safe"`
	Warnings []string `json:"warnings"`
}

func TestSweepFromCSV(t *testing.T) {
	code, out, errs := kneeCmd(t, "sweep", "--from", "testdata/sweep_points.csv", "--slo", "p95(ttft)<1s", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r sweepJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if r.LoadKind != "concurrency" || len(r.Steps) != 7 || r.Knee.Load == nil || *r.Knee.Load != 16 || r.SLOSafe.Load == nil || *r.SLOSafe.Load != 32 {
		t.Errorf("got %+v", r)
	}
	code, out, _ = kneeCmd(t, "sweep", "--from", "testdata/sweep_points.csv", "--slo", "p95(ttft)<1s")
	if code != 0 || !strings.Contains(out, "Knee:      16 in flight — Kneedle") || !strings.Contains(out, "SLO-safe:  32 in flight") {
		t.Errorf("text output:\n%s", out)
	}
}

func TestSweepFromCSVBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"empty", []string{"--from", write("empty.csv", "")}, "empty file"},
		{"missing throughput", []string{"--from", write("nothr.csv", "concurrency,ttft_p95_ms\n1,2\n")}, "line 1: no throughput column"},
		{"non-numeric", []string{"--from", write("nan.csv", "concurrency,output_tps\n1,10\n2,lots\n")}, `line 3, column 2 (output_tps): "lots" is not a number`},
		{"SLO without its column", []string{"--from", write("ok.csv", "concurrency,output_tps\n1,10\n2,20\n4,30\n"), "--slo", "p99(itl)<50ms"}, "SLO p99(itl)<50ms needs column itl_p99_ms"},
		{"malformed SLO", []string{"--from", "testdata/sweep_points.csv", "--slo", "p95(ttft)<<2s"}, "--slo"},
		{"missing file", []string{"--from", filepath.Join(dir, "nope.csv")}, "no such file"},
		{"bad list", []string{"--concurrency", "1,x,4"}, `--concurrency: item 2 "x" is not a positive number`},
		{"fractional concurrency", []string{"--concurrency", "1.5"}, "whole numbers"},
		{"both kinds", []string{"--concurrency", "1", "--rate", "2"}, "not both"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, errs := kneeCmd(t, append([]string{"sweep"}, c.args...)...)
			if code != ExitUsage || !strings.Contains(errs, c.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, errs, c.want)
			}
		})
	}
}

func TestSimSweepAutoAndExit3(t *testing.T) {
	code, out, errs := kneeCmd(t, "sim", "sweep", "--rate", "auto", "--min", "5", "--duration", "20s", "--seed", "3", "--slo", "p95(ttft)<2s", "--quiet")
	if code != 0 || !strings.Contains(out, "(refined)") || !strings.Contains(out, "stopped growing") {
		t.Errorf("auto: exit %d %s\n%s", code, errs, out)
	}
	code, _, errs = kneeCmd(t, "sim", "sweep", "--rate", "120,160", "--duration", "20s", "--slo", "p95(ttft)<100ms", "--quiet")
	if code != ExitSLO || !strings.Contains(errs, "no measured load meets p95(ttft)<100ms") {
		t.Errorf("exit %d: %s", code, errs)
	}
}

func TestSweepEmbeddedIsStored(t *testing.T) {
	parallelUntimed(t)
	db := filepath.Join(t.TempDir(), "knee.db")
	code, out, errs := kneeEnv(t, map[string]string{"KNEE_DB": db}, "sweep", "--gpu", "l4", "--concurrency", "1,2,4", "--requests", "6",
		"--input-tokens", "64", "--output-tokens", "4", "--seed", "1", "--quiet", "--label", "tiny", "--request-timeout", "30s")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "stored as run 1") {
		t.Errorf("output:\n%s", out)
	}
	// The live notes and the stored run name the target alike: by the
	// embedded server's preset, as bench's do (issue 39 item 15).
	const target = "embedded (Llama-3.1-8B on 1× L4)"
	if !strings.Contains(strings.Join(strings.Fields(out), " "), "target "+target+", a fresh embedded simulated server for every step") {
		t.Errorf("the live notes do not name the target %q:\n%s", target, out)
	}
	code, stored, errs := kneeEnv(t, map[string]string{"KNEE_DB": db}, "report", "1")
	if code != 0 {
		t.Fatalf("report: exit %d: %s", code, errs)
	}
	if !strings.Contains(stored, "target      "+target+"\n") {
		t.Errorf("knee report does not name the target %q:\n%s", target, stored)
	}
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	res, err := st.SweepResult(1)
	if err != nil || res == nil || len(res.Steps) != 3 || res.LoadKind != "concurrency" {
		t.Fatalf("stored sweep %+v, %v", res, err)
	}
	if res.Steps[2].Summary.Completed != 6 {
		t.Errorf("step 3 summary %+v", res.Steps[2].Summary)
	}
}

// --url measures the given server (here a simulated one started by the
// test, standing in for any OpenAI-compatible target).
func TestSweepURL(t *testing.T) {
	parallelUntimed(t)
	url, srv := simservertest.Start(t, func(c *simserver.Config) {
		g, _ := simengine.LookupGPU("l4")
		c.Engine = simengine.DefaultConfig(g, c.Engine.Model, 1)
	})
	dir := t.TempDir()
	code, out, errs := kneeCmd(t, "sweep", "--url", url, "--model", srv.Model(), "--concurrency", "1,2,4", "--requests", "6",
		"--input-tokens", "64", "--output-tokens", "4", "--seed", "1", "--quiet", "--json", "--request-timeout", "30s", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	recs, err := os.ReadFile(filepath.Join(dir, "records_concurrency_4.jsonl"))
	if err != nil || strings.Count(string(recs), "\n") != 6 {
		t.Errorf("step records: %v, %d lines", err, strings.Count(string(recs), "\n"))
	}
	var r sweepJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.Steps) != 3 {
		t.Fatalf("%v: %s", err, out)
	}
	if code, _, errs := kneeCmd(t, "sweep", "--url", url, "--concurrency", "1"); code != ExitUsage || !strings.Contains(errs, "--model is required") {
		t.Errorf("exit %d: %s", code, errs)
	}
}

// knee sim sweep's errors are prefixed with the command the user typed.
func TestSimSweepErrorsNameTheCommand(t *testing.T) {
	code, _, errs := kneeCmd(t, "sim", "sweep", "--concurrency", "0,2", "--no-store")
	if code != 2 || !strings.HasPrefix(errs, "knee sim sweep: --concurrency") {
		t.Errorf("exit %d, %q; want 2 and a message starting knee sim sweep: --concurrency", code, errs)
	}
	// The subcommand after flags, as knee sim allows: still its name.
	code, _, errs = kneeCmd(t, "sim", "--seed", "1", "sweep", "--concurrency", "0,2", "--no-store")
	if code != 2 || !strings.HasPrefix(errs, "knee sim sweep: --concurrency") {
		t.Errorf("knee sim --seed 1 sweep: exit %d, %q; want 2 and knee sim sweep: --concurrency", code, errs)
	}
	code, _, errs = kneeCmd(t, "sim", "--concurrency", "0", "--no-store")
	if code != 2 || !strings.HasPrefix(errs, "knee sim: ") {
		t.Errorf("knee sim: exit %d, %q; want 2 and knee sim:", code, errs)
	}
}
