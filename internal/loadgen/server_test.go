package loadgen

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/sse"
)

// plan is how the test server answers one request.
type plan struct {
	tokens     int
	first, gap time.Duration // first token after first; the rest every gap (absolute schedule)
	noUsage    bool          // omit the usage chunk
	perChunk   int           // tokens per content chunk with continuous usage (0: 1, no per-chunk usage)
	cutAfter   int           // >0: close the connection after this many content chunks
	stall      time.Duration // sleep before answering at all
	status     int           // non-200: answer with this status and a body
	html       bool          // answer 200 with an HTML page
	errorEvent bool          // send an error event after the first token
	noDone     bool          // finish chunk but no [DONE]
}

var contentChunk = []byte(`{"choices":[{"index":0,"delta":{"content":"tok"},"finish_reason":null}]}`)

// truthServer is an OpenAI-compatible streaming server for tests that
// records, per request (keyed by the prompt), the time it wrote each
// content chunk: the ground truth the client's timestamps are held to.
type truthServer struct {
	*httptest.Server
	planFor func(prompt string) plan

	mu      sync.Mutex
	writes  map[string][]time.Time
	bodies  []string // request bodies as received
	authHdr []string // Authorization headers as received

	conns atomic.Int64 // connections accepted
}

func newTruthServer(t testing.TB, planFor func(prompt string) plan) *truthServer {
	ts := &truthServer{planFor: planFor, writes: make(map[string][]time.Time)}
	ts.Server = httptest.NewUnstartedServer(http.HandlerFunc(ts.handle))
	ts.Server.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			ts.conns.Add(1)
		}
	}
	ts.Start()
	t.Cleanup(ts.Close)
	return ts
}

func (ts *truthServer) truth(prompt string) []time.Time {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.writes[prompt]
}

func (ts *truthServer) handle(w http.ResponseWriter, r *http.Request) {
	received := time.Now()
	var body struct {
		Messages []struct{ Content string }
		Prompt   string
	}
	b, _ := io.ReadAll(r.Body)
	ts.mu.Lock()
	ts.bodies = append(ts.bodies, string(b))
	ts.authHdr = append(ts.authHdr, r.Header.Get("Authorization"))
	ts.mu.Unlock()
	if err := json.Unmarshal(b, &body); err != nil {
		http.Error(w, "bad json: "+err.Error(), http.StatusBadRequest)
		return
	}
	prompt := body.Prompt
	if len(body.Messages) > 0 {
		prompt = body.Messages[0].Content
	}
	p := ts.planFor(prompt)
	if p.stall > 0 && !sleepCtx(r, p.stall) {
		return
	}
	switch {
	case p.status != 0 && p.status != http.StatusOK:
		if p.status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "2")
		}
		http.Error(w, `{"error":{"message":"test says `+strconv.Itoa(p.status)+`"}}`, p.status)
		return
	case p.html:
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html><body><h1>502 Bad Gateway</h1></body></html>\n")
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Knee-Queue-Ms", "1.5")
	fl := w.(http.Flusher)
	sw := sse.NewWriter(w)
	// A role-only chunk and a keep-alive comment: neither may count.
	sw.Data([]byte(`{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`))
	sw.Comment("keep-alive")
	fl.Flush()
	times := make([]time.Time, 0, p.tokens)
	per := max(p.perChunk, 1)
	sent := 0
	// One reused timer and a fixed chunk: the server's own allocations
	// would otherwise drive the garbage collector of the shared process.
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for i := 0; sent < p.tokens; i++ {
		if d := time.Until(received.Add(p.first + time.Duration(i)*p.gap)); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-r.Context().Done():
				ts.record(prompt, times)
				return
			}
		}
		k := min(per, p.tokens-sent)
		sent += k
		chunk := contentChunk
		if p.perChunk > 0 {
			chunk = []byte(fmt.Sprintf(`{"choices":[{"index":0,"delta":{"content":"t%d"},"finish_reason":null}],"usage":{"prompt_tokens":7,"completion_tokens":%d}}`, i, sent))
		}
		times = append(times, time.Now()) // just before the write: the truth
		sw.Data(chunk)
		fl.Flush()
		if p.errorEvent {
			sw.Data([]byte(`{"error":{"message":"engine died","code":500}}`))
			fl.Flush()
			ts.record(prompt, times)
			return
		}
		if p.cutAfter > 0 && i+1 >= p.cutAfter {
			ts.record(prompt, times)
			panic(http.ErrAbortHandler) // drop the connection mid-stream
		}
	}
	ts.record(prompt, times)
	sw.Data([]byte(`{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`))
	if !p.noUsage {
		// write_times_ms: each content chunk's write time, from the
		// server's receipt of the request, as knee's servers send it.
		wt := make([]byte, 0, 16*len(times))
		for i, w := range times {
			if i > 0 {
				wt = append(wt, ',')
			}
			wt = strconv.AppendFloat(wt, float64(w.Sub(received))/1e6, 'f', 6, 64)
		}
		sw.Data([]byte(fmt.Sprintf(`{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":%d},"knee_timing":{"queue_ms":1.5,"prefill_ms":%g,"decode_ms":2,"token_times_ms":[1,2],"write_times_ms":[%s]}}`,
			p.tokens, float64(p.first)/1e6, wt)))
	}
	if !p.noDone {
		sw.Data([]byte("[DONE]"))
	}
	fl.Flush()
}

// sleepCtx sleeps d unless the client goes away first.
func sleepCtx(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

func (ts *truthServer) record(prompt string, times []time.Time) {
	ts.mu.Lock()
	ts.writes[prompt] = times
	ts.mu.Unlock()
}

// promptSource names each request by its index so the server can key truth.
func promptSource(maxTokens int) Source {
	return func(i int64) Request {
		return Request{Prompt: "req-" + strconv.FormatInt(i, 10), PromptTokens: 7, MaxTokens: maxTokens}
	}
}

func promptID(prompt string) int64 {
	n, _ := strconv.ParseInt(strings.TrimPrefix(prompt, "req-"), 10, 64)
	return n
}
