package simserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/simengine/enginetest"
)

// testConfig is a small, fast engine: llama-3.1-8b on an H100 with steps
// scaled by scale (1 = as simulated).
func testConfig(t testing.TB, scale float64) Config {
	t.Helper()
	ec := enginetest.H100Llama8B(t, 1)
	ec.StepTimeScale = scale
	ec.MaxModelLen = 8192
	return Config{Engine: ec}
}

func startTest(t *testing.T, mod func(*Config)) (string, *Server) {
	t.Helper()
	cfg := testConfig(t, 1)
	cfg.NoHijack = noHijack
	if mod != nil {
		mod(&cfg)
	}
	url, srv, err := StartLocal(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return url, srv
}

// noHijack runs the tests on net/http's ResponseWriter path (see
// TestResponseWriterPath) instead of hijacked connections.
var noHijack bool

// TestResponseWriterPath runs the streaming tests again with streams written
// through net/http's ResponseWriter, the path used when the server is
// mounted as a plain http.Handler.
func TestResponseWriterPath(t *testing.T) {
	noHijack = true
	defer func() { noHijack = false }()
	for name, f := range map[string]func(*testing.T){
		"ChatStream": TestChatStream, "Faults": TestFaultsBecomeErrorKinds, "Metrics": TestMetricsDeltasMatchRun,
		"Truth": TestTruthAtModestScale, "Cancel": TestQueueLimit429AndCancelFreesBlocks, "Close": TestCloseCutsRunningStreams,
	} {
		t.Run(name, f)
	}
}

func post(t *testing.T, url, path, body string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Post(url+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return resp, b
}

// sseEvents splits an SSE body into its data payloads.
func sseEvents(t *testing.T, body []byte) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

type kneeTiming struct {
	QueueMS      float64   `json:"queue_ms"`
	PrefillMS    float64   `json:"prefill_ms"`
	DecodeMS     float64   `json:"decode_ms"`
	FrontEndMS   float64   `json:"front_end_ms"`
	TokenTimesMS []float64 `json:"token_times_ms"`
	WriteTimesMS []float64 `json:"write_times_ms"`
}

type chunk struct {
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Delta struct {
			Role    *string `json:"role"`
			Content *string `json:"content"`
		} `json:"delta"`
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
		Text         *string `json:"text"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		Prompt     int `json:"prompt_tokens"`
		Completion int `json:"completion_tokens"`
		Total      int `json:"total_tokens"`
	} `json:"usage"`
	Timing *kneeTiming `json:"knee_timing"`
}

func checkTiming(t *testing.T, tm *kneeTiming, n int) {
	t.Helper()
	if tm == nil {
		t.Fatal("no knee_timing on the final chunk")
	}
	if len(tm.TokenTimesMS) != n {
		t.Fatalf("knee_timing has %d token times, want %d", len(tm.TokenTimesMS), n)
	}
	for i := 1; i < n; i++ {
		if tm.TokenTimesMS[i] <= tm.TokenTimesMS[i-1] {
			t.Fatalf("token times not increasing at %d: %v", i, tm.TokenTimesMS)
		}
	}
	// The engine's phases and the modelled front end make up the time to
	// the first token.
	if d := tm.FrontEndMS + tm.QueueMS + tm.PrefillMS - tm.TokenTimesMS[0]; math.Abs(d) > 1e-6 || tm.FrontEndMS <= 0 {
		t.Errorf("front end %v + queue %v + prefill %v != first token %v (want a front end > 0)", tm.FrontEndMS, tm.QueueMS, tm.PrefillMS, tm.TokenTimesMS[0])
	}
	if d := tm.DecodeMS - (tm.TokenTimesMS[n-1] - tm.TokenTimesMS[0]); math.Abs(d) > 1e-6 {
		t.Errorf("decode %v != last − first token %v", tm.DecodeMS, tm.TokenTimesMS[n-1]-tm.TokenTimesMS[0])
	}
	if tm.PrefillMS <= 0 || tm.QueueMS < 0 {
		t.Errorf("phases queue %v prefill %v: want queue >= 0, prefill > 0", tm.QueueMS, tm.PrefillMS)
	}
	// Actual write times: one per token, never before the intended time
	// (the writers get a token only once its time has come), never
	// decreasing. How much later is the machine's business, not asserted.
	if len(tm.WriteTimesMS) != n {
		t.Fatalf("knee_timing has %d write times, want %d (one per token)", len(tm.WriteTimesMS), n)
	}
	const epsMS = 0.001
	for i, w := range tm.WriteTimesMS {
		if w < tm.TokenTimesMS[i]-epsMS {
			t.Errorf("token %d written at %v ms, before its intended %v ms", i, w, tm.TokenTimesMS[i])
		}
		if i > 0 && w < tm.WriteTimesMS[i-1] {
			t.Errorf("write times decrease at %d: %v", i, tm.WriteTimesMS)
		}
	}
}

func TestChatStream(t *testing.T) {
	url, srv := startTest(t, nil)
	for _, usage := range []bool{true, false} {
		body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"hello there"}]}],"max_tokens":7,"stream":true,"stream_options":{"include_usage":%v},"ignore_eos":true,"min_tokens":7}`, srv.Model(), usage)
		t0 := time.Now()
		resp, b := post(t, url, "/v1/chat/completions", body)
		e2e := time.Since(t0)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("status %d %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
		}
		ev := sseEvents(t, b)
		if ev[len(ev)-1] != "[DONE]" {
			t.Fatalf("last event %q, want [DONE]", ev[len(ev)-1])
		}
		var chunks []chunk
		for _, e := range ev[:len(ev)-1] {
			var c chunk
			if err := json.Unmarshal([]byte(e), &c); err != nil {
				t.Fatalf("chunk %q: %v", e, err)
			}
			if c.Object != "chat.completion.chunk" || c.Model != srv.Model() {
				t.Fatalf("chunk object %q model %q", c.Object, c.Model)
			}
			chunks = append(chunks, c)
		}
		if r := chunks[0].Choices[0].Delta.Role; r == nil || *r != "assistant" {
			t.Fatalf("first chunk is not the role chunk: %s", ev[0])
		}
		content := 0
		for _, c := range chunks[1:] {
			if len(c.Choices) > 0 && c.Choices[0].Delta.Content != nil && *c.Choices[0].Delta.Content != "" {
				content++
			}
		}
		if content != 7 {
			t.Fatalf("%d content chunks, want 7", content)
		}
		last := chunks[len(chunks)-1]
		if usage {
			if last.Usage == nil || last.Usage.Prompt != 4 || last.Usage.Completion != 7 || last.Usage.Total != 11 || len(last.Choices) != 0 {
				t.Fatalf("usage chunk %s", ev[len(ev)-2])
			}
			fin := chunks[len(chunks)-2]
			if fin.Choices[0].FinishReason == nil || *fin.Choices[0].FinishReason != "length" {
				t.Fatalf("finish chunk %s", ev[len(ev)-3])
			}
		} else if last.Usage != nil || last.Choices[0].FinishReason == nil {
			t.Fatalf("without include_usage the last chunk should be the finish chunk: %s", ev[len(ev)-2])
		}
		checkTiming(t, last.Timing, 7)
		// Queue and prefill also go out as headers with the first token;
		// they agree with knee_timing.
		for h, want := range map[string]float64{"X-Knee-Queue-Ms": last.Timing.QueueMS, "X-Knee-Prefill-Ms": last.Timing.PrefillMS} {
			got, err := strconv.ParseFloat(resp.Header.Get(h), 64)
			if err != nil || math.Abs(got-want) > 1e-6 {
				t.Errorf("streaming header %s = %q, want %v (knee_timing)", h, resp.Header.Get(h), want)
			}
		}
		if got := time.Duration(last.Timing.TokenTimesMS[6] * 1e6); got > e2e {
			t.Errorf("last token intended at %v after receipt, but the whole request took %v", got, e2e)
		}
	}
}

