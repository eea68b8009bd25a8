package web

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/knee-dev/knee/internal/workload"
)

// TokenHeader carries the per-process token on every API request that may
// start work. The page reads the token from its own HTML (a meta tag the
// server fills in), which another origin cannot read.
const TokenHeader = "X-Knee-Token"

// Config is what the CLI hands the UI.
type Config struct {
	// Store is the run database (nil: the runs page says there is none).
	// A *store.Store; in the WebAssembly build, which has no database, no
	// value can be given.
	Store runStore
	// ReportHTML renders a stored run as knee report --format html does.
	ReportHTML func(id int64) ([]byte, error)
	// Compare sets two stored runs side by side as knee compare --json does.
	Compare func(a, b int64) (any, error)
	// BenchURL is the one target the page may start a load against: the
	// --url the user gave on the command line ("" offers none).
	BenchURL string
	// StartBench starts a short bench against BenchURL in the background;
	// it is stored like any run, so the runs page finds it (nil: not offered).
	StartBench func(p BenchParams) error
	// Trace is a trace the page may replay on the simulator (knee ui
	// --trace; nil: none).
	Trace *workload.Trace
	// Token is the per-process secret; empty generates one.
	Token string
}

// BenchParams is what the page may choose of a bench it starts.
type BenchParams struct {
	Concurrency  int
	Requests     int
	InputTokens  string
	OutputTokens string
}

// Server serves the page, its assets and the API.
type Server struct {
	cfg   Config
	token string
	index *template.Template
	mux   *http.ServeMux

	mu    sync.Mutex
	hosts map[string]bool // Host header values accepted (set by Allow)
	pair  *pairResult     // the worked pair, simulated once
}

// New builds a server. Call Allow with the address it listens on before
// serving, so the Host check knows which names are its own.
func New(cfg Config) (*Server, error) {
	s := &Server{cfg: cfg, token: cfg.Token, hosts: map[string]bool{}}
	if s.token == "" {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		s.token = hex.EncodeToString(b)
	}
	idx, err := indexTemplate()
	if err != nil {
		return nil, err
	}
	s.index = idx
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		return nil, err
	}
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", s.serveIndex)
	m.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	m.HandleFunc("GET /api/presets", s.apiPresets)
	m.HandleFunc("POST /api/sim", s.work(s.apiSim))
	m.HandleFunc("POST /api/sweep", s.work(s.apiSweep))
	m.HandleFunc("POST /api/lab", s.work(s.apiLab))
	m.HandleFunc("POST /api/pair", s.work(s.apiPair))
	m.HandleFunc("GET /api/lesson", s.apiLesson)
	m.HandleFunc("GET /api/learn", s.apiLearn)
	m.HandleFunc("POST /api/learn/check", s.work(s.apiLearnCheck))
	m.HandleFunc("GET /api/runs", s.apiRuns)
	m.HandleFunc("GET /api/runs/{id}", s.apiRun)
	m.HandleFunc("GET /api/runs/{id}/report", s.apiRunReport)
	m.HandleFunc("GET /api/runs/{id}/live", s.apiRunLive)
	m.HandleFunc("GET /api/runs/{id}/shards", s.apiRunShards)
	m.HandleFunc("GET /api/runs/{id}/gpu", s.apiRunGPU)
	m.HandleFunc("GET /api/runs/{id}/guided", s.apiRunGuided)
	m.HandleFunc("GET /api/compare", s.apiCompare)
	m.HandleFunc("POST /api/bench", s.work(s.apiBench))
	s.mux = m
	return s, nil
}

func indexTemplate() (*template.Template, error) {
	return template.ParseFS(assets, "assets/index.html")
}

// Token is the per-process token the page carries.
func (s *Server) Token() string { return s.token }

