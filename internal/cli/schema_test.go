package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// compileSchema compiles one of docs/schema's files (with format checks on).
func compileSchema(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("..", "..", "docs", "schema", name))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	s, err := c.Compile(path)
	if err != nil {
		t.Fatalf("docs/schema/%s: %v", name, err)
	}
	return s
}

func validate(t *testing.T, s *jsonschema.Schema, what, doc string) map[string]any {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
	if err != nil {
		t.Fatalf("%s is not JSON: %v", what, err)
	}
	if err := s.Validate(inst); err != nil {
		t.Errorf("%s does not match its schema: %v", what, err)
	}
	m, _ := inst.(map[string]any)
	return m
}

// TestOutputsMatchSchema validates what each command prints with --json and
// writes as summary.json / sweep.json against docs/schema.
func TestOutputsMatchSchema(t *testing.T) {
	summary, sweepSchema := compileSchema(t, "summary.schema.json"), compileSchema(t, "sweep.schema.json")

	// A simulated run with shared prefixes: the prefix-cache figures the
	// text prints are in the JSON too.
	code, out, stderr := kneeCmd(t, "sim", "--requests", "200", "--concurrency", "8", "--shared-prefix", "256", "--seed", "1",
		"--slo", "p95(ttft)<2s", "--json", "--quiet", "--no-store")
	if code != ExitOK {
		t.Fatalf("sim: exit %d: %s", code, stderr)
	}
	doc := validate(t, summary, "knee sim --json", out)
	pc, _ := doc["engine"].(map[string]any)["prefix_cache"].(map[string]any)
	if pc == nil {
		t.Fatalf("knee sim --json has no engine.prefix_cache")
	}
	note := fmt.Sprintf("prefix cache: %v of %v prompt tokens hit", pc["hit_tokens"], pc["query_tokens"])
	found := false
	for _, n := range doc["notes"].([]any) {
		found = found || strings.HasPrefix(n.(string), note)
	}
	if !found || pc["hit_tokens"].(json.Number) == "0" {
		t.Errorf("engine.prefix_cache %v must carry the figures the text prints (%q…), and hits with shared prefixes", pc, note)
	}

	// A measured run against the embedded server: stdout and summary.json.
	dir := t.TempDir()
	code, out, stderr = kneeEnv(t, benchEnv(t), "bench", "--requests", "8", "--concurrency", "2", "--input-tokens", "32",
		"--output-tokens", "8", "--json", "--quiet", "--no-store", "--out", dir)
	if code != ExitOK {
		t.Fatalf("bench: exit %d: %s", code, stderr)
	}
	validate(t, summary, "knee bench --json", out)
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	validate(t, summary, "summary.json", string(b))

	// Every request failed: infinite statistics are null, still valid.
	code, out, _ = kneeEnv(t, benchEnv(t), "bench", "--url", failingServer(t, http.StatusInternalServerError).URL, "--model", "m", "--requests", "4", "--concurrency", "2",
		"--ignore-eos", "false", "--json", "--quiet", "--no-store")
	if code != ExitFailure {
		t.Fatalf("bench against a failing server: exit %d, want 1", code)
	}
	validate(t, summary, "knee bench --json (all failed)", out)

	// A simulated sweep: stdout and sweep.json.
	sdir := t.TempDir()
	code, out, stderr = kneeCmd(t, "sim", "sweep", "--concurrency", "1,8,32", "--requests", "60", "--seed", "1",
		"--slo", "p95(ttft)<1s", "--json", "--quiet", "--no-store", "--out", sdir)
	if code != ExitOK && code != ExitSLO {
		t.Fatalf("sim sweep: exit %d: %s", code, stderr)
	}
	validate(t, sweepSchema, "knee sim sweep --json", out)
	b, err = os.ReadFile(filepath.Join(sdir, "sweep.json"))
	if err != nil {
		t.Fatal(err)
	}
	validate(t, sweepSchema, "sweep.json", string(b))
}