func TestCompletionsAndNonStreaming(t *testing.T) {
	url, _ := startTest(t, nil)
	resp, b := post(t, url, "/v1/completions", `{"prompt":"one two three four","max_tokens":5,"stream":true}`)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	ev := sseEvents(t, b)
	var c chunk
	json.Unmarshal([]byte(ev[0]), &c)
	if c.Object != "text_completion" || c.Choices[0].Text == nil || *c.Choices[0].Text == "" {
		t.Fatalf("first completions chunk %s", ev[0])
	}
	json.Unmarshal([]byte(ev[len(ev)-2]), &c)
	checkTiming(t, c.Timing, 5)

	for _, path := range []string{"/v1/chat/completions", "/v1/completions"} {
		body := `{"messages":[{"role":"user","content":"hi"}],"max_tokens":4}`
		if path == "/v1/completions" {
			body = `{"prompt":[1,2,3,4,5,6],"max_tokens":4}`
		}
		resp, b := post(t, url, path, body)
		if resp.StatusCode != 200 || resp.Header.Get("X-Knee-Queue-Ms") == "" || resp.Header.Get("X-Knee-Prefill-Ms") == "" {
			t.Fatalf("%s: %d %v %s", path, resp.StatusCode, resp.Header, b)
		}
		var c chunk
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatalf("%s: %v: %s", path, err, b)
		}
		text := c.Choices[0].Message.Content
		if c.Choices[0].Text != nil {
			text = *c.Choices[0].Text
		}
		if len(strings.Fields(text)) != 4 || c.Usage == nil || c.Usage.Completion != 4 {
			t.Fatalf("%s: body %s", path, b)
		}
		if path == "/v1/completions" && c.Usage.Prompt != 6 {
			t.Fatalf("token-id prompt counted as %d tokens, want 6", c.Usage.Prompt)
		}
		checkTiming(t, c.Timing, 4)
	}
}

