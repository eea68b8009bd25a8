package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net"
	"net/http"
	"net/http/httptrace"
	"runtime/trace"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/knee-dev/knee/internal/openai"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/sse"
)

// maxErrorBody bounds what an error message keeps of a response body.
const maxErrorBody = 512

// Per-request bounds (architecture habit 16): what a server sends never
// grows a request's memory past them. A request that reaches one ends
// there as bad_payload; the time bound is Config.RequestTimeout (timeout).
// With sse.MaxLineSize and sse.MaxEventSize for the read buffers, one
// request holds at most about 8 + 8 MiB of buffers, 1 MiB of text and
// maxContentChunks token times (12 bytes each with their counts).
const (
	// maxContentChunks bounds the token times of one answer: a real
	// server sends at most one content chunk per token, so more than
	// twice max_tokens (plus slack for servers that split a token's text)
	// is a server that does not stop; without max_tokens, this many.
	maxContentChunks = 1 << 17
	// maxKeptText bounds the answer text kept for a session's next turn.
	maxKeptText = 1 << 20
)

// contentChunkLimit is the most content chunks a request asking for
// maxTokens (0: no limit asked) may receive.
func contentChunkLimit(maxTokens int) int {
	if maxTokens > 0 && 2*maxTokens+256 < maxContentChunks {
		return 2*maxTokens + 256
	}
	return maxContentChunks
}

// stream is the reusable per-request machinery.
type stream struct {
	stamp stampReader
	sse   *sse.Reader
	chunk openai.Chunk
	// api is the request's API (Config.API or its Request.API).
	api string
	// promptTokens is the prompt's length as built: the input count when
	// the server gives no usage.
	promptTokens int
	// keepText collects the answer's text (a session's next turn sends it).
	keepText bool
	text     []byte
}

var streamPool = sync.Pool{New: func() any {
	return &stream{sse: sse.NewReader(nil, sse.DefaultBufferSize)}
}}

// build calls the Source for request i, at most GOMAXPROCS at a time: a
// prompt is CPU work, so more at once only queues it, and a queue of
// thousands (a wide closed loop starting) would keep an interrupted run
// busy for seconds. A request still waiting for its turn at the hard stop
// (Ctrl-C, or the grace period over) is never sent: ok is false. One
// already issued when the run merely ends is still sent.
func (r *Run) build(i int64) (req Request, ok bool) {
	select {
	case r.building <- struct{}{}:
	case <-r.hardCtx.Done():
		return Request{}, false
	}
	defer func() { <-r.building }()
	if r.hardCtx.Err() != nil { // select picks at random among ready cases
		return Request{}, false
	}
	return r.src(i), true
}

// do runs request i, scheduled at the given offset, and publishes its
// record.
func (r *Run) do(i int64, scheduled time.Duration) outcome {
	o, ok := r.prepare(i)
	if !ok {
		return outcome{}
	}
	return r.send(i, scheduled, o, nil)
}

// outcome is what a closed-loop user needs of its request's end to pace
// the next one (backoff).
type outcome struct {
	failed bool // ended in an error other than canceled, before any content
	// retryAfter is the server's Retry-After on a rejection (429, 503,
	// 529), capped at maxRetryAfter; 0: none.
	retryAfter time.Duration
}

// outgoing is a request built and its body encoded: all the client work
// before the send. A 7,000-token prompt's body takes 0.1 ms to encode
// warm and 1-2 ms on a client that idled between arrivals, which would
// be send lag if done at the request's time.
type outgoing struct {
	req  Request
	api  string
	body []byte
}

// prepare builds request i (see build) and encodes it.
func (r *Run) prepare(i int64) (outgoing, bool) {
	req, ok := r.build(i)
	if !ok {
		return outgoing{}, false
	}
	return r.encode(i, req), true
}

