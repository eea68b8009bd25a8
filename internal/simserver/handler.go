package simserver

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/knee-dev/knee/internal/simengine"
)

// stream is one request in flight. Fields are grouped by owner.
type stream struct {
	// Set by the handler before the stream is visible to anyone else.
	id           int64
	ep           endpoint
	items        int // texts of an embeddings or rerank request
	streaming    bool
	includeUsage bool
	inputTokens  int
	outputTokens int
	recvS        int64 // server time of receipt
	frontEndS    int64 // the modelled front end's time before the engine saw it
	arrV         int64 // virtual arrival time given to the engine
	tmpl         chunkTemplate
	plan         plan
	w            http.ResponseWriter
	rc           *http.ResponseController
	done         chan struct{} // closed by the writer when the response ends

	// Owned by the pacer (under Server.mu): token times in server ns since
	// the server started; the stall state.
	tokenTimes []int64
	holdUntil  int64
	held       []item
	// Set by the pacer before the items that use them are dispatched.
	hdrQueue, hdrPrefill int64 // -1 when unknown at the first token
	final                *timing
	reason               string

	// Owned by the writer, under mu (the handler takes mu to retire it).
	mu         sync.Mutex
	dead       bool            // the handler has returned or is returning
	reusable   bool            // HTTP/1.1 keep-alive: the connection may be hijacked and handed back
	conn       net.Conn        // the hijacked connection, if any
	raw        syscall.RawConn // its socket for non-blocking writes (unix)
	br         *bufio.Reader   // its read buffer (a pipelined request may wait there)
	headerSent bool
	outcome    outcome
	deadlineAt int64
	// writeTimes: server time just before the write(2) that carried each
	// token; unflushed counts the last ones still in net/http's buffer
	// (their write is the next flush).
	writeTimes []int64
	unflushed  int
}

type outcome uint8

const (
	running outcome = iota
	finished
	cut
	writeFailed
)

