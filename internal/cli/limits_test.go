package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A --duration given alone is a time limit: the default request count does
// not cut it short, and the report says which limit ended the run.
func TestDurationAloneIsATimeLimit(t *testing.T) {
	// sim: the default is 1000 requests; 10 minutes at concurrency 32 is
	// far more, all in virtual time.
	code, out, errs := kneeCmd(t, "sim", "--duration", "10m", "--seed", "1", "--quiet", "--json", "--no-store")
	if code != 0 {
		t.Fatalf("sim: exit %d: %s", code, errs)
	}
	var sum struct {
		Requests int
		Notes    []string
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Requests <= 1000 || !hasNote(sum.Notes, "ended by the time limit: --duration 10m0s") {
		t.Errorf("sim --duration 10m: %d requests, notes %q; want more than the default 1000, ended by the time limit", sum.Requests, sum.Notes)
	}
	// Both given: whichever comes first, and the report says which.
	code, out, _ = kneeCmd(t, "sim", "--duration", "10m", "--requests", "50", "--seed", "1", "--quiet", "--json", "--no-store")
	json.Unmarshal([]byte(out), &sum)
	if code != 0 || sum.Requests != 50 || !hasNote(sum.Notes, "ended by the request limit: --requests 50,") {
		t.Errorf("sim --requests 50 --duration 10m: %d requests, notes %q", sum.Requests, sum.Notes)
	}
	// The default alone says it is the default.
	code, out, _ = kneeCmd(t, "sim", "--rate", "50", "--seed", "1", "--quiet", "--json", "--no-store")
	json.Unmarshal([]byte(out), &sum)
	if code != 0 || sum.Requests != 1000 || !hasNote(sum.Notes, "--requests 1000 (the default; give --duration alone for a time limit)") {
		t.Errorf("sim default: %d requests, notes %q", sum.Requests, sum.Notes)
	}
	// A scenario file's duration is a duration given, too.
	scen := filepath.Join(t.TempDir(), "s.yaml")
	os.WriteFile(scen, []byte("duration: 10m\nconcurrency: 32\n"), 0o644)
	code, out, _ = kneeCmd(t, "sim", "--scenario-file", scen, "--seed", "1", "--quiet", "--json", "--no-store")
	json.Unmarshal([]byte(out), &sum)
	if code != 0 || sum.Requests <= 1000 {
		t.Errorf("sim with a scenario duration: %d requests", sum.Requests)
	}

	// sim sweep: 100 req/s for 30 s per step is 3000 requests, more than
	// the default 2000.
	code, out, errs = kneeCmd(t, "sim", "sweep", "--rate", "50,100", "--duration", "30s", "--seed", "1", "--quiet", "--json", "--no-store")
	if code != 0 {
		t.Fatalf("sim sweep: exit %d: %s", code, errs)
	}
	var sw struct {
		Steps []struct {
			Summary struct{ Requests int } `json:"summary"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(out), &sw); err != nil {
		t.Fatal(err)
	}
	if len(sw.Steps) != 2 || sw.Steps[1].Summary.Requests < 2700 {
		t.Errorf("sim sweep --duration 30s: steps %+v; want the 100 req/s step to run ~3000 requests", sw.Steps)
	}

	// bench against the embedded server: a short time limit, ended by it.
	code, out, errs = kneeCmd(t, "bench", "--duration", "1s", "--concurrency", "2", "--input-tokens", "16", "--output-tokens", "4",
		"--quiet", "--json", "--no-store")
	if code != 0 {
		t.Fatalf("bench: exit %d: %s", code, errs)
	}
	json.Unmarshal([]byte(out), &sum)
	if !hasNote(sum.Notes, "ended by the time limit: --duration 1s") {
		t.Errorf("bench --duration 1s: notes %q", sum.Notes)
	}
}

func hasNote(notes []string, part string) bool {
	for _, n := range notes {
		if strings.Contains(n, part) {
			return true
		}
	}
	return false
}

// A huge --concurrency is refused; one within bounds costs only what runs,
// and an interrupt ends it at once.
func TestHugeConcurrency(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "--concurrency", "99999999999", "--requests", "5"},
		{"bench", "--rate", "5", "--max-concurrency", "200000"},
		{"sim", "--concurrency", "1000000000"},
		{"sweep", "--concurrency", "1,4,1000000"},
		{"sweep", "--auto", "--max", "1e7"},
		{"sim", "sweep", "--rate", "1,1e9"},
	} {
		code, _, errs := kneeCmd(t, append(args, "--no-store", "--quiet")...)
		if code != ExitUsage || !strings.Contains(errs, "at most") {
			t.Errorf("%v: exit %d, %q; want 2, at most", args, code, errs)
		}
	}
	// The widest allowed closed loop with 3 requests: three workers.
	code, out, errs := kneeCmd(t, "bench", "--concurrency", "100000", "--requests", "3", "--input-tokens", "16", "--output-tokens", "2",
		"--quiet", "--json", "--no-store")
	var sum struct{ Requests, Completed int }
	json.Unmarshal([]byte(out), &sum)
	if code != 0 || sum.Completed != 3 {
		t.Errorf("--concurrency 100000 --requests 3: exit %d, %+v, %s", code, sum, errs)
	}
	// More in flight than this process may open files for: refused, naming
	// the limit, instead of a run that measures "too many open files".
	if limit := openFileLimit(); limit > 512 && limit < maxInFlight {
		code, _, errs := kneeCmd(t, "bench", "--concurrency", strconv.FormatUint(limit, 10), "--duration", "1s", "--quiet", "--no-store")
		if code != ExitUsage || !strings.Contains(errs, "(ulimit -n)") {
			t.Errorf("--concurrency %d over the open-file limit: exit %d, %s", limit, code, errs)
		}
	}
	// Ctrl-C before the run starts: it stops without starting its workers.
	wide := 5000
	if limit := openFileLimit(); limit > 0 && limit < 10_256 {
		wide = int(limit-256) / 2
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr strings.Builder
	env := &Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" }}
	start := time.Now()
	code = MainEnv(ctx, env, []string{"bench", "--concurrency", strconv.Itoa(wide), "--duration", "1h", "--quiet", "--no-store", "--json"})
	if code != ExitFailure || !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("canceled bench: exit %d, %s", code, stderr.String())
	}
	t.Logf("canceled bench returned in %v", time.Since(start))
}

// Flags that would be silently ignored, or values that make no sense, are
// refused with exit 2 and a message naming the flag.
func TestFlagCombinationsRefused(t *testing.T) {
	dir := t.TempDir()
	csv := filepath.Join(dir, "points.csv")
	os.WriteFile(csv, []byte("concurrency,throughput_rps,ttft_p95_ms\n1,1,100\n2,2,110\n4,3,200\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--rate", "0"}, "--rate 0: want a positive number"},
		{[]string{"sim", "--rate", "0"}, "--rate 0: want a positive number"},
		{[]string{"bench", "--rate", "-3"}, "--rate -3"},
		{[]string{"bench", "--grace", "-1s"}, "--grace -1s: want 0"},
		{[]string{"sweep", "--grace", "-1s", "--concurrency", "1"}, "--grace -1s"},
		{[]string{"bench", "--request-timeout", "-1s"}, "--request-timeout -1s"},
		{[]string{"bench", "--ramp", "-1s"}, "--ramp -1s"},
		{[]string{"bench", "--burstiness", "0.5"}, "--burstiness applies to an open loop"},
		{[]string{"sim", "--burstiness", "0.5"}, "--burstiness applies to an open loop"},
		{[]string{"sweep", "--burstiness", "0.5", "--concurrency", "1,2"}, "--burstiness applies to an open loop"},
		{[]string{"bench", "--rate", "5", "--burstiness", "0.5"}, "--burstiness applies to --arrival gamma"},
		{[]string{"bench", "--arrival", "gamma"}, "--arrival applies to an open loop"},
		{[]string{"bench", "--max-concurrency", "4"}, "--max-concurrency applies to an open loop"},
		{[]string{"bench", "--concurrency", "4", "--rate", "2"}, "not both"},
		{[]string{"bench", "--gpu", "a100", "--url", "http://127.0.0.1:1", "--model", "m"}, "--gpu configures knee's embedded simulated server"},
		{[]string{"sweep", "--tp", "2", "--url", "http://127.0.0.1:1", "--model", "m", "--concurrency", "1"}, "--tp configures"},
		{[]string{"sweep", "--from", csv, "--rate", "5"}, "--rate does nothing with --from"},
		{[]string{"sweep", "--from", csv, "--url", "http://x"}, "--url does nothing with --from"},
		{[]string{"sweep", "--from", csv, "--duration", "5s"}, "--duration does nothing with --from"},
		{[]string{"sim", "sweep", "--rate", "40,10,10,20"}, "--rate: 10 is listed twice"},
		{[]string{"sweep", "--concurrency", "4,4"}, "--concurrency: 4 is listed twice"},
		{[]string{"serve", "--addr", "127.0.0.1:99999"}, `port "99999" is not a number from 0 to 65535`},
		{[]string{"serve", "--addr", "localhost"}, "want host:port"},
	} {
		code, _, errs := kneeCmd(t, append(c.args, "--quiet")...)
		if c.args[0] == "serve" {
			code, _, errs = kneeCmd(t, c.args...)
		}
		if code != ExitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, errs, c.want)
		}
	}
	// --from with analysis flags still works.
	if code, _, errs := kneeCmd(t, "sweep", "--from", csv, "--slo", "p95(ttft)<150ms", "--quiet", "--json"); code != 0 {
		t.Errorf("sweep --from with --slo: exit %d, %s", code, errs)
	}
	// An unsorted list is measured in increasing order.
	code, out, errs := kneeCmd(t, "sim", "sweep", "--rate", "4,1,2", "--requests", "50", "--seed", "1", "--quiet", "--json", "--no-store")
	var sw struct {
		Steps []struct {
			Load float64 `json:"load"`
		} `json:"steps"`
	}
	json.Unmarshal([]byte(out), &sw)
	if code != 0 || len(sw.Steps) != 3 || sw.Steps[0].Load != 1 || sw.Steps[2].Load != 4 {
		t.Errorf("sim sweep --rate 4,1,2: exit %d, %+v %s", code, sw.Steps, errs)
	}
	// serve on a port in use is bad input too.
	code, _, errs = kneeCmd(t, "serve", "--addr", "127.0.0.1:0", "--bogus")
	if code != ExitUsage {
		t.Errorf("serve --bogus: exit %d %s", code, errs)
	}
}

// report --out refuses a file type it does not write, and a name that
// contradicts --format; the extension picks the format otherwise.
func TestReportOutFormat(t *testing.T) {
	db := filepath.Join(t.TempDir(), "knee.db")
	envv := map[string]string{"KNEE_DB": db}
	if code, _, errs := kneeEnv(t, envv, "sim", "--requests", "20", "--quiet", "--seed", "1"); code != 0 {
		t.Fatalf("sim: %d %s", code, errs)
	}
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--out", filepath.Join(dir, "r.pdf")}, "knee writes text, md, csv, json or html"},
		{[]string{"--out", filepath.Join(dir, "r.png")}, "name the file .txt"},
		{[]string{"--out", filepath.Join(dir, "r.html"), "--format", "json"}, "is a html file name but --format is json"},
	} {
		code, _, errs := kneeEnv(t, envv, append([]string{"report", "last"}, c.args...)...)
		if code != ExitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("report %v: exit %d, %q; want 2 and %q", c.args, code, errs, c.want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("refused reports left files: %v", ents)
	}
	for _, c := range []struct{ name, format, start string }{
		{"r.json", "", "{"}, {"r.md", "", "#"}, {"r.html", "", "<!"}, {"r.txt", "", "knee sim report"}, {"r", "", "knee sim report"},
		{"r.pdf", "json", "{"}, {"plain", "json", "{"},
	} {
		path := filepath.Join(dir, c.name)
		args := []string{"report", "last", "--out", path}
		if c.format != "" {
			args = append(args, "--format", c.format)
		}
		code, _, errs := kneeEnv(t, envv, args...)
		b, _ := os.ReadFile(path)
		if code != 0 || !strings.HasPrefix(strings.TrimSpace(string(b)), c.start) {
			t.Errorf("report --out %s --format %q: exit %d %s, file starts %.20q", c.name, c.format, code, errs, b)
		}
	}
}

// Errors point only to flags the command has: bench's embedded server
// takes presets, not --model-file.
func TestErrorsNameOnlyFlagsTheCommandHas(t *testing.T) {
	for _, c := range []struct {
		args    []string
		has     string
		hasNone string
	}{
		{[]string{"bench", "--model", "nosuch", "--no-store"}, `unknown model "nosuch"`, "file"},
		{[]string{"bench", "--gpu", "nosuch", "--no-store"}, `unknown GPU "nosuch"`, "file"},
		{[]string{"sweep", "--model", "nosuch", "--concurrency", "1", "--no-store"}, `unknown model "nosuch"`, "file"},
		{[]string{"sim", "--model", "nosuch"}, "--model-file or --preset-file", ""},
		{[]string{"sim", "--gpu", "nosuch"}, "--gpu-file or --preset-file", ""},
	} {
		code, _, errs := kneeCmd(t, c.args...)
		if code != ExitUsage || !strings.Contains(errs, c.has) || (c.hasNone != "" && strings.Contains(errs, c.hasNone)) {
			t.Errorf("%v: exit %d, %q; want 2, %q, no %q", c.args, code, errs, c.has, c.hasNone)
		}
	}
}
