package simserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/wake"
	"github.com/knee-dev/knee/internal/workload"
)

// Config configures a simulated server.
type Config struct {
	// Engine is the simulated serving engine (GPU and model presets, batch
	// limits, QueueLimit for the bounded waiting queue, StepTimeScale).
	Engine simengine.Config
	// ModelName is the served model name clients must send ("" = the
	// model preset's name). Requests with no model get this one.
	ModelName string
	// Adapters are further model names the server answers for, as vLLM
	// serves LoRA adapters (--lora-modules) beside the base model; their
	// requests run on the same engine, as adapters when Engine.LoRA serves
	// any (its slot limit and load cost apply), else as the base model.
	Adapters []string
	// Tokenizer counts prompt tokens (nil = workload.DefaultTokenizer).
	Tokenizer workload.Tokenizer
	// DefaultMaxTokens is the output length of a request without
	// max_tokens (0 = 256), capped by the context left after the prompt.
	DefaultMaxTokens int
	// ImageTokens > 0 is what every image of a prompt costs, in tokens;
	// 0 counts ⌈W/28⌉·⌈H/28⌉ from its size (Qwen2-VL's merged patches).
	ImageTokens int
	// Faults to inject; Seed makes them deterministic.
	Faults Faults
	Seed   uint64
	// Writers is the number of writer goroutines (0 = GOMAXPROCS, at most 8).
	Writers int
	// WriteTimeout bounds one blocked write to a client that stopped
	// reading (0 = 30s); the stream is then dropped.
	WriteTimeout time.Duration
	// NoHijack keeps streams on net/http's ResponseWriter even when the
	// server runs its own listener (Start, StartLocal). By default those
	// take over each streaming connection at the first token and write the
	// chunked framing themselves, which saves about a microsecond of CPU per
	// token; as a plain http.Handler the server always uses ResponseWriter.
	NoHijack bool
	// BodyReadTimeout bounds the time a client may take to send a
	// request's body once its headers are in (0: 30 s); a slower one gets
	// 408 and the connection is freed.
	BodyReadTimeout time.Duration
	// IdleTimeout closes a kept-alive connection that waits this long for
	// its next request (0: 2 minutes), so idle clients cannot hold the
	// server's descriptors for good.
	IdleTimeout time.Duration
}

// Server is the simulated OpenAI-compatible server. It is an http.Handler;
// StartLocal also runs it on a loopback listener.
type Server struct {
	cfg       Config
	model     string
	modelJSON []byte
	tok       workload.Tokenizer
	wordIDs   *[len(words)][]int // the answer words' token ids
	start     time.Time
	created   int64 // unix seconds, for the "created" fields
	clk       clock
	// bodyBytes: request body bytes reserved or read by requests being
	// parsed, held under maxBodyBytesInFlight (body.go).
	bodyBytes atomic.Int64

	// feMu guards frontEnd: the modelled front end's one-at-a-time part.
	feMu     sync.Mutex
	frontEnd simengine.FrontEndQueue

	mu       sync.Mutex // guards eng, streams, idle, asleep, closing, stalled, nextID
	eng      *simengine.Engine
	streams  map[int64]*stream
	hijacked map[*stream]struct{} // streams whose handler watches a hijacked connection
	stalled  []*stream
	idle     bool // the pacer sleeps and no submission has woken it yet
	asleep   bool // the pacer sleeps, woken or not: it has no step under way
	closing  bool
	nextID   int64

	nStalled atomic.Int32
	closed   atomic.Bool
	seq      atomic.Uint64 // arrival number of valid requests (fault draws)
	waker    *wake.Waker
	writers  []*writer
	metrics  *metrics
	mux      *http.ServeMux
	quit     chan struct{}
	pacerWG  sync.WaitGroup
	writeWG  sync.WaitGroup

	httpSrv *http.Server
	ln      net.Listener
	rl      *recycleListener // set by Start: streams write to hijacked connections
	closeMu sync.Once
}