// serveGenerate serves every endpoint the engine answers (generation,
// embeddings, rerank); recv is the server time the request arrived.
func (s *Server) serveGenerate(w http.ResponseWriter, r *http.Request, ep endpoint, recv int64) {
	fail := func(e *apiError) { writeErrorAs(w, ep, e) }
	if r.Method != http.MethodPost {
		fail(&apiError{Status: http.StatusMethodNotAllowed, Type: "invalid_request_error", Message: "use POST for " + r.URL.Path})
		return
	}
	release, aerr := s.admitBody(w, r)
	if aerr != nil {
		fail(aerr)
		return
	}
	g, aerr := parseRequest(r, ep, s.tok.Encode, !s.cfg.Engine.NoPrefixCaching, s.cfg.ImageTokens)
	release(aerr == nil)
	if aerr != nil {
		fail(aerr)
		return
	}
	if g.model != "" && !s.servesModel(g.model) {
		fail(&apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Param: strp("model"), Code: strp("model_not_found"),
			Message: fmt.Sprintf("The model `%s` does not exist. This server serves `%s`.", g.model, s.model)})
		return
	}
	in := max(g.inputTokens, 1) // an empty prompt still feeds the model one (BOS) token
	limit := s.cfg.Engine.MaxModelLen
	param := ep.promptParam()
	out := g.maxTokens
	if out == 0 {
		out = min(s.cfg.DefaultMaxTokens, limit-in)
	}
	if ep.items() {
		// Nothing is generated: the engine runs the prefill (a batch as
		// one sequence) and its one step ends the request.
		out = 1
		if in >= limit {
			fail(badRequest(param, "context_length_exceeded", fmt.Sprintf(
				"The %d texts hold %d tokens; knee serve runs a batch as one sequence, and this model's maximum context length is %d tokens. Send fewer or shorter texts.",
				g.items, in, limit)))
			return
		}
	}
	if in >= limit || in+out > limit {
		req := in + max(out, 1)
		if g.maxTokens == 0 {
			req = in
		}
		fail(badRequest(param, "context_length_exceeded", fmt.Sprintf(
			"This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the %s, %d in the completion). Please reduce the length of the %s or completion.",
			limit, req, in, param, max(out, 0), param)))
		return
	}
	// Output length is max_tokens whether or not ignore_eos is set: the
	// simulated model never stops early, so runs are reproducible.
	n := s.seq.Add(1) - 1
	p := s.cfg.Faults.plan(s.cfg.Seed, n, out)
	if p.fail && ep == epMessages && g.stream { // whole, it fails as any endpoint does
		writeMessagesFault(w, int64(n), s.modelJSON, in)
		return
	}
	if p.fail {
		fail(&apiError{Status: http.StatusInternalServerError, Type: "InternalServerError", Code: strp("injected_fault"),
			Message: "injected fault: the simulated server failed this request (--fault-error-rate)"})
		return
	}
	st := &stream{
		streaming: g.stream, includeUsage: g.includeUsage,
		inputTokens: in, outputTokens: out, recvS: recv, plan: p, ep: ep, items: g.items,
		w: w, rc: http.NewResponseController(w), done: make(chan struct{}),
		hdrQueue: -1, hdrPrefill: -1, reason: "length",
		reusable:   g.stream && r.ProtoAtLeast(1, 1) && !r.Close,
		tokenTimes: make([]int64, 0, min(out, 4096)),
		writeTimes: make([]int64, 0, min(out, 4096)),
	}
	// The modelled front end (HTTP, chat template, tokenization of a
	// Python server) holds the request before the engine sees it; its time
	// is in TTFT and in the reported queue time, as in knee sim.
	fe := int64(0)
	if c := s.eng.FrontEnd(int64(n), in); !c.Zero() {
		// Its turns at the serial lane (two with a first part: the second
		// queues behind every request that joined meanwhile), each waited
		// out in wall time, then its latency.
		for at, last := recv, false; !last; {
			s.feMu.Lock()
			at, last = s.frontEnd.Next(at, &c)
			s.feMu.Unlock()
			fe = at - recv
			if d := time.Duration(at - s.now()); d > 0 {
				t := time.NewTimer(d)
				select {
				case <-t.C:
				case <-r.Context().Done():
					t.Stop()
					return
				}
			}
		}
	}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		fail(&apiError{Status: http.StatusServiceUnavailable, Type: "ServiceUnavailableError", Message: "server shutting down"})
		return
	}
	id := s.nextID
	s.nextID++
	st.id = id
	if ep == epMessages {
		st.tmpl = newMessagesTemplate(id, s.modelJSON, in)
	} else {
		st.tmpl = newChunkTemplate(ep.chat(), id, s.created, s.modelJSON)
	}
	v := s.clk.toVirtual(recv + fe)
	if !s.eng.HasWork() || s.asleep {
		// No step is under way: the next one starts no earlier than this
		// arrival (the pacer starts it at the engine's time).
		s.eng.AdvanceTo(v)
	}
	st.arrV = min(v, s.eng.Now())
	st.frontEndS = fe
	content := g.content(id, out, s.wordIDs)
	if err := s.eng.SubmitRequest(simengine.Request{ID: id, InputTokens: in, OutputTokens: out, At: v, Content: content, Adapter: s.adapterID(g.model)}); err != nil {
		stats := s.eng.Stats()
		s.mu.Unlock()
		switch {
		case errors.Is(err, simengine.ErrQueueFull):
			s.metrics.rejected.Inc()
			w.Header().Set("Retry-After", strconv.Itoa(retryAfter(stats)))
			fail(&apiError{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Code: strp("queue_full"),
				Message: fmt.Sprintf("The server's waiting queue is full (%d requests waiting, limit %d). Retry later.", stats.Waiting, s.cfg.Engine.QueueLimit)})
		case errors.Is(err, simengine.ErrTooLong):
			fail(badRequest(param, "context_length_exceeded", err.Error()))
		default:
			fail(badRequest("", "", err.Error()))
		}
		return
	}
	s.streams[id] = st
	if s.idle {
		s.idle = false
		s.waker.Kick()
	}
	s.mu.Unlock()

	// Streams on the server's own listener take over their connection now,
	// off the writers' path, unless the first token has already gone out.
	if st.reusable && s.rl != nil {
		st.mu.Lock()
		if !st.headerSent && st.outcome == running {
			if c, brw, err := st.rc.Hijack(); err == nil {
				st.conn, st.br, st.raw = c, brw.Reader, rawConnOf(c)
				if sc := stampConnOf(c); sc != nil {
					sc.hijacked.Store(true) // the writer re-arms it at the final chunk
				}
			}
		}
		conn := st.conn
		st.mu.Unlock()
		if conn != nil {
			s.watch(st, conn)
			return
		}
	}

	gone := false
	select {
	case <-st.done:
	case <-r.Context().Done():
		gone = true
	case <-s.quit:
	}
	s.mu.Lock()
	if s.streams[id] == st {
		s.eng.Cancel(id)
		delete(s.streams, id)
		s.metrics.success.WithLabelValues("abort").Inc()
	}
	s.mu.Unlock()
	st.mu.Lock()
	st.dead = true
	oc, hdr := st.outcome, st.headerSent
	st.mu.Unlock()
	switch {
	case oc == finished || gone:
		return
	case !hdr && oc == running: // shutting down before the first token
		fail(&apiError{Status: http.StatusServiceUnavailable, Type: "ServiceUnavailableError", Message: "server shutting down"})
		return
	}
	// A cut stream, a failed write or a shutdown mid-stream: drop the
	// connection without finishing the response.
	panic(http.ErrAbortHandler)
}

