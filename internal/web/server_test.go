package web

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/store"
)

// newTestServer serves the UI on a loopback port with an empty store.
func newTestServer(t *testing.T) (*Server, *httptest.Server) {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "knee.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s, err := New(Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	return newTestServerWith(t, s)
}

func newTestServerWith(t *testing.T, s *Server) (*Server, *httptest.Server) {
	t.Helper()
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	s.Allow(ts.Listener.Addr())
	return s, ts
}

type call struct {
	method, path, body string
	host, origin       string
	fetchSite          string // Sec-Fetch-Site
	token              bool
}

func do(t *testing.T, s *Server, ts *httptest.Server, c call) (int, string) {
	t.Helper()
	req, err := http.NewRequest(c.method, ts.URL+c.path, strings.NewReader(c.body))
	if err != nil {
		t.Fatal(err)
	}
	if c.host != "" {
		req.Host = c.host
	}
	if c.origin != "" {
		req.Header.Set("Origin", c.origin)
	}
	if c.fetchSite != "" {
		req.Header.Set("Sec-Fetch-Site", c.fetchSite)
	}
	if c.token {
		req.Header.Set(TokenHeader, s.Token())
	}
	res, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func TestGuard(t *testing.T) {
	s, ts := newTestServer(t)
	_, port, _ := net.SplitHostPort(ts.Listener.Addr().String())
	sim := `{"load": 4, "requests": 50}`
	cases := []struct {
		name string
		c    call
		code int
		want string
	}{
		{"page", call{method: "GET", path: "/"}, 200, s.Token()},
		{"page by localhost", call{method: "GET", path: "/", host: "localhost:" + port}, 200, "knee ui"},
		{"rebinding host", call{method: "GET", path: "/", host: "evil.example:" + port}, 403, "not this server's address"},
		{"rebinding host on the API", call{method: "GET", path: "/api/runs", host: "evil.example"}, 403, "not this server's address"},
		{"other port", call{method: "GET", path: "/", host: "127.0.0.1:1"}, 403, "not this server's address"},
		{"cross-site origin", call{method: "POST", path: "/api/sim", body: sim, origin: "http://evil.example", token: true}, 403, "cross-origin"},
		{"origin on another port", call{method: "POST", path: "/api/sim", body: sim, origin: "http://127.0.0.1:1", token: true}, 403, "cross-origin"},
		{"opaque origin", call{method: "POST", path: "/api/sim", body: sim, origin: "null", token: true}, 403, "opaque"},
		{"no token", call{method: "POST", path: "/api/sim", body: sim}, 403, TokenHeader},
		{"another site's image", call{method: "GET", path: "/api/runs", fetchSite: "cross-site"}, 403, "another site"},
		{"another port's page", call{method: "GET", path: "/api/runs", fetchSite: "same-site"}, 403, "another site"},
		{"this page", call{method: "GET", path: "/api/runs", fetchSite: "same-origin"}, 200, "["},
		{"no token for the lab", call{method: "POST", path: "/api/lab", body: `{"scenario":"queue"}`}, 403, TokenHeader},
		{"no token for a claim check", call{method: "POST", path: "/api/learn/check", body: `{"section":"tokens","claim":"prompt-ttft"}`}, 403, TokenHeader},
		{"claim check", call{method: "POST", path: "/api/learn/check", body: `{"section":"tokens","claim":"prompt-ttft"}`, token: true}, 200, `"holds":true`},
		{"learn table", call{method: "GET", path: "/api/learn"}, 200, `"prompt-ttft"`},
		{"no token for a bench", call{method: "POST", path: "/api/bench", body: `{}`}, 403, TokenHeader},
		{"same origin with token", call{method: "POST", path: "/api/sim", body: sim, origin: ts.URL, token: true}, 200, `"pressure"`},
		{"bench without --url", call{method: "POST", path: "/api/bench", body: `{"concurrency":1,"requests":1}`, token: true}, 403, "--url"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, body := do(t, s, ts, tc.c)
			if code != tc.code || !strings.Contains(body, tc.want) {
				t.Errorf("%s %s: %d %q, want %d containing %q", tc.c.method, tc.c.path, code, body, tc.code, tc.want)
			}
		})
	}
}

