package hostile_test

import (
	"context"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/hostile"
	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/record"
)

// wantKind is the error kind knee must record for each fault.
var wantKind = map[hostile.Fault]record.ErrorKind{
	hostile.OK:            record.ErrNone,
	hostile.Status500:     record.ErrHTTP5xx,
	hostile.Status429:     record.ErrRejected,
	hostile.Status503:     record.ErrRejected,
	hostile.Stall:         record.ErrTimeout,
	hostile.Cut:           record.ErrStreamBroken,
	hostile.Malformed:     record.ErrBadPayload,
	hostile.Oversized:     record.ErrBadPayload,
	hostile.NeverEnding:   record.ErrBadPayload,
	hostile.Undelimited:   record.ErrBadPayload,
	hostile.Gzip:          record.ErrBadPayload,
	hostile.ReadThenClose: record.ErrStreamBroken,
	hostile.Heartbeats:    record.ErrTimeout,
	hostile.StallHeaders:  record.ErrTimeout,
}

// kindOK reports whether kind is what knee must record for fault f. A
// stream that breaks a size bound (oversized, undelimited) ends as
// bad_payload when the bound comes first, or as a timeout when a busy
// machine reads it so slowly that the request's time limit comes first:
// both end the request at a bound, neither is a success.
func kindOK(f hostile.Fault, kind record.ErrorKind) bool {
	if kind == wantKind[f] {
		return true
	}
	return (f == hostile.Oversized || f == hostile.Undelimited) && kind == record.ErrTimeout
}

func source(i int64) loadgen.Request {
	return loadgen.Request{Prompt: "say something " + hostile.Marker(i), PromptTokens: 7, MaxTokens: hostile.Tokens}
}

func start(t *testing.T, plan func(int64) hostile.Fault) (*hostile.Server, string) {
	t.Helper()
	hs := hostile.New(plan)
	ts := httptest.NewServer(hs)
	t.Cleanup(ts.Close)
	return hs, ts.URL
}

// TestAccountingAgainstHostileServer runs a bounded load against a server
// that injects every fault in turn and holds knee's records to the
// server's own log one for one: every request the server read is one
// record (requests read = records + counted retries; no retry here, as
// this server never closes a connection it did not fail a request on),
// each record's error kind is the one its injected fault calls for, and
// no record is ok that the server did not answer in full.
func TestAccountingAgainstHostileServer(t *testing.T) {
	faults := hostile.Faults()
	rounds := 2
	if testing.Short() {
		rounds = 1
	}
	n := rounds * len(faults)
	hs, url := start(t, func(id int64) hostile.Fault { return faults[id%int64(len(faults))] })
	r, err := loadgen.Start(context.Background(), loadgen.Config{
		BaseURL: url, Concurrency: 6, Requests: int64(n), RequestTimeout: 2 * time.Second,
	}, source)
	if err != nil {
		t.Fatal(err)
	}
	res := r.Wait()
	log := hs.Log()
	if len(res.Records) != n {
		t.Fatalf("%d records for %d requests", len(res.Records), n)
	}
	if int64(len(log)) != int64(len(res.Records))+res.ConnectionRetries {
		t.Errorf("server read %d requests; records + counted retries = %d + %d", len(log), len(res.Records), res.ConnectionRetries)
	}
	byID := make(map[int64][]hostile.Entry)
	for _, e := range log {
		byID[e.ID] = append(byID[e.ID], e)
	}
	for _, rec := range res.Records {
		es := byID[rec.ID]
		if len(es) != 1 {
			t.Errorf("request %d: read %d times by the server, want once", rec.ID, len(es))
			continue
		}
		e := es[0]
		if want := wantKind[e.Fault]; !kindOK(e.Fault, rec.Error) {
			t.Errorf("request %d (%s): error %q, want %q; message: %.200s", rec.ID, e.Fault, rec.Error, want, rec.ErrorMessage)
		}
		if rec.OK() != e.Answered {
			t.Errorf("request %d (%s): ok=%v, answered by the server=%v", rec.ID, e.Fault, rec.OK(), e.Answered)
		}
		if !rec.OK() && rec.ErrorMessage == "" {
			t.Errorf("request %d (%s): failed with no message", rec.ID, e.Fault)
		}
	}
}

// heapBound is the stated bound on what four hostile streams may add to
// the client's heap, whatever the server sends and for as long: per
// request at most sse.MaxLineSize + sse.MaxEventSize of read buffers (as
// they grow: about twice that allocated) and a bounded count of token
// times, so four streams stay far under it.
const heapBound = 256 << 20

// TestClientMemoryBoundedAgainstEndlessStreams runs four streams at a
// time that never end (content chunks, or data lines with no blank line,
// or chunks without content) and holds the client's heap growth, sampled
// throughout, under heapBound. Each request ends at its bound, classified:
// bad_payload at the chunk or event limit, timeout at the request timeout.
func TestClientMemoryBoundedAgainstEndlessStreams(t *testing.T) {
	faults := []hostile.Fault{hostile.NeverEnding, hostile.Undelimited, hostile.Heartbeats, hostile.Undelimited}
	_, url := start(t, func(id int64) hostile.Fault { return faults[id%int64(len(faults))] })

	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var peak uint64
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Go(func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > base.HeapAlloc {
				peak = max(peak, m.HeapAlloc-base.HeapAlloc)
			}
			if peak > heapBound {
				cancel() // stop the load before it takes the machine
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	r, err := loadgen.Start(ctx, loadgen.Config{
		BaseURL: url, Concurrency: 4, Requests: 8, RequestTimeout: 1500 * time.Millisecond,
	}, source)
	if err != nil {
		t.Fatal(err)
	}
	res := r.Wait()
	close(done)
	wg.Wait()
	t.Logf("peak heap growth %.1f MB", float64(peak)/(1<<20))
	if peak > heapBound {
		t.Fatalf("heap grew %.0f MB, over the %d MB bound", float64(peak)/(1<<20), heapBound>>20)
	}
	for _, rec := range res.Records {
		f := faults[rec.ID%int64(len(faults))]
		if want := wantKind[f]; !kindOK(f, rec.Error) {
			t.Errorf("request %d (%s): error %q, want %q; message: %.200s", rec.ID, f, rec.Error, want, rec.ErrorMessage)
		}
		if len(rec.TokenTimes) > 2*hostile.Tokens+256 {
			t.Errorf("request %d (%s): %d token times kept for max_tokens %d", rec.ID, f, len(rec.TokenTimes), hostile.Tokens)
		}
		if f == hostile.NeverEnding && !strings.Contains(rec.ErrorMessage, "content chunks") {
			t.Errorf("request %d: message %q does not say the chunk limit ended it", rec.ID, rec.ErrorMessage)
		}
	}
}