// New builds the engine and starts the pacer and writers. Call Close.
func New(cfg Config) (*Server, error) {
	if err := cfg.Faults.Validate(); err != nil {
		return nil, err
	}
	if cfg.DefaultMaxTokens < 0 {
		return nil, fmt.Errorf("default max tokens %d: want >= 0", cfg.DefaultMaxTokens)
	}
	if cfg.DefaultMaxTokens == 0 {
		cfg.DefaultMaxTokens = 256
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = 30 * time.Second
	}
	if cfg.Engine.Seed == 0 {
		cfg.Engine.Seed = int64(cfg.Seed) // the front-end jitter repeats like the faults
	}
	eng, err := simengine.NewEngine(cfg.Engine)
	if err != nil {
		return nil, err
	}
	cfg.Engine = eng.Config()
	if cfg.Tokenizer == nil {
		t, err := workload.LoadTokenizer("")
		if err != nil {
			return nil, err
		}
		cfg.Tokenizer = t
	}
	if cfg.ModelName == "" {
		cfg.ModelName = cfg.Engine.Model.Name
	}
	nw := cfg.Writers
	if nw <= 0 {
		nw = min(runtime.GOMAXPROCS(0), 8)
	}
	w := wake.New()
	mj, _ := json.Marshal(cfg.ModelName)
	now := time.Now()
	s := &Server{
		cfg: cfg, model: cfg.ModelName, modelJSON: mj, tok: cfg.Tokenizer, wordIDs: encodeWords(cfg.Tokenizer),
		start: now, created: now.Unix(),
		eng: eng, streams: make(map[int64]*stream), hijacked: make(map[*stream]struct{}), nextID: 1,
		waker: w, quit: make(chan struct{}),
	}
	if cfg.Faults.SlowFactor > 1 {
		s.clk = clock{slowAt: int64(cfg.Faults.SlowAfter), factor: cfg.Faults.SlowFactor}
	}
	s.metrics = newMetrics(s.model, cfg.Engine.MaxModelLen, s.engineStats)
	for i := 0; i < nw; i++ {
		wr := &writer{s: s, ch: make(chan []item, 256), free: make(chan []item, 256)}
		s.writers = append(s.writers, wr)
		s.writeWG.Add(1)
		go func() {
			labelServer()
			wr.run()
		}()
	}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("/v1/models", s.serveModels)
	s.mux.HandleFunc("/health", s.serveHealth)
	s.mux.Handle("/metrics", s.metrics.handler())
	s.mux.Handle(DCGMPath, newDCGM(s).handler())
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Code: strp("not_found"),
			Message: fmt.Sprintf("no route %s %s (this server serves /v1/chat/completions, /v1/completions, /v1/messages, /v1/embeddings, /v1/rerank, /rerank, /v1/models, /health, /metrics, /dcgm/metrics)", r.Method, r.URL.Path)})
	})
	s.pacerWG.Add(1)
	go func() {
		labelServer()
		s.pace()
	}()
	return s, nil
}

// labelServer marks the calling goroutine, and every goroutine it starts
// (net/http's per-connection goroutines included), with the pprof label
// knee=server, so a CPU profile of a process running client and server
// together can split their costs (knee selftest does).
func labelServer() {
	pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels("knee", "server")))
}

// StartLocal runs a new server on a loopback port chosen by the system and
// returns its base URL ("http://127.0.0.1:PORT", without /v1). It stops when
// ctx ends or Close is called.
func StartLocal(ctx context.Context, cfg Config) (baseURL string, srv *Server, err error) {
	return Start(ctx, "127.0.0.1:0", cfg)
}

// Start runs a new server on addr (host:port) and returns its base URL.
func Start(ctx context.Context, addr string, cfg Config) (baseURL string, srv *Server, err error) {
	s, err := New(cfg)
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		s.Close()
		return "", nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	s.ln = ln
	stampListenerSocket(ln)
	var serveLn net.Listener = stampListener{Listener: ln, s: s}
	idle := cfg.IdleTimeout
	if idle <= 0 {
		idle = defaultIdleTimeout
	}
	if !cfg.NoHijack {
		s.rl = newRecycleListener(serveLn)
		s.rl.idleTimeout = idle
		serveLn = s.rl
	}
	s.httpSrv = &http.Server{Handler: s, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: idle, ConnContext: connContext}
	go func() {
		labelServer()
		s.httpSrv.Serve(serveLn)
	}()
	go func() {
		select {
		case <-ctx.Done():
			s.Close()
		case <-s.quit:
		}
	}()
	return "http://" + ln.Addr().String(), s, nil
}

