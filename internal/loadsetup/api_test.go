package loadsetup

import (
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/openai"
)

func TestEOSForAPI(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		flag, api string
		sent      EOS
		note, err string
	}{
		{"auto", openai.APIChat, EOS{Auto: true}, "", ""},
		{"true", openai.APICompletions, EOS{Value: true}, "", ""},
		{"auto", openai.APIOllama, EOS{}, "Ollama's native API has no ignore_eos", ""},
		{"true", openai.APIOllama, EOS{}, "", "Ollama's native API has no ignore_eos"},
		{"auto", openai.APIEmbeddings, EOS{}, "", ""},
		{"yes", openai.APIMessages, EOS{}, "", "--api messages has no ignore_eos"},
		{"maybe", openai.APIChat, EOS{}, "", `--ignore-eos "maybe": want auto, true or false`},
	} {
		e, err := ParseEOS(c.flag)
		var sent EOS
		var note string
		if err == nil {
			sent, note, err = e.ForAPI(c.api)
		}
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !badinput.Is(err) {
				t.Errorf("--ignore-eos %s --api %s: error %v, want bad input saying %q", c.flag, c.api, err, c.err)
			}
			continue
		}
		if err != nil || sent != c.sent || !strings.HasPrefix(note, c.note) || (c.note == "") != (note == "") {
			t.Errorf("--ignore-eos %s --api %s: %+v %q %v, want %+v %q", c.flag, c.api, sent, note, err, c.sent, c.note)
		}
	}
}

func TestGraceZeroIsNoGrace(t *testing.T) {
	t.Parallel()
	if g, err := Grace(0, time.Minute); g != -1 || err != nil {
		t.Errorf("Grace(0) = %v, %v; want -1 (none)", g, err)
	}
	if g, err := Grace(time.Second, time.Minute); g != time.Second || err != nil {
		t.Errorf("Grace(1s) = %v, %v", g, err)
	}
	if _, err := Grace(-time.Second, time.Minute); !badinput.Is(err) {
		t.Errorf("Grace(-1s): %v, want bad input", err)
	}
	if _, err := Grace(time.Second, -time.Minute); !badinput.Is(err) || !strings.Contains(err.Error(), "--request-timeout") {
		t.Errorf("--request-timeout -1m: %v", err)
	}
}

func TestEndpointsCheck(t *testing.T) {
	t.Parallel()
	e := Endpoints{Images: 2, ImageSize: "100x57"}
	if err := e.Check([]string{openai.APIChat}, 7); err != nil {
		t.Fatal(err)
	}
	var cfg loadgen.Config
	e.Set(&cfg)
	// ⌈100/28⌉·⌈57/28⌉ = 4·3 tokens per image, as Qwen2-VL counts it.
	if cfg.Images != 2 || cfg.ImageWidth != 100 || cfg.ImageHeight != 57 || cfg.ImageFormat != "png" || cfg.ImageTokens != 12 || cfg.ImageSeed != 7 {
		t.Errorf("set %+v", cfg)
	}
	if kv := e.ConfigKV(); len(kv) != 2 || kv[0][0] != "images" || !strings.Contains(kv[0][1], "2 × 100x57 png, counted as 12 prompt tokens each") {
		t.Errorf("config %q", kv)
	}
	for _, c := range []struct {
		e    Endpoints
		apis []string
		want string
	}{
		{Endpoints{BatchSize: 4}, []string{openai.APIChat}, "--batch-size applies to --api embeddings, not chat"},
		{Endpoints{Documents: 3}, []string{openai.APIChat, openai.APIRerank}, ""},
		{Endpoints{Images: 1}, []string{openai.APIEmbeddings}, "--images applies to --api chat or messages"},
		{Endpoints{ImageTokens: 5}, []string{openai.APIChat}, "--image-tokens needs --images N"},
		{Endpoints{Images: 1, ImageFormat: "gif"}, []string{openai.APIChat}, `--image-format "gif": want png or jpeg`},
		{Endpoints{RerankPath: "/x"}, []string{openai.APIRerank}, `--rerank-path "/x"`},
	} {
		err := c.e.Check(c.apis, 1)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !badinput.Is(err)) {
			t.Errorf("%+v over %v: %v, want %q", c.e, c.apis, err, c.want)
		}
	}
}