// encode writes req's body. The body is per request, never pooled: the
// transport may still write it after Do returns (a server that answers
// before reading the whole request).
func (r *Run) encode(i int64, req Request) outgoing {
	model := r.cfg.Model
	if req.Model != "" {
		model = req.Model
	}
	api := r.cfg.API
	if req.API != "" {
		api = req.API
	}
	var images []openai.Image
	if api == openai.APIChat || api == openai.APIMessages {
		images = r.images(i)
	}
	p := openai.Params{API: api, Model: model, Prompt: req.Prompt, MaxTokens: req.MaxTokens,
		IgnoreEOS: r.cfg.IgnoreEOS, ContinuousUsage: r.cfg.ContinuousUsage,
		Temperature: r.cfg.Temperature, HasTemperature: r.cfg.HasTemperature, History: req.History,
		Items: r.cfg.Items, RerankPath: r.cfg.RerankPath, Images: images}
	if r.cfg.MinTokens {
		p.MinTokens = req.MaxTokens
	}
	return outgoing{req: req, api: api, body: openai.AppendBody(make([]byte, 0, len(req.Prompt)+256), p)}
}

// turnResult is what a session's next turn needs of this one.
type turnResult struct {
	ok                bool
	answer            string
	inTokens, outToks int
}

// send runs o as request i; with res set it keeps the answer's text and
// the served lengths there (multi-turn sessions).
func (r *Run) send(i int64, scheduled time.Duration, o outgoing, res *turnResult) (out outcome) {
	req, body, api := o.req, o.body, o.api
	rec := &record.Request{
		ID: i, Scheduled: scheduled, Warmup: r.warmup(i, scheduled),
		PromptTokensRequested: req.PromptTokens, MaxTokens: req.MaxTokens,
		Session: req.Session, Turn: req.Turn, Class: req.Class,
	}
	if req.RequestedTokens > 0 {
		rec.PromptTokensRequested = req.RequestedTokens
	}
	if r.cfg.Images > 0 && (api == openai.APIChat || api == openai.APIMessages) {
		rec.PromptTokensRequested += r.cfg.Images * r.cfg.ImageTokens
	}
	items := openai.ItemsAPI(api)
	if items {
		// Nothing is generated; an embeddings batch asks for its inputs'
		// tokens, a rerank's count depends on how the server pairs the
		// query with each document, so it asks for none.
		rec.MaxTokens = 0
		rec.PromptTokensRequested *= max(r.cfg.Items, 1)
		if api == openai.APIRerank {
			rec.PromptTokensRequested = 0
		}
	}
	st := streamPool.Get().(*stream)
	defer streamPool.Put(st)
	st.promptTokens = req.PromptTokens
	st.api = api
	if items {
		st.promptTokens *= max(r.cfg.Items, 1)
	}
	st.keepText = res != nil
	st.text = st.text[:0]
	st.stamp.start, st.stamp.clock = r.start, &r.clock

	// The trace is per request, never pooled: the transport may still
	// report the write after Do returns.
	tr := newReqTrace(r.start, r.kernelStamps)
	ctx := httptrace.WithClientTrace(r.hardCtx, &tr.trace)
	if r.cfg.RequestTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.cfg.RequestTimeout)
		defer cancel()
	}
	inFlight := r.inFlight.Add(1)
	for {
		peak := r.peak.Load()
		if inFlight <= peak || r.peak.CompareAndSwap(peak, inFlight) {
			break
		}
	}
	rec.InFlightAtSend = int(inFlight)
	r.sent.Add(1)
	rec.Sent = time.Since(r.start) // replaced by the write time below when known
	issued := rec.Sent

	if trace.IsEnabled() {
		trace.Logf(ctx, "knee.send", "request %d, %d body bytes", i, len(body))
	}
	var resp *http.Response
	var err error
	for attempt := 0; ; attempt++ {
		client := r.client
		if attempt > 0 || r.noReuse.Load() {
			// A resend: the transport proved the server cannot have read
			// the request (reqTrace.unseen), so it goes again at once on
			// a fresh connection. It keeps its scheduled time, so the
			// delay shows as lag. Or a run that stopped reusing
			// connections (stopReuse).
			client = r.retryClient
		}
		resp, err = client.Do(r.newHTTPRequest(ctx, api, body))
		if err == nil || attempt == maxConnRetries || ctx.Err() != nil {
			break
		}
		if ok, _ := tr.unseen(err); !ok {
			break
		}
		if !tr.witnessKnows() {
			// The server closes kept-alive connections and this
			// connection could not have told a request it read from one
			// it never saw: stop racing its closes.
			r.stopReuse()
		}
	}
	if tr.conns > 1 {
		rec.ConnectionRetries = int(tr.conns - 1)
		r.connRetries.Add(tr.conns - 1)
	}
	if sent := tr.sentAt.Load(); sent > 0 {
		rec.Sent = time.Duration(sent)
	}
	if err == nil {
		// The response has begun, so the request's bytes have left: its
		// last write's start is the send time (Linux connections know it).
		if w, ok := tr.lastWrite(); ok && w >= issued {
			rec.Sent = w
		}
	}
	if err != nil {
		rec.StreamEnd = time.Since(r.start)
		r.classifyTransportError(rec, err, tr.sentAt.Load() > 0)
		if rec.Error == record.ErrTimeout && tr.conns == 0 && tr.dialing.Load() {
			// The deadline came while the request waited for its
			// connection: the dial never completed.
			rec.Error = record.ErrConnect
			rec.ErrorMessage = fmt.Sprintf("no connection before the request's deadline: the dial (connect) did not complete, so the target does not accept connections (its accept queue full, or the server stuck); this is not a slow answer: %s", rec.ErrorMessage)
		}
		if rec.Error == record.ErrStreamBroken && tr.reused && !tr.firstByte.Load() {
			// Not resent: nothing proves the server did not read it.
			if tr.witnessKnows() {
				rec.ErrorMessage = "the server closed a reused connection after the request was written, without answering; it had acknowledged every byte of it (it may have read the request; not resent): " + rec.ErrorMessage
			} else {
				rec.ErrorMessage = "the server closed a reused connection after the request was written, without answering (it may have read the request; not resent): " + rec.ErrorMessage
				r.stopReuse()
			}
		}
		r.finish(rec)
		return outcome{failed: rec.Error != record.ErrCanceled}
	}
	rec.HTTPStatus = resp.StatusCode
	st.stamp.conn = tr.conn
	r.readResponse(ctx, st, resp, rec)
	st.stamp.conn = nil // the pooled stream must not keep the connection
	resp.Body.Close()
	if res != nil {
		*res = turnResult{ok: rec.OK(), answer: string(st.text), inTokens: rec.InputTokens, outToks: rec.OutputTokens}
	}
	// A failure after content (a stream that broke, or never ended) took
	// its time: only failures without any answer's content can spin.
	out.failed = rec.Error != record.ErrNone && rec.Error != record.ErrCanceled && !rec.HasFirstToken()
	if rec.Error == record.ErrRejected {
		out.retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	r.finish(rec)
	return out
}

