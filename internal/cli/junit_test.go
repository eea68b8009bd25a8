package cli

import (
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	gojunit "github.com/joshdk/go-junit"
)

// junitTotals reads a --junit file with go-junit, a parser knee did not write.
func junitTotals(t *testing.T, path string) (gojunit.Totals, []gojunit.Suite) {
	t.Helper()
	suites, err := gojunit.IngestFile(path)
	if err != nil {
		t.Fatalf("go-junit cannot read %s: %v", path, err)
	}
	var tot gojunit.Totals
	for _, s := range suites {
		tot.Tests += s.Totals.Tests
		tot.Failed += s.Totals.Failed
		tot.Error += s.Totals.Error
		tot.Skipped += s.Totals.Skipped
	}
	return tot, suites
}

func TestJUnitOutcomesMatchExitCodes(t *testing.T) {
	sim := []string{"sim", "--requests", "40", "--concurrency", "4", "--input-tokens", "64", "--seed", "1", "--quiet", "--no-store", "--json"}
	// A dead port stops bench before the run (TestJUnitUnreachableTarget); a
	// server failing every request gives an all-failed run.
	failing := failingServer(t, http.StatusInternalServerError).URL
	for _, tc := range []struct {
		name                           string
		args                           []string
		code, tests, failures, errored int
	}{
		{"passing", append(sim, "--output-tokens", "16", "--slo", "p95(ttft)<30s", "--slo", "error_rate<1%"), ExitOK, 3, 0, 0},
		{"slo-failing", append(sim, "--output-tokens", "16", "--slo", "p95(ttft)<1us", "--slo", "error_rate<1%"), ExitSLO, 3, 1, 0},
		// One-token answers have no TPOT: the gate cannot judge, exit 3 and an error.
		{"cannot-judge", append(sim, "--output-tokens", "1", "--slo", "p95(tpot)<1s"), ExitSLO, 2, 0, 1},
		// Every request fails (HTTP 500): exit 1, the run case fails, the
		// latency SLO cannot be judged.
		{"all-failed", []string{"bench", "--url", failing, "--model", "m", "--requests", "4", "--concurrency", "2",
			"--ignore-eos", "false", "--quiet", "--no-store", "--slo", "p95(ttft)<2s"}, ExitFailure, 2, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "junit.xml")
			code, _, stderr := kneeEnv(t, benchEnv(t), append(tc.args, "--junit", path)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr)
			}
			tot, suites := junitTotals(t, path)
			if tot.Tests != tc.tests || tot.Failed != tc.failures || tot.Error != tc.errored {
				t.Errorf("tests %d failures %d errors %d, want %d %d %d", tot.Tests, tot.Failed, tot.Error, tc.tests, tc.failures, tc.errored)
			}
			if suites[0].Properties["knee.kind"] == "" || len(suites[0].Properties) < 4 {
				t.Errorf("properties %v: want the kind and the configuration", suites[0].Properties)
			}
		})
	}
}

func TestJUnitSweepAndCompare(t *testing.T) {
	db := filepath.Join(t.TempDir(), "knee.db")
	env := map[string]string{"KNEE_DB": db}
	dir := t.TempDir()
	sweepXML := filepath.Join(dir, "sweep.xml")
	code, _, stderr := kneeEnv(t, env, "sim", "sweep", "--concurrency", "1,64", "--requests", "60", "--input-tokens", "512",
		"--output-tokens", "32", "--seed", "1", "--slo", "p95(ttft)<1s", "--quiet", "--junit", sweepXML)
	if code != ExitOK && code != ExitSLO {
		t.Fatalf("sim sweep: exit %d: %s", code, stderr)
	}
	tot, _ := junitTotals(t, sweepXML)
	// Two steps × one SLO, the sweep and its SLO-safe point.
	if tot.Tests != 4 {
		t.Errorf("sweep: %d tests, want 4", tot.Tests)
	}
	if (code == ExitSLO) != (tot.Failed > 0) {
		t.Errorf("sweep exit %d but %d failures: the JUnit outcome must match the exit code", code, tot.Failed)
	}

	for _, out := range []string{"16", "128"} {
		if code, _, stderr := kneeEnv(t, env, "sim", "--requests", "200", "--concurrency", "8", "--input-tokens", "256",
			"--output-tokens", out, "--seed", "1", "--quiet"); code != 0 {
			t.Fatalf("sim: exit %d: %s", code, stderr)
		}
	}
	cmpXML := filepath.Join(dir, "compare.xml")
	code, stdout, stderr := kneeEnv(t, env, "compare", "last~1", "last", "--fail-on", "worse", "--junit", cmpXML)
	if code != ExitOK && code != ExitSLO {
		t.Fatalf("compare: exit %d: %s", code, stderr)
	}
	tot, _ = junitTotals(t, cmpXML)
	if tot.Tests == 0 || (code == ExitSLO) != (tot.Failed > 0) {
		t.Errorf("compare exit %d, JUnit %+v: a regression must be a failure and nothing else one\n%s", code, tot, stdout)
	}
	if code != ExitSLO || !strings.Contains(stdout, "worse") {
		t.Errorf("eight times the output tokens must be worse (e2e), exit %d:\n%s", code, stdout)
	}
}

func TestJUnitBadPath(t *testing.T) {
	code, _, stderr := kneeCmd(t, "sim", "--requests", "4", "--junit", t.TempDir(), "--no-store", "--quiet")
	if code != ExitUsage || !strings.Contains(stderr, "--junit") {
		t.Fatalf("exit %d, stderr %q: want exit 2 naming --junit", code, stderr)
	}
}

// TestJUnitUnreachableTarget: bench stops before the run when nothing
// listens at --url, and the JUnit file still says so (a CI gate must not
// find no report and pass).
func TestJUnitUnreachableTarget(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	path := filepath.Join(t.TempDir(), "junit.xml")
	code, _, stderr := kneeEnv(t, benchEnv(t), "bench", "--url", down, "--model", "m", "--requests", "4", "--quiet", "--no-store",
		"--ignore-eos", "false", "--junit", path)
	if code != ExitFailure {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, stderr)
	}
	tot, _ := junitTotals(t, path)
	if tot.Tests != 1 || tot.Failed != 1 {
		t.Errorf("tests %d failures %d, want 1 failed run case", tot.Tests, tot.Failed)
	}
}