func TestModelsHealthRoutes(t *testing.T) {
	url, srv := startTest(t, nil)
	resp, err := http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var ml struct {
		Data []struct {
			ID          string `json:"id"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
	}
	json.NewDecoder(resp.Body).Decode(&ml)
	resp.Body.Close()
	if len(ml.Data) != 1 || ml.Data[0].ID != srv.Model() || ml.Data[0].MaxModelLen != 8192 {
		t.Fatalf("/v1/models: %+v", ml)
	}
	for _, name := range []string{"llama-3.1-8b", "meta-llama/Llama-3.1-8B-Instruct"} {
		if resp, b := post(t, url, "/v1/completions", `{"model":"`+name+`","prompt":"x","max_tokens":1}`); resp.StatusCode != 200 {
			t.Errorf("model %q: %d %s", name, resp.StatusCode, b)
		}
	}
	for path, want := range map[string]int{"/health": 200, "/metrics": 200, "/nope": 404} {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
}

func TestErrorBodies(t *testing.T) {
	url, srv := startTest(t, nil)
	long := strings.Repeat("hello ", 8200)
	cases := []struct {
		name, path, body string
		status           int
		param, code      string
	}{
		{"invalid json", "/v1/chat/completions", `{"messages":`, 400, "", "invalid_json"},
		{"missing messages", "/v1/chat/completions", `{"max_tokens":3}`, 400, "messages", ""},
		{"empty messages", "/v1/chat/completions", `{"messages":[]}`, 400, "messages", ""},
		{"missing prompt", "/v1/completions", `{"max_tokens":3}`, 400, "prompt", ""},
		{"bad max_tokens", "/v1/completions", `{"prompt":"x","max_tokens":0}`, 400, "max_tokens", ""},
		{"min over max", "/v1/completions", `{"prompt":"x","max_tokens":2,"min_tokens":3}`, 400, "min_tokens", ""},
		{"stream_options without stream", "/v1/completions", `{"prompt":"x","stream_options":{"include_usage":true}}`, 400, "stream_options", ""},
		{"unknown model", "/v1/chat/completions", `{"model":"gpt-9","messages":[{"role":"user","content":"x"}]}`, 404, "model", "model_not_found"},
		{"prompt over context", "/v1/completions", `{"prompt":"` + long + `","max_tokens":10}`, 400, "prompt", "context_length_exceeded"},
		{"output over context", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"max_tokens":9000}`, 400, "messages", "context_length_exceeded"},
	}
	for _, c := range cases {
		resp, b := post(t, url, c.path, c.body)
		if resp.StatusCode != c.status {
			t.Errorf("%s: status %d, want %d: %s", c.name, resp.StatusCode, c.status, b)
			continue
		}
		var raw map[string]map[string]any
		if err := json.Unmarshal(b, &raw); err != nil {
			t.Errorf("%s: body is not JSON: %s", c.name, b)
			continue
		}
		e := raw["error"]
		for _, k := range []string{"message", "type", "param", "code"} {
			if _, ok := e[k]; !ok {
				t.Errorf("%s: error body lacks %q: %s", c.name, k, b)
			}
		}
		if msg, _ := e["message"].(string); msg == "" {
			t.Errorf("%s: empty message", c.name)
		}
		if p, _ := e["param"].(string); p != c.param {
			t.Errorf("%s: param %q, want %q", c.name, p, c.param)
		}
		if code, _ := e["code"].(string); code != c.code {
			t.Errorf("%s: code %q, want %q", c.name, code, c.code)
		}
	}
	if st := srv.EngineStats(); st.Submitted != 0 {
		t.Errorf("bad requests reached the engine: %d submitted", st.Submitted)
	}
}

// waitFor polls cond for up to 10 s (generous for a busy machine).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestQueueLimit429AndCancelFreesBlocks(t *testing.T) {
	url, srv := startTest(t, func(c *Config) {
		c.Engine.MaxNumSeqs = 1
		c.Engine.MaxNumBatchedTokens = 2048
		c.Engine.QueueLimit = 1
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := make(chan error, 2)
	long := `{"messages":[{"role":"user","content":"hello"}],"max_tokens":4000,"stream":true}`
	for i := 0; i < 2; i++ {
		go func() {
			req, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/chat/completions", strings.NewReader(long))
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			errs <- err
		}()
		// one running, then one waiting
		want := i + 1
		waitFor(t, "requests admitted", func() bool { s := srv.EngineStats(); return s.Running+s.Waiting == want })
	}
	resp, b := post(t, url, "/v1/chat/completions", long)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("third request: %d Retry-After %q: %s", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	if !strings.Contains(string(b), `"type":"rate_limit_error"`) {
		t.Errorf("429 body %s", b)
	}
	if st := srv.EngineStats(); st.KVBlocksUsed == 0 {
		t.Fatal("running request holds no KV blocks")
	}
	cancel() // both clients go away
	waitFor(t, "slots and blocks freed", func() bool {
		s := srv.EngineStats()
		return s.Running == 0 && s.Waiting == 0 && s.KVBlocksUsed == 0 && s.Canceled == 2
	})
	for i := 0; i < 2; i++ {
		<-errs
	}
	// The server still serves.
	resp, b = post(t, url, "/v1/completions", `{"prompt":"x","max_tokens":2}`)
	if resp.StatusCode != 200 {
		t.Fatalf("after cancel: %d %s", resp.StatusCode, b)
	}
}

func TestDescribeAndBadConfig(t *testing.T) {
	_, srv := startTest(t, func(c *Config) { c.Faults = Faults{CutRate: 0.1} })
	d := srv.Describe()
	for _, want := range []string{"Llama-3.1-8B", "H100", "max_num_seqs", "cut mid-stream"} {
		if !strings.Contains(d, want) {
			t.Errorf("Describe() = %q lacks %q", d, want)
		}
	}
	cfg := testConfig(t, 1)
	cfg.Faults.ErrorRate = 1.5
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "error rate") {
		t.Errorf("error rate 1.5 accepted: %v", err)
	}
	cfg = testConfig(t, 1)
	cfg.Engine.TP = 3
	if _, err := New(cfg); err == nil {
		t.Error("tp 3 accepted")
	}
	_ = simengine.BlockTokens
}

// A stalled stream's held tokens leave together when the stall ends; their
// write times stay one per token and never before the intended times, on
// hijacked connections and through net/http's buffered ResponseWriter.
func TestStallWriteTimes(t *testing.T) {
	for _, nh := range []bool{false, true} {
		url, _ := startTest(t, func(c *Config) {
			c.NoHijack = nh
			c.Faults = Faults{StallRate: 1, StallDuration: 40 * time.Millisecond}
		})
		resp, b := post(t, url, "/v1/completions", `{"prompt":"one two","max_tokens":12,"stream":true}`)
		if resp.StatusCode != 200 {
			t.Fatalf("no-hijack=%v: %d %s", nh, resp.StatusCode, b)
		}
		ev := sseEvents(t, b)
		var c chunk
		if err := json.Unmarshal([]byte(ev[len(ev)-2]), &c); err != nil {
			t.Fatalf("no-hijack=%v: final chunk %q: %v", nh, ev[len(ev)-2], err)
		}
		tm := c.Timing
		if tm == nil || len(tm.TokenTimesMS) != 12 || len(tm.WriteTimesMS) != 12 {
			t.Fatalf("no-hijack=%v: knee_timing %+v, want 12 token and 12 write times", nh, tm)
		}
		for i, w := range tm.WriteTimesMS {
			if w < tm.TokenTimesMS[i]-0.001 || (i > 0 && w < tm.WriteTimesMS[i-1]) {
				t.Errorf("no-hijack=%v: token %d written at %v ms (intended %v): write times %v", nh, i, w, tm.TokenTimesMS[i], tm.WriteTimesMS)
			}
		}
		stalled := false
		for i := 1; i < 12; i++ {
			if c.Timing.TokenTimesMS[i]-c.Timing.TokenTimesMS[i-1] >= 40 {
				stalled = true
			}
		}
		if !stalled {
			t.Errorf("no-hijack=%v: no 40 ms gap in the token times %v", nh, c.Timing.TokenTimesMS)
		}
	}
}
