package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestServeBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "--gpu", "nope"},
		{"serve", "--fault-error-rate", "2"},
		{"serve", "--fault-stall-rate", "0.1", "--fault-stall", "0s"},
		{"serve", "--default-max-tokens", "0"},
		{"serve", "--tp", "0"},
		{"serve", "extra"},
	} {
		code, _, errs := kneeCmd(t, args...)
		if code != ExitUsage || errs == "" {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 with a message", args, code, errs)
		}
	}
}

// startServe runs knee serve with args on a free port until ctx ends: its
// base URL, and where its exit code arrives.
func startServe(t *testing.T, ctx context.Context, args ...string) (string, <-chan int) {
	t.Helper()
	pr, pw := io.Pipe()
	codeCh := make(chan int, 1)
	go func() {
		code := MainEnv(ctx, &Env{Stdin: strings.NewReader(""), Stdout: pw, Stderr: io.Discard},
			append([]string{"serve", "--addr", "127.0.0.1:0"}, args...))
		pw.Close()
		codeCh <- code
	}()
	sc := bufio.NewScanner(pr)
	var url string
	for sc.Scan() {
		if m := regexp.MustCompile(`listening on (http://[0-9.:]+)/v1`).FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
			break
		}
	}
	if url == "" {
		t.Fatal("knee serve printed no URL")
	}
	go io.Copy(io.Discard, pr)
	return url, codeCh
}

// TestServeRuns starts knee serve on a free port, streams from it, and
// stops it with the context (as Ctrl-C does).
func TestServeRuns(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url, codeCh := startServe(t, ctx, "--model", "llama-3.1-8b", "--max-model-len", "4096", "--queue-limit", "8")
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"llama-3.1-8b","messages":[{"role":"user","content":"hi"}],"max_tokens":3,"stream":true,"stream_options":{"include_usage":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"knee_timing"`) || !strings.HasSuffix(string(b), "data: [DONE]\n\n") {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	resp, err = http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var models struct {
		Data []struct {
			MaxModelLen int `json:"max_model_len"`
		} `json:"data"`
	}
	json.NewDecoder(resp.Body).Decode(&models)
	resp.Body.Close()
	if len(models.Data) != 1 || models.Data[0].MaxModelLen != 4096 {
		t.Errorf("/v1/models %+v", models)
	}
	cancel()
	select {
	case code := <-codeCh:
		if code != 0 {
			t.Errorf("exit %d after interrupt", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("knee serve did not stop")
	}
}
