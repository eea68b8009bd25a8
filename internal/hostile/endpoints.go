package hostile

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// EndpointFault is how Endpoints answers one embeddings, rerank or
// Messages request.
type EndpointFault int

const (
	EndpointOK     EndpointFault = iota // a whole, well-formed answer
	Status500Body                       // HTTP 500 with the API's error body
	Overloaded                          // HTTP 529 (Anthropic's overloaded_error) with its error body
	NotJSON                             // 200 with an HTML page
	Truncated                           // 200, the answer's JSON cut in half (the body itself complete)
	Dropped                             // 200, half the answer, then the connection is dropped
	ErrorIn200                          // 200 whose body is an error object (code 503) / an overloaded_error event
	TooFewItems                         // one item fewer than inputs sent / a stream ending without message_stop
	WrongShape                          // items without vectors or scores / an event without a type
	DuplicateIndex                      // an index answered twice / an invalid_request_error event
	numEndpointFaults
)

// EndpointFaults lists every endpoint fault, EndpointOK first.
func EndpointFaults() []EndpointFault {
	f := make([]EndpointFault, numEndpointFaults)
	for i := range f {
		f[i] = EndpointFault(i)
	}
	return f
}

var endpointFaultNames = [...]string{"ok", "500", "529", "not-json", "truncated", "dropped", "error-in-200", "too-few", "wrong-shape", "duplicate-index"}

func (f EndpointFault) String() string {
	if f >= 0 && f < numEndpointFaults {
		return endpointFaultNames[f]
	}
	return "endpoint-fault(" + strconv.Itoa(int(f)) + ")"
}

// EndpointEntry is one request Endpoints read.
type EndpointEntry struct {
	ID       int64
	Path     string
	Fault    EndpointFault
	Answered bool // a whole, well-formed answer was sent
}

// Endpoints answers /v1/embeddings, /v1/rerank, /rerank and /v1/messages
// with the fault its plan gives per request, keeping a log like Server's.
type Endpoints struct {
	plan func(id int64) EndpointFault
	log  logOf[EndpointEntry]
}

// NewEndpoints returns a server that answers request id with plan(id).
func NewEndpoints(plan func(id int64) EndpointFault) *Endpoints { return &Endpoints{plan: plan} }

// Log returns a copy of the entries so far.
func (s *Endpoints) Log() []EndpointEntry { return s.log.entries() }

func (s *Endpoints) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/embeddings", "/v1/rerank", "/rerank", "/v1/messages":
	default:
		http.NotFound(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody))
	if err != nil {
		return
	}
	id := int64(-1)
	if m := markerRE.FindSubmatch(body); m != nil {
		id, _ = strconv.ParseInt(string(m[1]), 10, 64)
	}
	f := s.plan(id)
	i := s.log.add(EndpointEntry{ID: id, Path: r.URL.Path, Fault: f})
	if r.URL.Path == "/v1/messages" {
		if s.messages(w, f) {
			s.log.update(i, func(e *EndpointEntry) { e.Answered = true })
		}
		return
	}
	var req struct {
		Input, Documents, Texts []string
	}
	json.Unmarshal(body, &req)
	n := len(req.Input) + len(req.Documents) + len(req.Texts)
	answer := itemsAnswer(r.URL.Path, n, f)
	switch f {
	case Status500Body:
		writeJSON(w, http.StatusInternalServerError, `{"error":{"message":"injected 500","type":"InternalServerError","code":500}}`)
	case Overloaded:
		writeJSON(w, 529, `{"error":{"message":"injected overload","type":"overloaded","code":529}}`)
	case NotJSON:
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html><body>502 Bad Gateway</body></html>")
	case Truncated:
		writeJSON(w, http.StatusOK, answer[:len(answer)/2])
	case Dropped:
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
		io.WriteString(w, answer[:len(answer)/2])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	case ErrorIn200:
		writeJSON(w, http.StatusOK, `{"error":{"message":"injected: server busy","type":"ServiceUnavailable","code":503}}`)
	default:
		writeJSON(w, http.StatusOK, answer)
		if f == EndpointOK {
			s.log.update(i, func(e *EndpointEntry) { e.Answered = true })
		}
	}
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// itemsAnswer is an embeddings or rerank answer for n inputs, bent by f.
func itemsAnswer(path string, n int, f EndpointFault) string {
	if f == TooFewItems {
		n--
	}
	var items []string
	for k := range n {
		idx := k
		if f == DuplicateIndex && k == n-1 && n > 1 {
			idx = 0
		}
		switch {
		case path == "/v1/embeddings" && f == WrongShape:
			items = append(items, fmt.Sprintf(`{"index":%d,"embedding":[]}`, idx))
		case path == "/v1/embeddings":
			items = append(items, fmt.Sprintf(`{"index":%d,"object":"embedding","embedding":[0.25,-0.5]}`, idx))
		case f == WrongShape:
			items = append(items, fmt.Sprintf(`{"index":%d,"relevance_score":"high"}`, idx))
		case path == "/rerank":
			items = append(items, fmt.Sprintf(`{"index":%d,"score":0.5}`, idx))
		default:
			items = append(items, fmt.Sprintf(`{"index":%d,"relevance_score":0.5}`, idx))
		}
	}
	list := "[" + strings.Join(items, ",") + "]"
	switch path {
	case "/v1/embeddings":
		return `{"object":"list","data":` + list + `,"usage":{"prompt_tokens":7,"total_tokens":7}}`
	case "/rerank":
		return list
	}
	return `{"id":"r","results":` + list + `,"usage":{"total_tokens":7}}`
}

// Messages events.
const (
	msgStart = `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","usage":{"input_tokens":7,"output_tokens":1}}}`
	msgDelta = `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"tok"}}`
)

// messages answers /v1/messages with f; it reports a whole stream.
func (s *Endpoints) messages(w http.ResponseWriter, f EndpointFault) bool {
	switch f {
	case Status500Body:
		writeJSON(w, http.StatusInternalServerError, `{"type":"error","error":{"type":"api_error","message":"injected 500"}}`)
		return false
	case Overloaded:
		writeJSON(w, 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
		return false
	case NotJSON:
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html><body>502 Bad Gateway</body></html>")
		return false
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	event := func(typ, data string) {
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, data)
		fl.Flush()
	}
	event("message_start", msgStart)
	event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	event("ping", `{"type":"ping"}`)
	switch f {
	case Truncated:
		event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","te`)
		return false
	case Dropped:
		event("content_block_delta", msgDelta)
		panic(http.ErrAbortHandler)
	case ErrorIn200:
		event("content_block_delta", msgDelta)
		event("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
		return false
	case TooFewItems: // ends without message_delta or message_stop
		event("content_block_delta", msgDelta)
		event("content_block_stop", `{"type":"content_block_stop","index":0}`)
		return false
	case WrongShape:
		event("content_block_delta", `{"index":0,"delta":{"text":"tok"}}`)
		return false
	case DuplicateIndex:
		event("error", `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long"}}`)
		return false
	}
	for range Tokens {
		event("content_block_delta", msgDelta)
	}
	event("content_block_stop", `{"type":"content_block_stop","index":0}`)
	event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":`+strconv.Itoa(Tokens)+`}}`)
	event("message_stop", `{"type":"message_stop"}`)
	return true
}