func TestBadParameters(t *testing.T) {
	s, ts := newTestServer(t)
	cases := []struct {
		path, body, want string
	}{
		{"/api/sim", `{"load": 0}`, "load 0"},
		{"/api/sim", `{"load": 2.5}`, "whole number"},
		{"/api/sim", `{"load": 1e9}`, "1 to 1024"},
		{"/api/sim", `{"load_kind": "rate", "load": -3}`, "rate above 0"},
		{"/api/sim", `{"load_kind": "bursty", "load": 3}`, "concurrency or rate"},
		{"/api/sim", `{"load": 4, "input_tokens": "lots"}`, "token lengths"},
		{"/api/sim", `{"load": 4, "output_tokens": "0"}`, "token lengths"},
		{"/api/sim", `{"load": 4, "gpu": "abacus"}`, "gpu"},
		{"/api/sim", `{"load": 4, "model": "gpt-17"}`, "model"},
		{"/api/sim", `{"load": 4, "tp": 99}`, "tp 99"},
		{"/api/sim", `{"load": 4, "max_num_seqs": -1}`, "max_num_seqs"},
		{"/api/sim", `{"load": 4, "max_num_batched_tokens": 3}`, "max_num_batched_tokens"},
		{"/api/sim", `{"load": 4, "slo": "p95(ttft)<<2s"}`, "slo"},
		{"/api/sim", `{"load": 4, "requests": 99999}`, "requests"},
		{"/api/sim", `{"load": 4, "step_time_scale": 100}`, "step_time_scale"},
		{"/api/sim", `{"load": 4, "replicas": 99}`, "replicas 99"},
		{"/api/sim", `{"load": 4, "replicas": 2, "router": "random"}`, "router"},
		{"/api/sim", `{"load": 4, "input_tokens": "200000"}`, ""},
		{"/api/sim", `{"lod": 4}`, "unknown field"},
		{"/api/sim", `not json`, "request body"},
		{"/api/sim", ``, "request body"},
		{"/api/sweep", `{"load": -1}`, "load -1"},
		{"/api/lab", `{"scenario": "boredom"}`, "scenario"},
		{"/api/learn/check", `{"section": "tokens", "claim": "nope"}`, "no such claim"},
		{"/api/learn/check", `{"section": "tokens", "claims": "prompt-ttft"}`, "unknown field"},
		{"/api/sim", `{"load": 4, "model": "llama-3.1-70b", "gpu": "l4"}`, "fit"},
	}
	for _, tc := range cases {
		code, body := do(t, s, ts, call{method: "POST", path: tc.path, body: tc.body, token: true})
		var e struct{ Error string }
		json.Unmarshal([]byte(body), &e)
		if code != 400 || e.Error == "" || !strings.Contains(e.Error, tc.want) {
			t.Errorf("POST %s %s: %d %s, want 400 with a message containing %q", tc.path, tc.body, code, body, tc.want)
		}
	}
	for _, p := range []string{"/api/runs?kind=nope", "/api/runs?since=yesterday", "/api/runs?limit=-4", "/api/runs/abc", "/api/runs/0/report",
		"/api/runs/x/live", "/api/compare?a=1", "/api/compare?a=x&b=2"} {
		code, body := do(t, s, ts, call{method: "GET", path: p})
		if code != 400 || !strings.Contains(body, `"error"`) {
			t.Errorf("GET %s: %d %s, want 400 with a message", p, code, body)
		}
	}
	for _, p := range []string{"/api/runs/42", "/api/runs/42/report", "/api/runs/42/live"} {
		code, body := do(t, s, ts, call{method: "GET", path: p})
		if code != 404 || !strings.Contains(body, "no such run") {
			t.Errorf("GET %s: %d %s, want 404 naming the missing run", p, code, body)
		}
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// TestNeverCrashes throws extreme but well-formed settings at the
// simulator and the sweep: every answer is a result or a 400 with a
// message, never a 500 or a hang.
func TestNeverCrashes(t *testing.T) {
	s, ts := newTestServer(t)
	bodies := []string{
		`{"load": 1024, "input_tokens": "lognormal:100000,50000", "output_tokens": "1"}`,
		`{"load": 1024, "max_num_batched_tokens": 16, "max_num_seqs": 1, "requests": 50}`,
		`{"load": 3, "tp": 8, "gpu": "l4", "model": "llama-2-70b"}`,
		`{"load_kind": "rate", "load": 2000, "output_tokens": "4096", "requests": 200}`,
		`{"load_kind": "rate", "load": 0.001, "requests": 20}`,
		`{"load": 64, "input_tokens": "1:131072", "output_tokens": "1:4096", "requests": 100}`,
		`{"load": 8, "slo": "error_rate<1%, goodput>1rps, p99(itl)<1us"}`,
		`{"load": 8, "step_time_scale": 10, "max_num_seqs": 4096}`,
		`{"load": 8, "input_tokens": "normal:512,4096"}`,
	}
	for _, b := range bodies {
		for _, path := range []string{"/api/sim", "/api/sweep"} {
			code, body := do(t, s, ts, call{method: "POST", path: path, body: b, token: true})
			if code != 200 && code != 400 {
				t.Errorf("POST %s %s: %d %.300s", path, b, code, body)
			}
			if code == 400 && !strings.Contains(body, `"error"`) {
				t.Errorf("POST %s %s: 400 without a message: %s", path, b, body)
			}
		}
	}
}
