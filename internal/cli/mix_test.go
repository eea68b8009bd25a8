package cli

import (
	"cmp"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/record"
)

// threeClassMix: two LoRA adapters and the base model, with different
// shapes; chat's TTFT objective is far tighter than anything else's.
const threeClassMix = `seed: 11
classes:
  - name: chat
    share: 0.5
    input_tokens: "256"
    output_tokens: "16"
    model: tenant-chat
    slo: ["p95(ttft)<1ms"]
  - name: summarize
    share: 0.3
    input_tokens: "1024"
    output_tokens: "8"
    model: tenant-sum
  - name: base
    share: 0.2
    input_tokens: "128"
    output_tokens: "24"
slos:
  summarize: ["p95(e2e)<60s"]
`

func writeMix(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "mix.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

type classJSON struct {
	Name    string `json:"name"`
	SLOsMet *bool  `json:"slos_met"`
	Summary struct {
		Requests     int   `json:"requests"`
		Completed    int   `json:"completed"`
		OutputTokens int64 `json:"output_tokens"`
		InputTokens  int64 `json:"input_tokens"`
	} `json:"summary"`
}

// TestMixAgainstEmbeddedServer: a three-class mix against knee's server
// (which answers for the adapters' names): records carry class and model,
// per-class figures add up to the overall ones, the tightest SLO's class
// fails and the run exits 3 naming it, and the seed reproduces the mix.
func TestMixAgainstEmbeddedServer(t *testing.T) {
	mix := writeMix(t, threeClassMix)
	run := func() (map[string]any, []classJSON, []string, string) {
		out := t.TempDir()
		code, stdout, stderr := kneeEnv(t, benchEnv(t), "bench", "--no-store", "--quiet", "--json", "--out", out,
			"--mix", mix, "--concurrency", "8", "--requests", "40")
		if code != ExitSLO {
			t.Fatalf("exit %d, want 3 (chat's SLO fails); stderr:\n%s", code, stderr)
		}
		var top map[string]any
		var rep struct {
			Classes []classJSON `json:"classes"`
		}
		if err := json.Unmarshal([]byte(stdout), &top); err != nil {
			t.Fatal(err)
		}
		json.Unmarshal([]byte(stdout), &rep)
		recs := readRecords(t, filepath.Join(out, "records.jsonl"))
		slices.SortFunc(recs, func(a, b record.Request) int { return cmp.Compare(a.ID, b.ID) })
		var seq []string
		for _, r := range recs {
			if !r.OK() {
				t.Errorf("record %d (%s) failed: %s %s", r.ID, r.Class, r.Error, r.ErrorMessage)
			}
			seq = append(seq, r.Class)
		}
		return top, rep.Classes, seq, stderr
	}
	top, classes, seq, stderr := run()
	if len(classes) != 3 || classes[0].Name != "chat" || classes[1].Name != "summarize" || classes[2].Name != "base" {
		t.Fatalf("classes %+v: want chat, summarize, base in file order", classes)
	}
	var req, done int
	var outTok, inTok int64
	for _, c := range classes {
		req += c.Summary.Requests
		done += c.Summary.Completed
		outTok += c.Summary.OutputTokens
		inTok += c.Summary.InputTokens
	}
	if req != int(top["requests"].(float64)) || done != int(top["completed"].(float64)) ||
		outTok != int64(top["output_tokens"].(float64)) || inTok != int64(top["input_tokens"].(float64)) {
		t.Errorf("classes sum to %d requests, %d completed, %d/%d tokens; overall %v, %v, %v/%v", req, done, inTok, outTok,
			top["requests"], top["completed"], top["input_tokens"], top["output_tokens"])
	}
	if classes[0].SLOsMet == nil || *classes[0].SLOsMet || classes[1].SLOsMet == nil || !*classes[1].SLOsMet {
		t.Errorf("chat must fail its 1 ms TTFT objective and summarize meet its 60 s one: %+v", classes)
	}
	if !strings.Contains(stderr, "chat: p95(ttft)<1ms") {
		t.Errorf("stderr does not name the failing class's objective:\n%s", stderr)
	}
	_, _, again, _ := run()
	if strings.Join(seq, ",") != strings.Join(again, ",") {
		t.Errorf("the same seed drew different classes:\n%v\n%v", seq, again)
	}
}

func TestMixFileErrorsExit2(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"unknown key", "classes:\n  - name: a\n    share: 1\n    input_tokens: \"8\"\n    output_tokens: \"8\"\n    colour: red\n", "mix.yaml:6:"},
		{"shares", "classes:\n  - name: a\n    share: 0.6\n    input_tokens: \"8\"\n    output_tokens: \"8\"\n", "mix.yaml:2: the classes' shares sum to 0.6; want 1"},
		{"unknown class", "classes:\n  - name: a\n    share: 1\n    input_tokens: \"8\"\n    output_tokens: \"8\"\nslos:\n  b: [\"p95(ttft)<1s\"]\n", "mix.yaml:7: slos names class \"b\""},
		{"bad slo", "classes:\n  - name: a\n    share: 1\n    input_tokens: \"8\"\n    output_tokens: \"8\"\n    slo: [\"p95(ttft)<<1s\"]\n", "mix.yaml:2: class a:"},
	} {
		code, _, stderr := kneeEnv(t, benchEnv(t), "bench", "--no-store", "--quiet", "--mix", writeMix(t, tc.body), "--concurrency", "1", "--requests", "1")
		if code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and %q", tc.name, code, stderr, tc.want)
		}
	}
}