// Allow accepts Host headers naming the listening address: its host and
// port as bound, and the loopback names with the same port when it is
// bound to a loopback or unspecified address.
func (s *Server) Allow(addr net.Addr) {
	s.mu.Lock()
	defer s.mu.Unlock()
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return
	}
	s.hosts[net.JoinHostPort(host, port)] = true
	ip := net.ParseIP(host)
	if ip != nil && (ip.IsLoopback() || ip.IsUnspecified()) {
		for _, h := range []string{"localhost", "127.0.0.1", "::1"} {
			s.hosts[net.JoinHostPort(h, port)] = true
		}
	}
}

// AllowHost accepts one more Host header value (host:port), for a name the
// user reaches a non-loopback binding by.
func (s *Server) AllowHost(hostport string) {
	s.mu.Lock()
	s.hosts[strings.ToLower(hostport)] = true
	s.mu.Unlock()
}

func (s *Server) hostOK(h string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hosts[strings.ToLower(h)]
}

// ServeHTTP refuses a foreign Host (DNS rebinding: a page on evil.example
// whose name now resolves to 127.0.0.1 still sends Host: evil.example) and a
// foreign Origin (a cross-site fetch or form), then routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.hostOK(r.Host) {
		http.Error(w, fmt.Sprintf("knee ui: Host %q is not this server's address; open the address knee ui printed", r.Host), http.StatusForbidden)
		return
	}
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		u, err := url.Parse(o)
		if err != nil || u.Scheme != "http" || !s.hostOK(u.Host) || !strings.EqualFold(u.Host, r.Host) {
			http.Error(w, fmt.Sprintf("knee ui: cross-origin request from %q refused", o), http.StatusForbidden)
			return
		}
	} else if o == "null" {
		http.Error(w, "knee ui: request from an opaque origin refused", http.StatusForbidden)
		return
	}
	// A browser says where a request comes from even when it sends no
	// Origin (a GET from an <img> or <script>): only this page itself
	// ("same-origin") or the user ("none", a typed address) may ask.
	if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
		http.Error(w, "knee ui: request from another site refused ("+site+")", http.StatusForbidden)
		return
	}
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	if !strings.HasPrefix(r.URL.Path, "/api/runs/") || !strings.HasSuffix(r.URL.Path, "/report") {
		// The page itself: nothing from anywhere but here, not even a frame
		// ancestor. (A stored report, shown in a sandboxed frame, sets its own.)
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-src 'self'; frame-ancestors 'none'; form-action 'none'; base-uri 'none'")
		h.Set("X-Frame-Options", "DENY")
	}
	s.mux.ServeHTTP(w, r)
}

func (s *Server) serveIndex(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	s.index.Execute(w, map[string]any{"Token": s.token, "BenchURL": s.cfg.BenchURL})
}

// work wraps a handler that starts work: it needs the token.
func (s *Server) work(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(TokenHeader) != s.token {
			apiError(w, http.StatusForbidden, "missing or wrong "+TokenHeader+" header: only the page knee ui serves may start work")
			return
		}
		h(w, r)
	}
}

// badRequest is an error the user caused: answered 400 with its message.
type badRequest struct{ msg string }

func (e *badRequest) Error() string { return e.msg }

func badf(format string, a ...any) error { return &badRequest{fmt.Sprintf(format, a...)} }

// BadRequest marks err as the user's doing: the API answers it 400.
func BadRequest(err error) error { return &badRequest{err.Error()} }

func apiError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// reply writes v as JSON, or err: a badRequest is 400, a missing run 404,
// anything else 500 — always with a message.
func reply(w http.ResponseWriter, v any, err error) {
	var br *badRequest
	switch {
	case errors.As(err, &br):
		apiError(w, http.StatusBadRequest, br.msg)
		return
	case isNotFound(err):
		apiError(w, http.StatusNotFound, err.Error())
		return
	case err != nil:
		apiError(w, http.StatusInternalServerError, err.Error())
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		apiError(w, http.StatusInternalServerError, "encoding the answer: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(b)
}

// decodeBody reads a JSON request body of at most 64 KiB into v, refusing
// unknown fields so a misspelt parameter is an error, not a default.
func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badf("request body: %v (want a JSON object of the documented parameters)", err)
	}
	return nil
}
