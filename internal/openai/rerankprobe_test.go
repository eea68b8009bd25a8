package openai_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/knee-dev/knee/internal/openai"
	"github.com/knee-dev/knee/internal/simserver/simservertest"
)

// knee serve answers both paths: the probe takes vLLM's, tried first. A
// server answering TEI's path only (knee serve behind a proxy that 404s
// /v1/rerank) is found on /rerank; one answering 200 with a page on every
// path is no reranker, and the error says what each path answered.
func TestProbeRerankPath(t *testing.T) {
	base, _ := simservertest.Start(t, nil)
	ctx := t.Context()
	if path, err := openai.ProbeRerankPath(ctx, http.DefaultClient, base, "", "llama-3.1-8b"); err != nil || path != openai.RerankVLLM {
		t.Errorf("knee serve: path %q, %v; want %s", path, err, openai.RerankVLLM)
	}

	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	var mu sync.Mutex
	var seen []string
	tei := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.Path)
		mu.Unlock()
		if r.URL.Path != "/rerank" {
			http.NotFound(w, r)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer tei.Close()
	if path, err := openai.ProbeRerankPath(ctx, http.DefaultClient, tei.URL+"/v1", "", "m"); err != nil || path != openai.RerankTEI {
		t.Errorf("TEI-only server: path %q, %v; want %s", path, err, openai.RerankTEI)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(seen, " ") != "/v1/rerank /rerank" {
		t.Errorf("probed %v, want one request to each path, vLLM's first", seen)
	}

	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("<html>welcome</html>"))
	}))
	defer page.Close()
	_, err = openai.ProbeRerankPath(ctx, http.DefaultClient, page.URL, "", "m")
	if err == nil || !strings.Contains(err.Error(), "/v1/rerank: HTTP 200, not a rerank answer") || !strings.Contains(err.Error(), "/rerank: HTTP 200, not a rerank answer") {
		t.Errorf("a 200 page on every path: %v; want an error naming both paths", err)
	}

	// An unreachable server is an error, not a path.
	page.Close()
	if path, err := openai.ProbeRerankPath(ctx, http.DefaultClient, page.URL, "", "m"); err == nil {
		t.Errorf("closed server: path %q, want an error", path)
	}
}
