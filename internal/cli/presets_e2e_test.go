package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// The mixture-of-experts and FP8 presets run end to end: knee sim on each,
// with the physics they exist for (Qwen3-30B-A3B reads ~3B active
// parameters a token at one user, so it decodes faster than the dense
// Qwen3-8B; FP8 weights halve Llama-3.1-8B's weight reads), and knee serve
// streams from each.
func TestMoEAndFP8PresetsEndToEnd(t *testing.T) {
	tpot := func(model, tp string) float64 {
		t.Helper()
		var s struct {
			Completed int                   `json:"completed"`
			TPOT      struct{ P50 float64 } `json:"tpot_ms"`
		}
		simJSON(t, &s, "--model", model, "--tp", tp, "--concurrency", "1", "--requests", "4",
			"--input-tokens", "256", "--output-tokens", "64", "--max-model-len", "4096")
		if s.Completed != 4 || !(s.TPOT.P50 > 0) {
			t.Fatalf("knee sim --model %s: %d completed, TPOT %v", model, s.Completed, s.TPOT.P50)
		}
		return s.TPOT.P50
	}
	moe, dense := tpot("qwen3-30b-a3b", "1"), tpot("qwen3-8b", "1")
	fp8, bf16 := tpot("llama-3.1-8b-fp8", "1"), tpot("llama-3.1-8b", "1")
	mixtral, fp870 := tpot("mixtral-8x7b", "2"), tpot("llama-3.1-70b-fp8", "2")
	t.Logf("TPOT at one user: Qwen3-30B-A3B %.2f ms, Qwen3-8B %.2f; Llama-3.1-8B FP8 %.2f, BF16 %.2f; Mixtral-8x7B TP2 %.2f, Llama-3.1-70B FP8 TP2 %.2f",
		moe, dense, fp8, bf16, mixtral, fp870)
	if moe >= dense {
		t.Errorf("Qwen3-30B-A3B decodes at %.2f ms a token, Qwen3-8B at %.2f: want the MoE's ~3B active parameters faster", moe, dense)
	}
	if r := fp8 / bf16; r < 0.45 || r > 0.75 {
		t.Errorf("FP8/BF16 TPOT %.2f: want about half the weight reads (plus the same fixed costs)", r)
	}
	for _, c := range [][]string{{"--model", "qwen3-30b-a3b"}, {"--model", "llama-3.1-70b-fp8", "--tp", "2"}} {
		ctx, cancel := context.WithCancel(context.Background())
		url, codeCh := startServe(t, ctx, append(c, "--max-model-len", "4096")...)
		var models struct {
			Data []struct{ ID string } `json:"data"`
		}
		if r, err := http.Get(url + "/v1/models"); err != nil {
			t.Fatal(err)
		} else {
			err = json.NewDecoder(r.Body).Decode(&models)
			r.Body.Close()
			if err != nil || len(models.Data) != 1 {
				t.Fatalf("knee serve %v: /v1/models: %v %+v", c, err, models)
			}
		}
		resp, err := http.Post(url+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"`+models.Data[0].ID+`","messages":[{"role":"user","content":"hi"}],"max_tokens":4,"stream":true}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		<-codeCh
		if resp.StatusCode != 200 || !strings.HasSuffix(string(b), "data: [DONE]\n\n") || strings.Count(string(b), `"content"`) < 4 {
			t.Errorf("knee serve %v: %d %s", c, resp.StatusCode, b)
		}
	}
}
