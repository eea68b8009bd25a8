//go:build unix

package simserver

import (
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestClientThatStopsReading: a client that sends a request and never reads
// is dropped once the socket buffers fill, without holding up the writer
// that serves other streams. The stream is far longer than the buffers
// (~16,000 tokens fill them; the engine takes ~15 s of its scaled time for
// 399,000), so a writer starved for seconds on a loaded machine still meets
// the full buffer before the engine finishes the request; with 60,000
// tokens a lag of ~1.7 s let the engine finish first, and a finished
// request is never counted as canceled. A stream whose first token the
// writer sent before its handler took the connection over stays on
// net/http's blocking ResponseWriter, where only WriteTimeout drops the
// client: at the default 30 s that outlived the wait below on a loaded CI
// machine (16,527 tokens out, then nothing for 10 s), so it is 1 s here.
func TestClientThatStopsReading(t *testing.T) {
	url, srv := startTest(t, func(c *Config) {
		c.Engine.StepTimeScale = 0.005
		c.Engine.MaxModelLen = 400000
		c.WriteTimeout = time.Second
	})
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	c, err := d.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	body := `{"prompt":"x","max_tokens":399000,"stream":true}` // ~50 MB, far more than the socket buffers hold
	fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	// Meanwhile ordinary requests complete, whichever writer they share.
	for i := 0; i < 4; i++ {
		resp, b := post(t, url, "/v1/completions", `{"prompt":"y","max_tokens":50,"stream":true}`)
		if resp.StatusCode != 200 || !strings.HasSuffix(string(b), "data: [DONE]\n\n") {
			t.Fatalf("ordinary request %d: %d %q", i, resp.StatusCode, b)
		}
	}
	defer func() {
		if t.Failed() {
			st := srv.EngineStats()
			t.Logf("engine: %d tokens out, %d finished, %d canceled, %d running", st.OutputTokens, st.Finished, st.Canceled, st.Running)
		}
	}()
	waitFor(t, "the stalled client dropped", func() bool { return srv.EngineStats().Canceled == 1 })
}
