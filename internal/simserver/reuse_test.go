package simserver

import (
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"testing"
)

// TestHijackedConnectionIsReused: after a hijacked stream ends, the client's
// next request goes over the same kept-alive connection, and a pipelined-
// free client sees well-framed responses every time.
func TestHijackedConnectionIsReused(t *testing.T) {
	url, _ := startTest(t, nil)
	reused := 0
	cl := &http.Client{Transport: &http.Transport{}}
	for i := 0; i < 5; i++ {
		req, _ := http.NewRequest("POST", url+"/v1/chat/completions", strings.NewReader(`{"messages":[{"role":"user","content":"hi"}],"max_tokens":3,"stream":true}`))
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
			if i.Reused {
				reused++
			}
		}}))
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || !strings.HasSuffix(string(b), "data: [DONE]\n\n") || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("request %d: %v %q", i, err, b)
		}
	}
	if reused != 4 {
		t.Errorf("%d of 4 follow-up requests reused the connection", reused)
	}
}
