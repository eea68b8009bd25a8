package simserver

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/simengine"
)

func TestSmoke(t *testing.T) {
	gpu, _ := simengine.LookupGPU("h100")
	model, _ := simengine.LookupModel("llama-3.1-8b")
	url, srv, err := StartLocal(context.Background(), Config{Engine: simengine.DefaultConfig(gpu, model, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	t.Log(srv.Describe())
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"`+srv.Model()+`","messages":[{"role":"user","content":"hello there"}],"max_tokens":5,"stream":true,"stream_options":{"include_usage":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	t.Logf("%d %v\n%s", resp.StatusCode, resp.Header, b)
	t.Logf("%+v", srv.PacingLag())
}
