package openai

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"image"
	_ "image/jpeg"
	_ "image/png"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEndpointsOfTheNewAPIs(t *testing.T) {
	for _, c := range []struct{ base, api, path, want string }{
		{"http://h:8000", APIEmbeddings, "", "http://h:8000/v1/embeddings"},
		{"http://h:8000/v1", APIMessages, "", "http://h:8000/v1/messages"},
		{"http://h:8000", APIRerank, "", "http://h:8000/v1/rerank"},
		{"http://h:8000/v1/", APIRerank, RerankVLLM, "http://h:8000/v1/rerank"},
		{"http://h:8000/v1", APIRerank, RerankTEI, "http://h:8000/rerank"},
		{"http://h:8000", APIChat, RerankTEI, "http://h:8000/v1/chat/completions"},
	} {
		got, err := EndpointFor(c.base, c.api, c.path)
		if err != nil || got != c.want {
			t.Errorf("EndpointFor(%q, %q, %q) = %q, %v; want %q", c.base, c.api, c.path, got, err, c.want)
		}
	}
	if _, err := EndpointFor("http://h", APIRerank, "/v3/rank"); err == nil || !strings.Contains(err.Error(), "/v1/rerank") {
		t.Errorf("bad rerank path: %v", err)
	}
}

func TestTextsAreDistinctAndAsLong(t *testing.T) {
	p := "the quick brown fox jumps over the lazy dog again and again ünïcode"
	if ts := Texts("ünïcödé", 3); ts[1] == ts[0] || !utf8.ValidString(ts[1]+ts[2]) {
		t.Errorf("no spaces: %q", ts)
	}
	ts := Texts(p, 5)
	seen := map[string]bool{}
	for _, s := range ts {
		if seen[s] {
			t.Errorf("text repeated: %q", s)
		}
		seen[s] = true
		if len(s) != len(p) || len(strings.Fields(s)) != len(strings.Fields(p)) {
			t.Errorf("len %d, %d words; want the prompt's %d, %d: %q", len(s), len(strings.Fields(s)), len(p), len(strings.Fields(p)), s)
		}
		if !utf8.ValidString(s) {
			t.Errorf("text cut inside a rune: %q", s)
		}
	}
}

func TestItemsBodies(t *testing.T) {
	var v struct {
		Model     string
		Input     []string
		Query     string
		Documents []string
		Texts     []string
	}
	body := AppendBody(nil, Params{API: APIEmbeddings, Model: "m", Prompt: "a b c d", Items: 3})
	if err := json.Unmarshal(body, &v); err != nil || v.Model != "m" || len(v.Input) != 3 {
		t.Fatalf("embeddings body %s: %+v %v", body, v, err)
	}
	v.Model = ""
	body = AppendBody(nil, Params{API: APIRerank, Model: "m", Prompt: "a b c d", Items: 4})
	if err := json.Unmarshal(body, &v); err != nil || v.Model != "m" || v.Query == "" || len(v.Documents) != 4 {
		t.Fatalf("vLLM rerank body %s: %+v %v", body, v, err)
	}
	body = AppendBody(nil, Params{API: APIRerank, Model: "m", Prompt: "a b c d", Items: 2, RerankPath: RerankTEI})
	if bytes.Contains(body, []byte(`"documents"`)) || bytes.Contains(body, []byte(`"model"`)) {
		t.Errorf("TEI rerank body has vLLM's fields: %s", body)
	}
	if err := json.Unmarshal(body, &v); err != nil || len(v.Texts) != 2 {
		t.Fatalf("TEI rerank body %s: %+v %v", body, v, err)
	}
}

func TestMessagesBodyWithImages(t *testing.T) {
	img, err := SyntheticImage(7, 64, 32, "png")
	if err != nil {
		t.Fatal(err)
	}
	body := AppendBody(nil, Params{API: APIMessages, Model: "m", Prompt: "hi", Images: []Image{img},
		History: []Message{{"user", "a"}, {"assistant", "b"}}})
	var v struct {
		MaxTokens int `json:"max_tokens"`
		Stream    bool
		Messages  []struct {
			Role    string
			Content json.RawMessage
		}
	}
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if v.MaxTokens != DefaultMessagesMaxTokens || !v.Stream || len(v.Messages) != 3 {
		t.Fatalf("body %+v", v)
	}
	var parts []struct {
		Type   string
		Text   string
		Source struct{ Type, MediaType, Data string } `json:"source"`
	}
	if err := json.Unmarshal(v.Messages[2].Content, &parts); err != nil || len(parts) != 2 {
		t.Fatalf("content %s: %v", v.Messages[2].Content, err)
	}
	raw, err := base64.StdEncoding.DecodeString(parts[1].Source.Data)
	if err != nil || parts[1].Type != "image" || !bytes.Equal(raw, img.Data) {
		t.Fatalf("image part %+v: %v", parts[1], err)
	}
	// Chat: an image_url data URL.
	body = AppendBody(nil, Params{API: APIChat, Model: "m", Prompt: "hi", Images: []Image{img}})
	if !bytes.Contains(body, []byte(`"image_url":{"url":"data:image/png;base64,`)) {
		t.Errorf("chat body has no data URL: %.200s", body)
	}
}

