// Package hostile is an OpenAI-compatible streaming test server that
// misbehaves on purpose, per request, and keeps its own log of what it did:
// the other side of the books when a test holds knee's accounting to one
// record per request read and no failure reported as success.
//
// Closer (closer.go) is the other kind of misbehaviour, per connection: a
// raw-TCP server that closes every connection after its response, unsaid.
//
// Reading order: Fault names the misbehaviours; Server.ServeHTTP reads a
// request, finds its id in the prompt (Marker), asks the plan which fault
// to inject, logs the request as read and answers with the fault; Log
// returns the entries. Every answer is bounded in time by the client
// (streams that never end stop when the client goes) and the test's
// cleanup.
package hostile

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Fault is how the server answers one request.
type Fault int

const (
	OK            Fault = iota // a normal stream of Tokens content chunks
	Status500                  // HTTP 500 with a JSON error body
	Status429                  // HTTP 429 with Retry-After
	Status503                  // HTTP 503
	Stall                      // headers and a role chunk, then nothing until the client gives up
	Cut                        // two content chunks, then the connection is dropped
	Malformed                  // a content chunk, then a data line that is not JSON
	Oversized                  // one data line longer than any event knee accepts (9 MiB)
	NeverEnding                // content chunks for as long as the client reads
	Undelimited                // data lines for as long as the client reads, never the blank line ending an event
	Gzip                       // a gzip-compressed stream the client did not ask for
	ReadThenClose              // the request is read whole, then the connection is closed unanswered
	Heartbeats                 // chunks without content for as long as the client reads
	StallHeaders               // the request is read, then nothing at all (no status line) until the client gives up
	numFaults
)

// Faults lists every fault, OK first.
func Faults() []Fault {
	f := make([]Fault, numFaults)
	for i := range f {
		f[i] = Fault(i)
	}
	return f
}

var faultNames = [...]string{"ok", "500", "429", "503", "stall", "cut", "malformed", "oversized", "never-ending", "undelimited", "gzip", "read-then-close", "heartbeats", "stall-headers"}

func (f Fault) String() string {
	if f >= 0 && f < numFaults {
		return faultNames[f]
	}
	return "fault(" + strconv.Itoa(int(f)) + ")"
}

// Tokens is the length of an OK stream, in content chunks.
const Tokens = 3

// OversizedLine is the length of the Oversized fault's data line: over
// the client's line and event bounds (8 MiB).
const OversizedLine = 9 << 20

// Marker is the text a client puts in request id's prompt so the server
// can key its log by the client's id.
func Marker(id int64) string { return "hostile-req-" + strconv.FormatInt(id, 10) + "." }

var markerRE = regexp.MustCompile(`hostile-req-(\d+)\.`)

// maxRequestBody bounds what the server reads of one request.
const maxRequestBody = 1 << 20

// Entry is one request the server read.
type Entry struct {
	ID       int64 // from the prompt's Marker; -1 when absent
	Fault    Fault
	Answered bool // the server sent a complete, successful stream
}

// Server injects the faults its plan gives, per request.
type Server struct {
	plan func(id int64) Fault
	log  logOf[Entry]
}

// New returns a server that answers request id with plan(id).
func New(plan func(id int64) Fault) *Server { return &Server{plan: plan} }

// Log returns a copy of the entries so far, in the order requests were
// read.
func (s *Server) Log() []Entry { return s.log.entries() }

const (
	roleChunk    = `{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`
	contentChunk = `{"choices":[{"index":0,"delta":{"content":"tok"},"finish_reason":null}]}`
	finishChunk  = `{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`
)

// ServeHTTP injects faults on the two generation endpoints; every other
// path (a client's start-up probes: /tokenize, /v1/models) is 404 and not
// logged, so the log holds only requests that make records.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" && r.URL.Path != "/v1/completions" {
		http.NotFound(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody))
	if err != nil {
		return // not read whole: not in the log
	}
	id := int64(-1)
	if m := markerRE.FindSubmatch(body); m != nil {
		id, _ = strconv.ParseInt(string(m[1]), 10, 64)
	}
	f := s.plan(id)
	i := s.log.add(Entry{ID: id, Fault: f})
	ctx := r.Context()
	fl := w.(http.Flusher)
	event := func(data string) bool {
		if _, err := io.WriteString(w, "data: "+data+"\n\n"); err != nil {
			return false
		}
		fl.Flush()
		return ctx.Err() == nil
	}
	switch f {
	case Status500:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `{"error":{"message":"injected 500","code":500}}`)
		return
	case Status429:
		w.Header().Set("Retry-After", "1")
		http.Error(w, "injected 429", http.StatusTooManyRequests)
		return
	case Status503:
		http.Error(w, "injected 503", http.StatusServiceUnavailable)
		return
	case ReadThenClose:
		if hc, _, err := w.(http.Hijacker).Hijack(); err == nil {
			hc.Close()
		}
		return
	case StallHeaders:
		select {
		case <-ctx.Done():
		case <-time.After(stallLimit):
		}
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	if f == Gzip {
		w.Header().Set("Content-Encoding", "gzip")
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		for _, d := range okStream() {
			fmt.Fprintf(zw, "data: %s\n\n", d)
		}
		zw.Close()
		w.Write(buf.Bytes())
		return
	}
	if !event(roleChunk) {
		return
	}
	switch f {
	case OK:
		for _, d := range okStream()[1:] {
			if !event(d) {
				return
			}
		}
		s.log.update(i, func(e *Entry) { e.Answered = true })
	case Stall:
		select {
		case <-ctx.Done():
		case <-time.After(stallLimit):
		}
	case Cut:
		event(contentChunk)
		event(contentChunk)
		panic(http.ErrAbortHandler) // drops the connection mid-stream
	case Malformed:
		event(contentChunk)
		event(`{"choices":[{"index":0,"delta":{"content":"to`)
		event("[DONE]")
	case Oversized:
		event(contentChunk)
		line := make([]byte, 0, OversizedLine+16)
		line = append(line, `data: {"choices":[{"index":0,"delta":{"content":"`...)
		line = append(line, bytes.Repeat([]byte("x"), OversizedLine)...)
		line = append(line, "\"}}]}\n\n"...)
		w.Write(line)
		fl.Flush()
	case NeverEnding:
		for event(contentChunk) {
		}
	case Heartbeats:
		for event(`{"choices":[{"index":0,"delta":{},"finish_reason":null}]}`) {
			time.Sleep(time.Millisecond) // a chunk per ms: a keep-alive, not a flood
		}
	case Undelimited:
		line := "data: " + strings.Repeat("u", 1000) + "\n"
		lines := strings.Repeat(line, 64)
		for ctx.Err() == nil {
			if _, err := io.WriteString(w, lines); err != nil {
				return
			}
			fl.Flush()
		}
	}
}

// okStream is the data of a complete stream after nothing: role, Tokens
// content chunks, finish, usage, [DONE].
func okStream() []string {
	d := []string{roleChunk}
	for range Tokens {
		d = append(d, contentChunk)
	}
	return append(d, finishChunk,
		`{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":`+strconv.Itoa(Tokens)+`}}`, "[DONE]")
}

// stallLimit guards a Stall against a client that never gives up: the
// handler returns after it (tests set a request timeout far below).
var stallLimit = time.Minute