// maxRetryAfter caps the wait a server's Retry-After can ask of a
// closed-loop user: longer is a server that wants no load at all, and
// the run's end cuts any wait anyway.
const maxRetryAfter = 60 * time.Second

// parseRetryAfter reads a Retry-After value (RFC 9110: delay-seconds or
// an HTTP date) as a wait from now, capped at maxRetryAfter; 0 when
// absent or unreadable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.ParseFloat(v, 64); err == nil {
		if n <= 0 || math.IsNaN(n) {
			return 0
		}
		d = time.Duration(min(n, maxRetryAfter.Seconds()) * float64(time.Second))
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), maxRetryAfter)
}

// maxConnRetries bounds the resends of one request proven unread by the
// server (reqTrace.unseen): the resend goes out on a fresh
// connection, where such a failure is the server's error, so one suffices;
// the bound only guards against a transport that hands out reused ones.
const maxConnRetries = 3

// newHTTPRequest builds one attempt of the request: a resend needs its own
// (the transport may still hold the failed one's body).
func (r *Run) newHTTPRequest(ctx context.Context, api string, body []byte) *http.Request {
	endpoint, ok := r.endpoints[api]
	if !ok {
		panic(fmt.Sprintf("request of unknown API %q (want one of %v)", api, openai.APIs))
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		panic(err) // cannot happen: the endpoint was validated in Start
	}
	hreq.Header["Content-Type"] = []string{"application/json"}
	if openai.ItemsAPI(api) {
		hreq.Header["Accept"] = []string{"application/json"}
	} else {
		hreq.Header["Accept"] = []string{"text/event-stream"}
	}
	switch {
	case api == openai.APIMessages:
		// Anthropic's authentication and version headers.
		hreq.Header["Anthropic-Version"] = []string{openai.AnthropicVersion}
		if r.cfg.APIKey != "" {
			hreq.Header["X-Api-Key"] = []string{r.cfg.APIKey}
		}
	case r.cfg.APIKey != "":
		hreq.Header["Authorization"] = []string{"Bearer " + r.cfg.APIKey}
	}
	return hreq
}

