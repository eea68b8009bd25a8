// Package record defines the one record every source of requests produces
// (SPEC §2): the load generator, the simulator, the simulated server and
// importers all yield Request values, and everything downstream reads them.
//
// Reading order: Request and its derived metrics (this file), then the JSONL
// codec (jsonl.go).
package record

import (
	"time"
)

// ErrorKind classifies a failed request. The empty kind means success.
type ErrorKind string

// The error kinds of SPEC §2. A failed request is data, never a Go error.
const (
	ErrNone         ErrorKind = ""
	ErrConnect      ErrorKind = "connect"
	ErrTimeout      ErrorKind = "timeout"
	ErrRejected     ErrorKind = "rejected" // 429/503 admission
	ErrHTTP4xx      ErrorKind = "http_4xx"
	ErrHTTP5xx      ErrorKind = "http_5xx"
	ErrStreamBroken ErrorKind = "stream_broken" // ended without a finish
	ErrBadPayload   ErrorKind = "bad_payload"
	ErrCanceled     ErrorKind = "canceled"
)

// ErrorKinds lists every non-empty kind in a stable order.
var ErrorKinds = []ErrorKind{ErrConnect, ErrTimeout, ErrRejected, ErrHTTP4xx, ErrHTTP5xx, ErrStreamBroken, ErrBadPayload, ErrCanceled}

// Valid reports whether k is one of the defined kinds (or empty).
func (k ErrorKind) Valid() bool {
	if k == ErrNone {
		return true
	}
	for _, e := range ErrorKinds {
		if e == k {
			return true
		}
	}
	return false
}

// TokenSource says where a record's token counts came from.
type TokenSource string

const (
	TokensFromUsage     TokenSource = "usage"     // the server's usage object
	TokensFromTokenizer TokenSource = "tokenizer" // counted by knee's tokenizer
	TokensFromChunks    TokenSource = "chunks"    // one token per content chunk (no better source)
	TokensFromSim       TokenSource = "simulator" // exact, from the simulation engine
)

// Phases are the server-side phase times of one request, when the server
// reports them (knee's own server and the simulator do; llama.cpp's and
// Ollama's are mapped onto them, docs/servers.md).
type Phases struct {
	Queue   time.Duration
	Prefill time.Duration
	Decode  time.Duration
	// QueueUnknown: the server reported prefill and decode but nothing the
	// queue time follows from (llama.cpp's timings), so Queue means nothing.
	QueueUnknown bool
}

// Request is one request's measurement. All times are offsets from the run
// start on one monotonic clock. A zero FirstToken with no TokenTimes means
// no content arrived.
type Request struct {
	ID     int64
	Warmup bool // sent during warm-up (or cool-down); excluded from statistics

	Scheduled  time.Duration // when the load model wanted to send it
	Sent       time.Duration // when the request was written to the connection
	FirstToken time.Duration // first chunk with content / reasoning / tool calls
	Done       time.Duration // last content chunk (E2E end)
	StreamEnd  time.Duration // end of the response stream

	// TokenTimes is the arrival of every content chunk; TokenCounts the
	// number of tokens each carried (1 when unknown). Chunks parsed from one
	// socket read share a timestamp; CoalescedChunks counts those that
	// arrived in a read together with an earlier chunk.
	TokenTimes      []time.Duration
	TokenCounts     []int32
	CoalescedChunks int

	// InputTokens is the prompt length the server served (usage's
	// prompt_tokens) when TokenSource is usage; PromptTokensRequested below
	// is what the workload asked for.
	InputTokens  int
	OutputTokens int
	TokenSource  TokenSource
	// CachedPromptTokens is how many prompt tokens the server reports it
	// took from its cache (llama.cpp's timings.cache_n, usage's
	// prompt_tokens_details.cached_tokens); 0 when not reported.
	CachedPromptTokens int

	// Requested shape: the prompt length asked for and max_tokens sent.
	PromptTokensRequested int
	MaxTokens             int

	InFlightAtSend int // requests in flight (including this one) when it was sent
	// Session and Turn place the request in a multi-turn conversation
	// (Turn counts from 1); "" and 0 outside sessions.
	Session string
	Turn    int
	// ConnectionRetries counts resends of this request on a fresh
	// connection where the transport proved the server had not read it;
	// Sent is the last attempt's, so the delay is lag.
	ConnectionRetries int

	ServerPhases *Phases // nil when the server did not report them
	// ServerTokenTimes are the server's intended emission times of each
	// token, as offsets from the server's receipt of the request, when the
	// server reports them (knee's own server does). Ground truth for selftest.
	ServerTokenTimes []time.Duration
	// ServerWriteTimes are when the server actually wrote each token to the
	// connection (just before the write), on the same origin as
	// ServerTokenTimes: the truth a client's measurement is held to, while
	// ServerWriteTimes − ServerTokenTimes is the server's pacing lag.
	ServerWriteTimes []time.Duration

	HTTPStatus   int
	FinishReason string
	Error        ErrorKind
	ErrorMessage string

	// Replica names the fleet replica that served the request (knee sim
	// --replicas); empty for a single server or a gateway rejection.
	Replica string
	// Class names the traffic class the request belongs to: a class of a
	// --mix file, or ProbeClass for --probe-rate probes; "" for a run of
	// one class.
	Class string
	// Items is the number of items an embeddings or rerank answer
	// carried (vectors, scored documents); 0 for a streamed answer. Such
	// a record has no first token: its E2E is Done − Sent.
	Items int
}

