package realserver

import (
	"math/rand/v2"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/hostile"
	"github.com/knee-dev/knee/internal/record"
)

// TestCloseAfterEveryResponse runs knee's closed loop at concurrency 1
// against a server that closes every connection after its response without
// saying so, as llama.cpp's llama-server does (hostile.Closer, raw TCP):
// first with hostile's own answers, then, when the real server is there,
// with Ollama's behind it (the closer as a reverse proxy). It logs the
// requests lost and resent; on Linux, where the kernel tells a request the
// server never read, none may be lost.
func TestCloseAfterEveryResponse(t *testing.T) {
	const requests = 40
	// Each connection stays open 1-3 ms after its response (as the
	// independent server of issue 39 did): the next request, sent at
	// once, races the close.
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(39, 1))
	linger := func() time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return time.Millisecond + time.Duration(rng.Int64N(int64(2*time.Millisecond)))
	}
	check := func(t *testing.T, srv *hostile.Closer, recs []record.Request) (lost int) {
		t.Helper()
		srv.Close()
		retries := 0
		for _, r := range recs {
			retries += r.ConnectionRetries
			if !r.OK() {
				lost++
				if lost == 1 {
					t.Logf("first lost: request %d: %s: %s", r.ID, r.Error, r.ErrorMessage)
				}
			}
		}
		t.Logf("close after every response, concurrency 1: %d records, %d lost, %d resent; the server read %d requests on %d connections",
			len(recs), lost, retries, srv.Read(), srv.Conns())
		if len(recs) != requests {
			t.Errorf("%d records, want %d", len(recs), requests)
		}
		if runtime.GOOS == "linux" && lost > 0 {
			t.Errorf("%d of %d requests lost", lost, requests)
		}
		return lost
	}
	t.Run("test server", func(t *testing.T) {
		srv, err := hostile.NewCloser(hostile.New(func(int64) hostile.Fault { return hostile.OK }), linger)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Close)
		dir := t.TempDir()
		knee(t, "bench", "--url", srv.URL(), "--model", "tiny", "--concurrency", "1", "--requests", "40",
			"--input-tokens", "16", "--output-tokens", "3", "--seed", "1", "--quiet", "--out", dir, "--request-timeout", "30s")
		check(t, srv, readRecords(t, filepath.Join(dir, "records.jsonl")))
	})
	t.Run("ollama behind it", func(t *testing.T) {
		s := realServer(t)
		target, err := url.Parse(s.url)
		if err != nil {
			t.Fatal(err)
		}
		proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) }, FlushInterval: -1}
		srv, err := hostile.NewCloser(proxy, linger)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Close)
		dir := t.TempDir()
		ps := s
		ps.url = srv.URL()
		knee(t, benchArgs(ps, dir, 1, requests, "--request-timeout", "60s")...)
		recs := readRecords(t, filepath.Join(dir, "records.jsonl"))
		if check(t, srv, recs) == 0 {
			checkComplete(t, recs, requests)
		}
	})
}