func TestSyntheticImage(t *testing.T) {
	for _, f := range ImageFormats {
		a, err := SyntheticImage(1, 300, 200, f)
		if err != nil {
			t.Fatal(err)
		}
		cfg, name, err := image.DecodeConfig(bytes.NewReader(a.Data))
		if err != nil || cfg.Width != 300 || cfg.Height != 200 || "image/"+name != a.MediaType {
			t.Errorf("%s: decoded %+v %q %v, media %s", f, cfg, name, err, a.MediaType)
		}
		b, _ := SyntheticImage(1, 300, 200, f)
		c, _ := SyntheticImage(2, 300, 200, f)
		if !bytes.Equal(a.Data, b.Data) || bytes.Equal(a.Data, c.Data) {
			t.Errorf("%s: one seed must give the same bytes, two seeds different ones", f)
		}
	}
	if _, err := SyntheticImage(1, 0, 10, "png"); err == nil {
		t.Error("0 wide accepted")
	}
	if _, err := SyntheticImage(1, 10, 10, "gif"); err == nil {
		t.Error("gif accepted")
	}
}

func TestDecodeEmbeddings(t *testing.T) {
	for _, c := range []struct {
		name, body string
		want       int
		items      int
		usage      int
		errType    string
		bad        string
	}{
		{"vLLM", `{"object":"list","data":[{"index":1,"object":"embedding","embedding":[0.1,-2e-3]},{"index":0,"embedding":[1]}],"usage":{"prompt_tokens":12,"total_tokens":12}}`, 2, 2, 12, "", ""},
		{"base64", `{"data":[{"embedding":"AAAA"}]}`, 1, 1, -1, "", ""},
		{"too few is the caller's to judge", `{"data":[{"embedding":[1]}]}`, 3, 1, -1, "", ""},
		{"error", `{"error":{"message":"too long","type":"BadRequestError","code":400}}`, 1, 0, -1, "BadRequestError", ""},
		{"object error", `{"object":"error","message":"m","type":"T","code":500}`, 1, 0, -1, "T", ""},
		{"no data", `{"usage":{"prompt_tokens":3}}`, 1, 0, 0, "", "no \"data\""},
		{"empty vector", `{"data":[{"embedding":[]}]}`, 1, 0, 0, "", "no embedding"},
		{"string in vector", `{"data":[{"embedding":[1,"x"]}]}`, 1, 0, 0, "", "non-number"},
		{"index out of range", `{"data":[{"index":4,"embedding":[1]}]}`, 2, 0, 0, "", "index 4"},
		{"index twice", `{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[1]}]}`, 2, 0, 0, "", "twice"},
		{"negative index", `{"data":[{"index":-1,"embedding":[1]}]}`, 2, 0, 0, "", "negative"},
		{"trailing", `{"data":[{"embedding":[1]}]} x`, 1, 0, 0, "", "after the answer"},
		{"array", `[1,2]`, 1, 0, 0, "", "want an object"},
		{"html", `<html>`, 1, 0, 0, "", "want an object"},
	} {
		a, err := DecodeEmbeddings([]byte(c.body), c.want)
		if c.bad != "" {
			if !errors.Is(err, ErrPayload) || !strings.Contains(err.Error(), c.bad) {
				t.Errorf("%s: err %v, want one saying %q", c.name, err, c.bad)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if c.errType != "" {
			if a.Err == nil || a.Err.Type != c.errType {
				t.Errorf("%s: Err %+v, want type %s", c.name, a.Err, c.errType)
			}
			continue
		}
		if a.Err != nil || a.Items != c.items || (c.usage >= 0) != a.HasUsage || (a.HasUsage && a.PromptTokens != c.usage) {
			t.Errorf("%s: %+v, want %d items, usage %d", c.name, a, c.items, c.usage)
		}
	}
}

func TestDecodeRerank(t *testing.T) {
	for _, c := range []struct {
		name, body string
		items      int
		usage      int
		errType    string
		bad        string
	}{
		{"vLLM", `{"id":"r","model":"m","usage":{"total_tokens":40},"results":[{"index":1,"document":{"text":"x"},"relevance_score":0.9},{"index":0,"relevance_score":-1.5}]}`, 2, 40, "", ""},
		{"TEI", `[{"index":1,"score":0.99},{"index":0,"score":0.01}]`, 2, -1, "", ""},
		{"TEI error", `{"error":"Input validation error","error_type":"Validation"}`, 0, -1, "Validation", ""},
		{"vLLM error", `{"object":"error","message":"bad","type":"BadRequestError","code":400}`, 0, -1, "BadRequestError", ""},
		{"no index", `[{"score":1}]`, 0, 0, "", "no index"},
		{"no score", `{"results":[{"index":0}]}`, 0, 0, "", "no score"},
		{"string score", `[{"index":0,"score":"high"}]`, 0, 0, "", "not a number"},
		{"index out of range", `[{"index":2,"score":1}]`, 0, 0, "", "index 2"},
		{"twice", `[{"index":0,"score":1},{"index":0,"score":1}]`, 0, 0, "", "twice"},
		{"neither", `{"data":[]}`, 0, 0, "", "no \"results\""},
		{"cut", `[{"index":0,"sc`, 0, 0, "", ""},
	} {
		a, err := DecodeRerank([]byte(c.body), 2)
		if c.name == "cut" {
			if !errors.Is(err, ErrPayload) {
				t.Errorf("cut: %v", err)
			}
			continue
		}
		if c.bad != "" {
			if !errors.Is(err, ErrPayload) || !strings.Contains(err.Error(), c.bad) {
				t.Errorf("%s: err %v, want one saying %q", c.name, err, c.bad)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if c.errType != "" {
			if a.Err == nil || a.Err.Type != c.errType {
				t.Errorf("%s: Err %+v, want type %s", c.name, a.Err, c.errType)
			}
			continue
		}
		if a.Err != nil || a.Items != c.items || (c.usage >= 0) != a.HasUsage || (a.HasUsage && a.PromptTokens != c.usage) {
			t.Errorf("%s: %+v", c.name, a)
		}
	}
}

// A Messages stream as Anthropic documents it, every event type in order.
var messagesStream = []string{
	`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"usage":{"input_tokens":25,"cache_read_input_tokens":5,"output_tokens":1}}}`,
	`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
	`{"type":"ping"}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""}}`,
	`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}`,
	`{"type":"content_block_stop","index":0}`,
	`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}`,
	`{"type":"message_stop"}`,
}

func TestDecodeMessagesEveryEvent(t *testing.T) {
	var c Chunk
	type got struct {
		content, done, empty, usage, noPrompt bool
		prompt, completion                    int
		finish                                string
	}
	want := []got{
		{usage: true, prompt: 30, completion: 1},
		{},
		{empty: true},
		{content: true},
		{},
		{content: true},
		{},
		{usage: true, noPrompt: true, completion: 15, finish: "end_turn"},
		{done: true},
	}
	for i, ev := range messagesStream {
		if err := DecodeMessages([]byte(ev), &c); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		g := got{c.Content, c.Done, c.Empty, c.HasUsage, c.NoPromptTokens, c.PromptTokens, c.CompletionTokens, c.FinishReason}
		if g != want[i] || c.Err != nil {
			t.Errorf("event %d %s: %+v, want %+v", i, ev, g, want[i])
		}
		if i == 0 && (!c.HasCached || c.CachedTokens != 5) {
			t.Errorf("message_start: cached %v %d, want 5 (cache_read_input_tokens)", c.HasCached, c.CachedTokens)
		}
	}
}

func TestDecodeMessagesErrorsClassified(t *testing.T) {
	var c Chunk
	for body, code := range map[string]int{
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`: 529,
		`{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`:  429,
		`{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}`:   400,
		`{"type":"error","error":{"type":"api_error","message":"internal"}}`:          500,
		`{"type":"error","error":{"type":"something_new","message":"?"}}`:             0,
		`{"error":{"type":"api_error","message":"no type at the top"}}`:               500,
		`{"type":"error"}`: 0,
	} {
		if err := DecodeMessages([]byte(body), &c); err != nil {
			t.Errorf("%s: %v", body, err)
			continue
		}
		if c.Err == nil || c.Err.Code != code || c.Content || c.Done {
			t.Errorf("%s: Err %+v, want code %d", body, c.Err, code)
		}
	}
	for _, bad := range []string{`{"index":0}`, `{"type":"content_block_delta","delta":{"text":5}}`, `[1]`, `{"type":"ping"} {}`, `event: ping`} {
		if err := DecodeMessages([]byte(bad), &c); !errors.Is(err, ErrPayload) {
			t.Errorf("%s: %v, want ErrPayload", bad, err)
		}
	}
	if err := DecodeMessages([]byte(`{"type":"future_event","x":[1]}`), &c); err != nil || c.Content || c.Done || c.Err != nil {
		t.Errorf("an unknown event type must be ignored: %v %+v", err, c)
	}
}

// BenchmarkSyntheticImage is the client's cost of one 512×512 image,
// drawn and encoded (paid before the request's send, in prepare).
func BenchmarkSyntheticImage(b *testing.B) {
	for _, f := range ImageFormats {
		b.Run(f, func(b *testing.B) {
			for i := range b.N {
				if _, err := SyntheticImage(uint64(i), 512, 512, f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestParseImageSize(t *testing.T) {
	for in, want := range map[string][2]int{"": {512, 512}, "640x480": {640, 480}, "28X28": {28, 28}} {
		if w, h, err := ParseImageSize(in); err != nil || w != want[0] || h != want[1] {
			t.Errorf("%q: %d×%d %v", in, w, h, err)
		}
	}
	for _, bad := range []string{"512", "0x5", "5x0", "axb", "9000x10", "-1x5", "5x5x5"} {
		if _, _, err := ParseImageSize(bad); err == nil || !strings.Contains(err.Error(), "WIDTHxHEIGHT") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