// retryAfter estimates, in whole seconds (at least 1), how long the queue
// needs to drain by one request's worth: the last step time times the
// waiting requests per running slot.
func retryAfter(st simengine.EngineStats) int {
	if st.Running == 0 || st.LastStepNS == 0 {
		return 1
	}
	secs := float64(st.LastStepNS) * float64(st.Waiting) / float64(st.Running) / 1e9
	return max(1, min(60, int(secs+0.999)))
}

// servesModel accepts the served name and the model preset's name and
// aliases, ignoring case ("llama-3.1-8b" finds "Llama-3.1-8B").
func (s *Server) servesModel(name string) bool {
	if name == s.model || strings.EqualFold(name, s.model) || strings.EqualFold(name, s.cfg.Engine.Model.Name) {
		return true
	}
	for _, a := range s.cfg.Engine.Model.Aliases {
		if strings.EqualFold(name, a) {
			return true
		}
	}
	for _, a := range s.cfg.Adapters {
		if name == a {
			return true
		}
	}
	return false
}

// adapterID is the engine's number of the adapter a model name names: its
// place in Config.Adapters from 1, when the engine serves adapters (else
// every request runs as the base model); 0 for the base model.
func (s *Server) adapterID(name string) int32 {
	if s.cfg.Engine.LoRA.MaxLoRAs == 0 {
		return 0
	}
	for i, a := range s.cfg.Adapters {
		if name == a {
			return int32(i + 1)
		}
	}
	return 0
}

// aLongTimeAgo is a read deadline in the past: it ends a blocked Read.
var aLongTimeAgo = time.Unix(1, 0)

// watch serves a hijacked stream from its handler goroutine, which would
// otherwise only wait: it reads the connection, as net/http's background
// read does, so a client that goes away is noticed at once (and its
// request canceled). The writer ends the read with a past deadline when the
// response is complete (or cut); a complete response hands the connection
// back for the client's next request.
func (s *Server) watch(st *stream, conn net.Conn) {
	s.mu.Lock()
	s.hijacked[st] = struct{}{}
	closing := s.closing
	s.mu.Unlock()
	if closing {
		conn.SetReadDeadline(aLongTimeAgo)
	}
	var pending []byte // bytes of a pipelined next request
	if st.br != nil && st.br.Buffered() > 0 {
		b, _ := st.br.Peek(st.br.Buffered())
		pending = append(pending, b...)
	}
	var buf [512]byte
	var rerr error
	for {
		n, err := conn.Read(buf[:])
		if len(pending) < 64<<10 {
			pending = append(pending, buf[:n]...)
		}
		if err != nil {
			rerr = err
			break
		}
	}
	s.mu.Lock()
	delete(s.hijacked, st)
	if s.streams[st.id] == st { // the client went away mid-stream
		s.eng.Cancel(st.id)
		delete(s.streams, st.id)
		s.metrics.success.WithLabelValues("abort").Inc()
	}
	closing = s.closing
	s.mu.Unlock()
	st.mu.Lock()
	st.dead = true
	oc := st.outcome
	st.conn = nil
	st.mu.Unlock()
	var ne net.Error
	if oc == finished && !closing && errors.As(rerr, &ne) && ne.Timeout() {
		conn.SetReadDeadline(time.Time{})
		s.rl.give(conn, pending)
		return
	}
	conn.Close() // cut, failed, shut down, or the client left
}