// classifyTransportError turns a failed round trip into an error kind.
func (r *Run) classifyTransportError(rec *record.Request, err error, wrote bool) {
	rec.ErrorMessage = err.Error()
	var opErr *net.OpError
	var netErr net.Error
	switch {
	case r.hardCtx.Err() != nil && errors.Is(err, context.Canceled):
		r.canceled(rec)
	case errors.As(err, &opErr) && opErr.Op == "dial":
		// A connect that timed out is a connect failure, not a slow
		// answer: --request-timeout has nothing to do with it.
		rec.Error = record.ErrConnect
		if errors.As(err, &netErr) && netErr.Timeout() {
			rec.ErrorMessage = fmt.Sprintf("could not connect within the dial timeout (%v, or the request's own deadline): the target does not accept connections (its accept queue full, or the server stuck): %s", dialTimeout, rec.ErrorMessage)
		}
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()):
		rec.Error = record.ErrTimeout
	case !wrote:
		rec.Error = record.ErrConnect
	default:
		// Written, then the connection failed before a response: the
		// server broke the exchange.
		rec.Error = record.ErrStreamBroken
	}
}

// readResponse reads the status, headers and stream of one response.
func (r *Run) readResponse(ctx context.Context, st *stream, resp *http.Response, rec *record.Request) {
	if resp.StatusCode >= 300 {
		r.httpError(resp, rec)
		return
	}
	if q, p := resp.Header.Get("X-Knee-Queue-Ms"), resp.Header.Get("X-Knee-Prefill-Ms"); q != "" || p != "" {
		ph := &record.Phases{}
		ph.Queue = parseMS(q)
		ph.Prefill = parseMS(p)
		rec.ServerPhases = ph
	}
	if ce := resp.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		// knee asks for no encoding (DisableCompression): parsing the
		// compressed bytes as events would misread them.
		rec.StreamEnd = time.Since(r.start)
		rec.Error = record.ErrBadPayload
		rec.ErrorMessage = fmt.Sprintf("response is %s-encoded, which knee did not ask for (an event stream must come unencoded)", oneLine([]byte(ce)))
		return
	}
	if openai.ItemsAPI(st.api) {
		r.readItems(ctx, st, resp.Body, rec, max(r.cfg.Items, 1))
		return
	}
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		mt, _, _ := mime.ParseMediaType(ct)
		// Ollama's native stream is application/x-ndjson; a JSON body in
		// place of an event stream is a server that did not stream.
		if mt == "text/html" || (mt == "application/json" && st.api != openai.APIOllama) {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
			rec.StreamEnd = time.Since(r.start)
			rec.Error = record.ErrBadPayload
			rec.ErrorMessage = fmt.Sprintf("response is %s, not an event stream: %s", mt, oneLine(body))
			return
		}
	}

	r.readStream(ctx, st, resp.Body, rec)
}