// Addr is the listening address when started with Start or StartLocal.
func (s *Server) Addr() string {
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// ServeHTTP routes to the endpoints.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	recv := s.now()
	// Every request takes its connection's arrival stamp, so none is left
	// for the next request on the connection.
	if sc, ok := r.Context().Value(stampKey{}).(*stampConn); ok {
		if at := sc.take(); at > 0 && at <= recv {
			recv = at // when the request's bytes arrived, not when parsing ended
		}
		defer func() {
			if !sc.hijacked.Swap(false) {
				sc.arm() // the response is complete: the next read starts a request
			}
		}()
	}
	if ep, ok := endpointOf(r.URL.Path); ok {
		s.serveGenerate(w, r, ep, recv)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// Model is the served model name.
func (s *Server) Model() string { return s.model }

// Config is the configuration with defaults filled in.
func (s *Server) Config() Config { return s.cfg }

// Preset is what the server simulates, in short: "Llama-3.1-8B on 1× H100-SXM".
func (s *Server) Preset() string {
	return fmt.Sprintf("%s on %d× %s", s.model, s.cfg.Engine.TP, s.cfg.Engine.GPU.Name)
}

// Describe says in one line what is simulated.
func (s *Server) Describe() string {
	c := s.cfg.Engine
	st := s.engineStats()
	q := "unbounded"
	if c.QueueLimit > 0 {
		q = fmt.Sprint(c.QueueLimit)
	}
	d := fmt.Sprintf("simulated %s on %d× %s (max_num_seqs %d, max_num_batched_tokens %d, KV cache %d tokens, max model len %d, waiting queue %s",
		s.model, c.TP, c.GPU.Name, c.MaxNumSeqs, c.MaxNumBatchedTokens, st.KVCapacityTokens, c.MaxModelLen, q)
	if c.StepTimeScale != 1 {
		d += fmt.Sprintf(", step time ×%g", c.StepTimeScale)
	}
	d += ")"
	if s.cfg.Faults.Any() {
		d += "; faults: " + s.cfg.Faults.String()
	}
	return d
}

// PacingLag summarises, over every token written since the start (or the
// last ResetPacingLag), how late it was written (just before its write(2)) against its
// simulated emission time.
func (s *Server) PacingLag() LagStats {
	hs := make([]*lagHist, len(s.writers))
	for i, w := range s.writers {
		hs[i] = &w.lag
	}
	return mergeLag(hs)
}

// ResetPacingLag clears the pacing-lag histogram.
func (s *Server) ResetPacingLag() {
	for _, w := range s.writers {
		w.lag.reset()
	}
}

// EngineStats is a snapshot of the simulated engine.
func (s *Server) EngineStats() simengine.EngineStats { return s.engineStats() }

func (s *Server) engineStats() simengine.EngineStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.eng.Stats()
}

// Close stops the server: the listener (when started here), the pacer and
// the writers. Streams still running are cut.
func (s *Server) Close() error {
	var err error
	s.closeMu.Do(func() {
		s.mu.Lock()
		s.closing = true
		for st := range s.hijacked {
			st.conn.SetReadDeadline(aLongTimeAgo) // their handlers drop the connection
		}
		s.mu.Unlock()
		s.closed.Store(true)
		close(s.quit)
		s.waker.Kick()
		if s.rl != nil {
			s.rl.Close()
		}
		if s.httpSrv != nil {
			err = s.httpSrv.Close()
			if errors.Is(err, http.ErrServerClosed) {
				err = nil
			}
		}
		s.pacerWG.Wait()
		for _, w := range s.writers {
			close(w.ch)
		}
		s.writeWG.Wait()
		s.waker.Close()
	})
	return err
}

// now is server time: ns since the server started, monotonic.
func (s *Server) now() int64 { return int64(time.Since(s.start)) }

func (s *Server) serveModels(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeError(w, &apiError{Status: http.StatusMethodNotAllowed, Type: "invalid_request_error", Message: "use GET for /v1/models"})
		return
	}
	data := []map[string]any{{
		"id": s.model, "object": "model", "created": s.created, "owned_by": "knee",
		"root": s.cfg.Engine.Model.Name, "max_model_len": s.cfg.Engine.MaxModelLen,
	}}
	// Adapters are listed as vLLM lists LoRA modules: their base as parent.
	for _, a := range s.cfg.Adapters {
		data = append(data, map[string]any{"id": a, "object": "model", "created": s.created, "owned_by": "knee",
			"root": a, "parent": s.model, "max_model_len": s.cfg.Engine.MaxModelLen})
	}
	b, _ := json.Marshal(map[string]any{"object": "list", "data": data})
	w.Header().Set("Content-Type", "application/json")
	w.Write(append(b, '\n'))
}

func (s *Server) serveHealth(w http.ResponseWriter, _ *http.Request) {
	if s.closed.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}
