package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestServeLoRAModules: knee serve --lora-modules serves the adapters the
// docs' own mix file names, so bench --mix against it loses nothing to
// "model does not exist"; /v1/models lists them; bad lists exit 2.
func TestServeLoRAModules(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url, _ := startServe(t, ctx, "--lora-modules", "adapter-summarize=/models/sum,adapter-sql=/models/sql", "--max-loras", "2")
	resp, err := http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var models struct{ Data []struct{ ID string } }
	json.NewDecoder(resp.Body).Decode(&models)
	resp.Body.Close()
	var ids []string
	for _, m := range models.Data {
		ids = append(ids, m.ID)
	}
	if got := strings.Join(ids, " "); !strings.Contains(got, "adapter-summarize") || !strings.Contains(got, "adapter-sql") {
		t.Errorf("/v1/models lists %q, want both adapters", got)
	}
	code, out, errs := kneeCmd(t, "bench", "--url", url, "--model", "llama-3.1-8b", "--mix", "../../docs/examples/mix-three-classes.yaml",
		"--concurrency", "4", "--requests", "20", "--json", "--quiet", "--no-store")
	var sum struct{ Requests, Errors int }
	if err := json.Unmarshal([]byte(out), &sum); err != nil || code != ExitOK && code != ExitSLO || sum.Requests != 20 || sum.Errors != 0 {
		t.Errorf("bench --mix against knee serve --lora-modules: exit %d, %+v, %v: %s", code, sum, err, errs)
	}
	for _, bad := range [][]string{{"--lora-modules", "=x"}, {"--lora-modules", "a=x,a=y"}, {"--lora-modules", "llama-3.1-8b=x", "--served-model-name", "llama-3.1-8b"},
		{"--lora-modules", "a=x", "--max-loras", "0"}} {
		if code, _, errs := kneeCmd(t, append([]string{"serve"}, bad...)...); code != ExitUsage || !strings.Contains(errs, "--") {
			t.Errorf("serve %v: exit %d, %q; want 2 naming the flag", bad, code, errs)
		}
	}
}