// readStream reads one event stream into rec: the per-token hot path.
func (r *Run) readStream(ctx context.Context, st *stream, body io.Reader, rec *record.Request) {
	st.stamp.body = body
	st.stamp.kernelReads, st.stamp.userReads = 0, 0
	st.sse.Reset(&st.stamp)
	defer func() {
		switch {
		case st.stamp.userReads > 0:
			r.userStamped.Add(1)
		case st.stamp.kernelReads > 0:
			r.kernelStamped.Add(1)
		}
		st.stamp.body = nil
		st.sse.Reset(nil)
	}()

	if n := rec.MaxTokens; n > 0 {
		rec.TokenTimes = make([]time.Duration, 0, min(n, 4096)+1)
	}
	var (
		lastRead       uint64
		prevCompletion int
		chunkTokens    int
		usage          bool
		done           bool
		events         int
	)
	c := &st.chunk
	ollama := st.api == openai.APIOllama
	decode := openai.DecodeChunk
	switch st.api {
	case openai.APIOllama:
		decode = openai.DecodeOllama
	case openai.APIMessages:
		decode = openai.DecodeMessages
	}
	var server openai.ServerTimings
	haveServer, cached := false, -1
	chunkLimit := contentChunkLimit(rec.MaxTokens)
	for {
		var data []byte
		var read uint64
		var err error
		if ollama {
			data, read, err = st.sse.NextLine()
		} else {
			var ev sse.Event
			ev, err = st.sse.Next()
			data, read = ev.Data, ev.Read
		}
		if err != nil {
			rec.StreamEnd = st.stamp.at
			if err != io.EOF {
				r.readError(ctx, rec, err)
				break
			}
			if !done && rec.FinishReason == "" {
				if events == 0 && st.sse.UnknownLines > 0 {
					rec.Error = record.ErrBadPayload
					rec.ErrorMessage = "response is not an event stream; it begins: " + oneLine(st.sse.FirstUnknown)
				} else {
					rec.Error = record.ErrStreamBroken
					rec.ErrorMessage = fmt.Sprintf("stream ended without [DONE] or a finish_reason after %d content chunks", len(rec.TokenTimes))
				}
			}
			break
		}
		events++
		if err := decode(data, c); err != nil {
			rec.StreamEnd = st.stamp.at
			rec.Error = record.ErrBadPayload
			rec.ErrorMessage = fmt.Sprintf("%v; data: %s", err, oneLine(data))
			break
		}
		if c.Err != nil {
			rec.StreamEnd = st.stamp.at
			rec.Error = streamErrorKind(c.Err.Code)
			rec.ErrorMessage = "error event mid-stream: " + truncate(c.Err.Error())
			break
		}
		if c.Done {
			done = true
			continue // read on to the end of the body so the connection is reused
		}
		if c.Content {
			if len(rec.TokenTimes) >= chunkLimit {
				rec.StreamEnd = st.stamp.at
				rec.Error = record.ErrBadPayload
				rec.ErrorMessage = fmt.Sprintf("the server sent more than %d content chunks (max_tokens %d) without ending the stream; the request ends here", chunkLimit, rec.MaxTokens)
				break
			}
			if st.keepText {
				st.text = openai.AppendDeltaText(st.text, data)
				if len(st.text) > maxKeptText {
					rec.StreamEnd = st.stamp.at
					rec.Error = record.ErrBadPayload
					rec.ErrorMessage = fmt.Sprintf("the answer's text passed %d bytes; the request ends here", maxKeptText)
					break
				}
			}
			at := st.stamp.at
			k := 1
			if c.HasUsage && c.CompletionTokens-prevCompletion > 1 {
				k = c.CompletionTokens - prevCompletion
			}
			if len(rec.TokenTimes) == 0 {
				rec.FirstToken = at
			} else if read == lastRead {
				rec.CoalescedChunks++
			}
			lastRead = read
			rec.Done = at
			rec.TokenTimes = append(rec.TokenTimes, at)
			if k != 1 && rec.TokenCounts == nil {
				rec.TokenCounts = make([]int32, len(rec.TokenTimes)-1, cap(rec.TokenTimes))
				for j := range rec.TokenCounts {
					rec.TokenCounts[j] = 1
				}
			}
			if rec.TokenCounts != nil {
				rec.TokenCounts = append(rec.TokenCounts, int32(k))
			}
			chunkTokens += k
			r.tokens.Add(int64(k))
		}
		if c.HasUsage {
			usage = true
			prevCompletion = c.CompletionTokens
			rec.OutputTokens = c.CompletionTokens
			if !c.NoPromptTokens {
				rec.InputTokens = c.PromptTokens
			}
		}
		if c.FinishReason != "" {
			rec.FinishReason = c.FinishReason
		}
		if c.HasCached {
			cached = c.CachedTokens
		}
		if t := c.Server; t != nil {
			server, haveServer = *t, true
		}
		if t := c.Timing; t != nil {
			if len(t.TokenTimesMS) > chunkLimit || len(t.WriteTimesMS) > chunkLimit {
				// The record would keep them: bounded like the client's own.
				rec.StreamEnd = st.stamp.at
				rec.Error = record.ErrBadPayload
				rec.ErrorMessage = fmt.Sprintf("knee_timing lists %d token times for max_tokens %d (over %d)", max(len(t.TokenTimesMS), len(t.WriteTimesMS)), rec.MaxTokens, chunkLimit)
				break
			}
			rec.ServerPhases = &record.Phases{Queue: msDur(t.QueueMS), Prefill: msDur(t.PrefillMS), Decode: msDur(t.DecodeMS)}
			rec.ServerTokenTimes = msDurs(t.TokenTimesMS)
			rec.ServerWriteTimes = msDurs(t.WriteTimesMS)
		}
	}
	if haveServer {
		setServerTimings(rec, &server)
	}
	if cached >= 0 {
		rec.CachedPromptTokens = cached
	}
	if usage {
		rec.TokenSource = record.TokensFromUsage
	} else {
		rec.TokenSource = record.TokensFromChunks
		rec.OutputTokens = chunkTokens
		rec.InputTokens = st.promptTokens
	}
}

