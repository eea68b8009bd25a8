package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStoredReportIsLiveReport: what a run printed is what it keeps. The
// report knee report renders from the database equals, byte for byte, the
// one the run printed (text) and wrote to --out (Markdown, JSON, HTML) — a
// probe run, whose notes and per-class probe row the stored report used to
// drop, against the embedded server, whose ephemeral URL it used to show.
func TestStoredReportIsLiveReport(t *testing.T) {
	parallelUntimed(t)
	dir := t.TempDir()
	db, out := filepath.Join(dir, "knee.db"), filepath.Join(dir, "out")
	env := map[string]string{"KNEE_DB": db}
	code, live, errs := kneeEnv(t, env, "bench", "--rate", "20", "--requests", "30", "--probe-rate", "4", "--seed", "3",
		"--quiet", "--detail", "--out", out)
	if code != 0 {
		t.Fatalf("bench: exit %d: %s", code, errs)
	}
	for _, want := range []string{"Notes", "probe*", "target   embedded (", "status   complete"} {
		if !strings.Contains(live, want) {
			t.Errorf("the live report lacks %q:\n%s", want, live)
		}
	}
	if strings.Contains(live, "target   http://") {
		t.Errorf("the live report shows the embedded server's ephemeral URL as its target:\n%s", live)
	}
	cases := []struct{ format, live string }{
		{"text", live},
		{"md", readFile(t, filepath.Join(out, "report.md"))},
		{"json", readFile(t, filepath.Join(out, "summary.json"))},
		{"html", readFile(t, filepath.Join(out, "report.html"))},
	}
	// The summary validates against its schema, with the keys this run
	// adds (classes, prompt_tokens_check), and a key the schema does not
	// describe is refused.
	schema := compileSchema(t, "summary.schema.json")
	doc := validate(t, schema, "summary.json", cases[2].live)
	for _, k := range []string{"classes", "prompt_tokens_check"} {
		if doc[k] == nil {
			t.Errorf("summary.json has no %s", k)
		}
	}
	doc["no_such_key"] = json.Number("1")
	if err := schema.Validate(doc); err == nil {
		t.Errorf("summary.schema.json accepts a top-level key it does not describe")
	}
	sameAsStored(t, env, "last", live, out, "report.md", "summary.json", "report.html")
}

// TestStoredSimReportIsLiveReport: a simulation keeps what it printed too —
// its workload line, prediction ranges, notes, engine figures and status,
// which knee report used to drop — and its --out report draws its curves
// from the records knee report reads back.
func TestStoredSimReportIsLiveReport(t *testing.T) {
	dir := t.TempDir()
	db, out := filepath.Join(dir, "knee.db"), filepath.Join(dir, "out")
	env := map[string]string{"KNEE_DB": db}
	code, live, errs := kneeEnv(t, env, "sim", "--rate", "10", "--requests", "40", "--seed", "3", "--quiet", "--detail", "--out", out)
	if code != 0 {
		t.Fatalf("sim: exit %d: %s", code, errs)
	}
	for _, want := range []string{"workload  input 512, output 128 tokens", "Prediction ranges", "Notes", "engine: ", "status    complete"} {
		if !strings.Contains(live, want) {
			t.Errorf("the live report lacks %q:\n%s", want, live)
		}
	}
	sameAsStored(t, env, "last", live, out, "report.md", "summary.json", "report.html")
}

// sameAsStored checks that knee report RUN renders, in text, md, json and
// html, byte for byte what the run printed (text) and wrote to out.
func sameAsStored(t *testing.T, env map[string]string, run, text, out, md, json, html string) {
	t.Helper()
	cases := []struct{ format, live string }{
		{"text", text},
		{"md", readFile(t, filepath.Join(out, md))},
		{"json", readFile(t, filepath.Join(out, json))},
		{"html", readFile(t, filepath.Join(out, html))},
	}
	for _, c := range cases {
		code, stored, errs := kneeEnv(t, env, "report", run, "--format", c.format)
		if code != 0 {
			t.Fatalf("report --format %s: exit %d: %s", c.format, code, errs)
		}
		if stored != c.live {
			t.Errorf("report --format %s differs from what the run wrote:\n%s", c.format, firstDiff(c.live, stored))
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// firstDiff shows the first line where live and stored part.
func firstDiff(live, stored string) string {
	a, b := strings.Split(live, "\n"), strings.Split(stored, "\n")
	for i := 0; i < max(len(a), len(b)); i++ {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:", i+1) + "\n  live:   " + x + "\n  stored: " + y
		}
	}
	return "(same lines)"
}
