package loadgen

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/hostile"
)

// closerRun runs n requests at concurrency c against a server that closes
// every connection after its response (hostile.Closer, llama.cpp's way),
// lingering linger() first, and returns the result and the server.
func closerRun(t *testing.T, c, n int, linger func() time.Duration, cfg Config) (*Result, *hostile.Closer) {
	t.Helper()
	hs := hostile.New(func(int64) hostile.Fault { return hostile.OK })
	srv, err := hostile.NewCloser(hs, linger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	cfg.BaseURL, cfg.Concurrency, cfg.Requests = srv.URL(), c, int64(n)
	cfg.RequestTimeout = 30 * time.Second
	res := run(t, cfg, func(i int64) Request {
		return Request{Prompt: "say something " + hostile.Marker(i), PromptTokens: 7, MaxTokens: hostile.Tokens}
	})
	return res, srv
}

// lost lists the failed records' errors.
func lost(res *Result) (n int, first string) {
	for _, r := range res.Records {
		if !r.OK() {
			if n == 0 {
				first = fmt.Sprintf("request %d: %s: %s", r.ID, r.Error, r.ErrorMessage)
			}
			n++
		}
	}
	return n, first
}

// TestServerClosingAfterEveryResponse: a server that closes every
// connection after its response without saying so (llama.cpp) loses no
// request, at once or 0-3 ms after the response: a request that raced the
// close is resent (and counted) because the connection proves the server
// never read it. The server's books match: every request is answered once,
// every record is ok, and the server read each request once.
func TestServerClosingAfterEveryResponse(t *testing.T) {
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(3, 9))
	jitter := func() time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return time.Duration(rng.Int64N(int64(3 * time.Millisecond)))
	}
	for _, lg := range []struct {
		name   string
		linger func() time.Duration
	}{{"at once", nil}, {"after 0-3ms", jitter}} {
		for _, c := range []int{1, 4, 16} {
			t.Run(fmt.Sprintf("%s/concurrency=%d", lg.name, c), func(t *testing.T) {
				n := 60
				res, srv := closerRun(t, c, n, lg.linger, Config{})
				srv.Close() // its books are final once every connection is done
				failed, first := lost(res)
				t.Logf("%d requests: %d lost, %d connection retries, %d connections, server read %d, answered %d",
					len(res.Records), failed, res.ConnectionRetries, srv.Conns(), srv.Read(), srv.Answered())
				if len(res.Records) != n {
					t.Fatalf("%d records, want %d", len(res.Records), n)
				}
				if failed > 0 {
					t.Errorf("%d of %d requests lost; %s", failed, n, first)
				}
				if srv.Read() != int64(n) || srv.Answered() != int64(n) {
					t.Errorf("server read %d and answered %d requests, want %d each", srv.Read(), srv.Answered(), n)
				}
				sum := 0
				for _, r := range res.Records {
					sum += r.ConnectionRetries
				}
				if int64(sum) != res.ConnectionRetries {
					t.Errorf("records count %d retries, the result %d", sum, res.ConnectionRetries)
				}
			})
		}
	}
}