// setServerTimings maps a real server's own timings onto the record
// (docs/servers.md): prefill and decode as reported, the queue where the
// server's fields give it, cached prompt tokens where reported. knee's own
// knee_timing, when also present, is the truth and wins.
func setServerTimings(rec *record.Request, t *openai.ServerTimings) {
	if t.HasCached {
		rec.CachedPromptTokens = t.CachedPrompt
	}
	if rec.ServerPhases != nil {
		return
	}
	ph := &record.Phases{Prefill: msDur(t.PrefillMS), Decode: msDur(t.DecodeMS)}
	if q, ok := t.QueueMS(); ok {
		ph.Queue = msDur(q)
	} else {
		ph.QueueUnknown = true
	}
	rec.ServerPhases = ph
}

// streamErrorKind maps the code of an error event to a kind: an HTTP-like
// status when the server gives one, else the stream broke.
func streamErrorKind(code int) record.ErrorKind {
	switch {
	case code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable || code == statusOverloaded:
		return record.ErrRejected
	case code >= 400 && code < 500:
		return record.ErrHTTP4xx
	case code >= 500 && code < 600:
		return record.ErrHTTP5xx
	}
	return record.ErrStreamBroken
}

// statusOverloaded is Anthropic's 529, overloaded_error: an admission
// refusal like 503.
const statusOverloaded = 529

// readError classifies a failed body read.
func (r *Run) readError(ctx context.Context, rec *record.Request, err error) {
	rec.ErrorMessage = truncate(err.Error())
	var netErr net.Error
	switch {
	case errors.Is(err, sse.ErrLineTooLong) || errors.Is(err, sse.ErrEventTooLarge):
		// The payload broke a bound, whatever the clock says by the
		// time the long read ended.
		rec.Error = record.ErrBadPayload
	case r.hardCtx.Err() != nil && (errors.Is(err, context.Canceled) || ctx.Err() == context.Canceled):
		r.canceled(rec)
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() == context.DeadlineExceeded || (errors.As(err, &netErr) && netErr.Timeout()):
		rec.Error = record.ErrTimeout
	default:
		rec.Error = record.ErrStreamBroken
	}
}

// httpError records a non-2xx response, with its body for the message.
func (r *Run) httpError(resp *http.Response, rec *record.Request) {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	rec.StreamEnd = time.Since(r.start)
	code := resp.StatusCode
	switch {
	case code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable || code == statusOverloaded:
		rec.Error = record.ErrRejected
	case code >= 500:
		rec.Error = record.ErrHTTP5xx
	case code >= 400:
		rec.Error = record.ErrHTTP4xx
	default:
		rec.Error = record.ErrBadPayload // a redirect: the URL is wrong
	}
	msg := "HTTP " + resp.Status
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		msg += " (Retry-After: " + ra + ")"
	}
	if loc := resp.Header.Get("Location"); loc != "" && code < 400 {
		msg += " redirect to " + loc
	}
	if len(body) > 0 {
		msg += ": " + oneLine(body)
	}
	rec.ErrorMessage = msg
}

func parseMS(s string) time.Duration {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0
	}
	return msDur(v)
}

func msDur(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

// msDurs converts a list of milliseconds (nil when empty).
func msDurs(ms []float64) []time.Duration {
	if len(ms) == 0 {
		return nil
	}
	d := make([]time.Duration, len(ms))
	for i, v := range ms {
		d[i] = msDur(v)
	}
	return d
}

// oneLine makes a short single-line excerpt of a body for a message.
func oneLine(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	return truncate(s)
}

func truncate(s string) string {
	if len(s) > maxErrorBody {
		return s[:maxErrorBody] + "…"
	}
	return s
}