// ProbeClass is the class of probe requests (--probe-rate): short requests
// sent beside the main load to measure what it does to an unrelated user.
const ProbeClass = "probe"

// OK reports whether the request completed without error.
func (r *Request) OK() bool { return r.Error == ErrNone }

// HasFirstToken reports whether any content arrived.
func (r *Request) HasFirstToken() bool { return len(r.TokenTimes) > 0 || r.FirstToken > 0 }

// TTFT is first_token − sent.
func (r *Request) TTFT() (time.Duration, bool) {
	if !r.HasFirstToken() {
		return 0, false
	}
	return r.FirstToken - r.Sent, true
}

// TTFTSched is first_token − scheduled: queue-inclusive, what a user feels.
func (r *Request) TTFTSched() (time.Duration, bool) {
	if !r.HasFirstToken() {
		return 0, false
	}
	return r.FirstToken - r.Scheduled, true
}

// E2E is done − sent: to the last content chunk, or for an answer of
// items (embeddings, rerank) to its end.
func (r *Request) E2E() (time.Duration, bool) {
	if r.Items > 0 && !r.HasFirstToken() {
		return r.Done - r.Sent, r.Done > 0
	}
	if !r.HasFirstToken() {
		return 0, false
	}
	return r.Done - r.Sent, true
}

// Lag is sent − scheduled.
func (r *Request) Lag() time.Duration { return r.Sent - r.Scheduled }

// TPOT is (e2e − ttft) / (output_tokens − 1): the first token is excluded
// (vLLM's convention). Undefined for fewer than two output tokens.
func (r *Request) TPOT() (time.Duration, bool) {
	if r.OutputTokens < 2 || !r.HasFirstToken() {
		return 0, false
	}
	return (r.Done - r.FirstToken) / time.Duration(r.OutputTokens-1), true
}

// ITLs appends to dst the gaps between consecutive content chunks and the
// number of tokens the later chunk carried. A chunk carrying k tokens is one
// gap recorded with weight k, never k gaps.
func (r *Request) ITLs(dst []time.Duration) []time.Duration {
	for i := 1; i < len(r.TokenTimes); i++ {
		dst = append(dst, r.TokenTimes[i]-r.TokenTimes[i-1])
	}
	return dst
}

// TokensInChunk returns the token count of chunk i (1 when unknown).
func (r *Request) TokensInChunk(i int) int {
	if i < len(r.TokenCounts) && r.TokenCounts[i] > 0 {
		return int(r.TokenCounts[i])
	}
	return 1
}

// Clone returns a deep copy, for keeping a record whose producer reuses it.
func (r *Request) Clone() Request {
	c := *r
	c.TokenTimes = append([]time.Duration(nil), r.TokenTimes...)
	c.TokenCounts = append([]int32(nil), r.TokenCounts...)
	c.ServerTokenTimes = append([]time.Duration(nil), r.ServerTokenTimes...)
	c.ServerWriteTimes = append([]time.Duration(nil), r.ServerWriteTimes...)
	if r.ServerPhases != nil {
		p := *r.ServerPhases
		c.ServerPhases = &p
	}
	return c
}
