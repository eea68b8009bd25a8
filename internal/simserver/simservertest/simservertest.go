// Package simservertest starts knee's simulated server for a test: one
// fixture for the tests of every package that need a real-time target.
package simservertest

import (
	"context"
	"testing"

	"github.com/knee-dev/knee/internal/simengine/enginetest"
	"github.com/knee-dev/knee/internal/simserver"
)

// Start serves enginetest's H100 + Llama-3.1-8B engine on a loopback port,
// after mod (when not nil) has changed the configuration, and returns its
// base URL ("http://127.0.0.1:PORT", without /v1) and the server; the server stops when the test
// ends.
func Start(tb testing.TB, mod func(*simserver.Config)) (url string, srv *simserver.Server) {
	tb.Helper()
	cfg := simserver.Config{Engine: enginetest.H100Llama8B(tb, 1)}
	if mod != nil {
		mod(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	url, srv, err := simserver.StartLocal(ctx, cfg)
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		srv.Close()
		cancel()
	})
	return url, srv
}
