package loadgen

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/knee-dev/knee/internal/openai"
	"github.com/knee-dev/knee/internal/record"
)

// Schedule yields absolute arrival offsets from the run start, in order.
// workload.Arrivals satisfies it.
type Schedule interface{ Next() time.Duration }

// Request is what a Source supplies for request i.
type Request struct {
	Prompt       string
	PromptTokens int // the prompt length in tokens, as the workload built it
	// RequestedTokens is the length the workload asked for, when the
	// prompt could not be built to it exactly (0: PromptTokens). Records
	// keep it as prompt_tokens_requested, to compare with what was served.
	RequestedTokens int
	MaxTokens       int // max_tokens to send (0 leaves it to the server)
	// History is the conversation before Prompt, Session and Turn its place
	// (multi-turn sessions); the answer's text is kept for the next turn.
	History []openai.Message
	Session string
	Turn    int
	// Class is copied to the record (a mix's class, or record.ProbeClass).
	Class string
	// Model, when set, replaces Config.Model for this request (a mix
	// class's LoRA adapter or other served model).
	Model string
	// API, when set, replaces Config.API for this request (a mix class
	// of another API): one of openai.APIs, sent to that API's endpoint.
	API string
}

// Source returns request i. It is called from many goroutines at once and
// must be safe for concurrent use; its cost counts as client lag.
type Source func(i int64) Request

// DefaultGrace is how long in-flight requests may finish after the run
// stops issuing, when Config.Grace is 0.
const DefaultGrace = 30 * time.Second

// Config describes one run.
type Config struct {
	BaseURL, Model, API string // API "chat" (default), "completions" or "ollama" (Ollama's native /api/chat)
	APIKey              string // sent as "Authorization: Bearer"; never logged or stored
	// IgnoreEOS sends ignore_eos; MinTokens sends min_tokens = max_tokens.
	// Probe (openai.Probe) first: servers that do not know them answer 400.
	IgnoreEOS, MinTokens bool
	// Temperature is sent when HasTemperature (else the server's default).
	Temperature    float64
	HasTemperature bool
	// Items is the number of inputs of an embeddings request, or of
	// documents of a rerank request (0: 1); RerankPath is the rerank
	// endpoint's path (openai.RerankVLLM or RerankTEI, "" the first).
	Items      int
	RerankPath string
	// Images > 0 sends that many ImageWidth×ImageHeight images of
	// ImageFormat (png, jpeg) with each chat or messages prompt, drawn
	// from ImageSeed and the request's number.
	Images                  int
	ImageWidth, ImageHeight int
	ImageFormat             string
	ImageSeed               uint64
	// ImageTokens is what the server is expected to count for each image;
	// a record's prompt_tokens_requested includes them, so the served
	// length (usage, images included) is compared like for like.
	ImageTokens int

	// Closed loop: Concurrency > 0 workers, each sending its next request
	// when its previous one ends; UserClasses add pools of their own.
	Concurrency int
	UserClasses []UserClass
	// Sessions > 0 runs that many multi-turn conversations at once instead:
	// each sends Turn(s, 1), then after each answer (and the turn's think
	// time) its next turn with the whole history, until Turn says no more.
	Sessions int
	Turn     func(session, turn int) (SessionTurn, bool)
	// Open loop: Arrivals (or a constant schedule at RateRPS when Arrivals
	// is nil). MaxConcurrency > 0 caps requests in flight: an arrival that
	// finds the cap reached waits for a slot, the dispatcher with it, and
	// that wait shows as lag (sent − scheduled) of it and of the arrivals
	// behind it; arrivals still waiting when the run ends are Dropped.
	Arrivals       Schedule
	RateRPS        float64
	MaxConcurrency int

	// ProbeRateRPS > 0 sends Probe(k) at this constant rate beside the main
	// load, from the start until issuing stops, whatever the load model:
	// probes neither count towards Requests nor wait for a concurrency
	// slot, so their latency shows what the load does to an unrelated
	// user. Their records have Class record.ProbeClass and IDs from
	// ProbeIDBase up.
	ProbeRateRPS float64
	Probe        Source

	// StopOversaturated (open loop) stops issuing as soon as the queue
	// grows without bound: requests in flight and the TTFT of finished
	// ones trend up over consecutive windows of OversaturationWindow (0:
	// DefaultOversaturationWindow); see oversat.go.
	StopOversaturated    bool
	OversaturationWindow time.Duration

	// The run stops issuing at Duration or after Requests requests,
	// whichever comes first; 0 means no such limit (with both 0 the run
	// lasts until ctx is canceled).
	Duration time.Duration
	Requests int64

	// Requests scheduled before Warmup, or among the first WarmupRequests,
	// are flagged Warmup (excluded from statistics).
	Warmup         time.Duration
	WarmupRequests int

	// Ramp grows the load linearly from zero over this long: closed-loop
	// workers start evenly spread over it; open-loop arrival times are
	// stretched so the rate rises linearly to full rate at Ramp.
	Ramp time.Duration

	// RequestTimeout bounds one request (0: none); Grace is how long
	// in-flight requests may finish after issuing stops (0: DefaultGrace,
	// negative: none) before they are canceled.
	RequestTimeout, Grace time.Duration

	// StopIfUnreachable, when positive, ends issuing at this offset from
	// the start if every request finished by then failed to connect (and
	// at least one did): a dead target then costs seconds, not the whole
	// run (StoppedBy is StopUnreachable). Later in the run, a target whose
	// every request has failed to connect for this long, from the first
	// such failure, also ends issuing (StopTargetGone).
	StopIfUnreachable time.Duration

	// Origin, when set, is the run's time origin instead of the moment
	// Start is called: every scheduled time is an offset from it. Shards of
	// one run pass their common start, so a shard that wakes late shows it
	// as lag of its first sends instead of a schedule shifted later. It
	// must not be after the call to Start.
	Origin time.Time

	// OnRecord, when set, is called once per finished request from worker
	// goroutines. It must be cheap and must not keep r.
	OnRecord func(r *record.Request)

	// DiscardRecords leaves Result.Records empty: the caller takes every
	// record from OnRecord (to a file, a database, an accumulator), so the
	// run's memory does not grow with its length (bench and sweep).
	DiscardRecords bool

	// ContinuousUsage asks the server for usage on every chunk (vLLM's
	// stream_options.continuous_usage_stats) so multi-token chunks are
	// counted exactly; servers that do not know the option may refuse it.
	ContinuousUsage bool

	// UserSpaceTimestamps stamps every read with the monotonic clock when
	// it returns, even where the kernel's receive timestamps are
	// available (to measure what they change; see stamp.go).
	UserSpaceTimestamps bool

	// Transport, when set, replaces the HTTP transport (tests); its reads
	// are stamped in user space.
	Transport http.RoundTripper

	// failedTimesBound replaces maxFailedTimes when positive (tests).
	failedTimesBound int64
}

// ErrConfig wraps every validation error from Start: the configuration,
// not the server, is wrong.
var ErrConfig = errors.New("invalid load configuration")

func configErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
}

func (c *Config) validate() error {
	switch c.API {
	case "":
		c.API = openai.APIChat
	case openai.APIChat, openai.APICompletions, openai.APIOllama, openai.APIEmbeddings, openai.APIRerank, openai.APIMessages:
	default:
		return configErr("api %q: want one of %s", c.API, strings.Join(openai.APIs, ", "))
	}
	if err := c.validateEndpoints(); err != nil {
		return err
	}
	open := c.Arrivals != nil || c.RateRPS > 0
	if c.Sessions != 0 {
		switch {
		case c.Sessions < 0 || c.Turn == nil:
			return configErr("sessions %d: want a positive number of conversations and a turn source", c.Sessions)
		case c.Concurrency > 0 || open:
			return configErr("sessions run their own closed loop: give no concurrency or rate with them")
		}
		c.Concurrency = 0
	}
	for _, uc := range c.UserClasses {
		switch {
		case uc.Concurrency < 1 || uc.Source == nil || uc.Name == "":
			return configErr("user class %q: want a name, a positive concurrency and a source", uc.Name)
		case open || c.Sessions > 0:
			return configErr("user class %s has its own concurrency: classes of users run in the closed loop, not with a rate or sessions", uc.Name)
		}
	}
	closed := c.Concurrency > 0 || len(c.UserClasses) > 0
	switch {
	case c.Concurrency < 0:
		return configErr("concurrency %d: want a positive number of workers", c.Concurrency)
	case c.RateRPS < 0:
		return configErr("rate %g: want requests per second > 0", c.RateRPS)
	case c.Concurrency > 0 && open:
		return configErr("give either a concurrency (closed loop) or a rate (open loop), not both")
	case !closed && !open && c.Sessions == 0:
		return configErr("give a concurrency (closed loop) or a rate (open loop)")
	case c.ProbeRateRPS < 0 || math.IsInf(c.ProbeRateRPS, 0) || math.IsNaN(c.ProbeRateRPS):
		return configErr("probe rate %g: want probes per second > 0", c.ProbeRateRPS)
	case c.ProbeRateRPS > 0 && c.Probe == nil:
		return configErr("probe rate %g without a probe source", c.ProbeRateRPS)
	case c.MaxConcurrency < 0:
		return configErr("max concurrency %d: want >= 0", c.MaxConcurrency)
	case c.StopOversaturated && !open:
		return configErr("stopping when over-saturated applies to open loop (a rate): a closed loop's in-flight count is bounded by its concurrency")
	case c.MaxConcurrency > 0 && !open:
		return configErr("max concurrency applies to open loop (a rate); closed loop is bounded by its concurrency")
	case c.Duration < 0, c.Requests < 0, c.Warmup < 0, c.WarmupRequests < 0, c.Ramp < 0, c.RequestTimeout < 0:
		return configErr("durations and counts must not be negative")
	case c.Duration > 0 && c.Warmup >= c.Duration:
		return configErr("warm-up %v leaves nothing of the %v run to measure", c.Warmup, c.Duration)
	case c.Requests > 0 && int64(c.WarmupRequests) >= c.Requests:
		return configErr("%d warm-up requests leave nothing of %d to measure", c.WarmupRequests, c.Requests)
	}
	if _, err := openai.EndpointFor(c.BaseURL, c.API, c.RerankPath); err != nil {
		return configErr("%v", err)
	}
	return nil
}

// Result is a finished run.
type Result struct {
	Records        []record.Request // one per request issued, sorted by ID (none with DiscardRecords)
	Start          time.Time        // the run's time origin: record times are offsets from it
	Elapsed        time.Duration    // until the last worker finished
	OfferedRateRPS float64          // open loop: the schedule's rate; closed loop: 0
	PeakInFlight   int
	// Dropped counts open-loop arrivals that were due but never sent
	// because the run ended while they waited for a MaxConcurrency slot.
	Dropped int64
	// KernelTimestamps: every stream's token times are the kernel's
	// receive times of their bytes (SO_TIMESTAMPNS, Linux), not the time
	// the client read them. UserStampedStreams counts streams with at
	// least one read stamped in user space instead (see stamp.go).
	KernelTimestamps   bool
	UserStampedStreams int64
	// Interrupted counts requests in flight when the caller canceled the
	// run (Ctrl-C): they are canceled records flagged Warmup, since being
	// cut off says nothing about the server. Requests canceled when the
	// grace period ran out stay ordinary errors.
	Interrupted int64
	// CanceledAtStop counts requests still in flight when the grace
	// period after an over-saturation stop (StopOversaturated) ran out:
	// canceled records flagged Warmup like Interrupted's, since knee cut
	// them off for a load it had judged beyond the server, not the server
	// for failing them. Each had waited at least the grace period.
	CanceledAtStop int64
	// ConnectionRetries counts resends of requests that the transport
	// proved the server had not read (a failed write, a reused connection
	// the server had closed before the write began, or, on Linux, one that
	// ended with the request's bytes unacknowledged or reset unread:
	// reqTrace.unseen); records say which. Any other close without an
	// answer is the request's failure.
	ConnectionRetries int64
	// StoppedBy says what ended issuing: StopDuration, StopRequests,
	// StopInterrupted (the caller's ctx) or StopCalled (Run.Stop).
	StoppedBy string
	// Oversaturation says why issuing stopped early when StoppedBy is
	// StopOversaturated ("" otherwise).
	Oversaturation string
	// Notes say what the run changed of its own accord and why (one line
	// each, for the report).
	Notes []string
	// WallClockSteps counts the times the system's wall clock was seen to
	// step (by more than 1 ms against the monotonic clock) during the run.
	// Kernel stamps are wall-clock times; knee maps them with the offset
	// measured after each step, so only tokens that arrived before a step
	// and were read after it (within 50 ms) are off by it.
	WallClockSteps int64
}

// What ended a run's issuing (Result.StoppedBy).
const (
	StopDuration    = "duration"
	StopRequests    = "requests"
	StopInterrupted = "interrupted"
	StopCalled      = "stopped"
	// StopUnreachable: every request of the run's first
	// Config.StopIfUnreachable failed to connect.
	StopUnreachable = "unreachable"
	// StopTargetGone: later in the run, every request that ended for
	// Config.StopIfUnreachable failed to connect (Result.Notes says when).
	StopTargetGone = "target-gone"
)

// Snapshot is a live view of a run.
type Snapshot struct {
	Elapsed      time.Duration
	Sent         int64 // requests started
	Completed    int64 // finished without error
	Errors       int64 // finished with an error
	InFlight     int64
	PeakInFlight int64
	OutputTokens int64 // content chunks received so far (tokens when the server says)
	Dropped      int64
	// ConnectionRetries: resends of requests proven unread by the server.
	ConnectionRetries int64
	ErrorsByKind      map[record.ErrorKind]int64
	Issuing           bool // still issuing new requests
}

// Run is a run in progress.
type Run struct {
	cfg   Config
	src   Source
	start time.Time
	// clock converts kernel stamps (CLOCK_REALTIME) to run offsets;
	// trackWallClock keeps it measured and counts the wall clock's steps.
	clock      wallMap
	clockSteps atomic.Int64
	wallNow    func() int64 // the wall clock, Unix ns (tests step it)
	client     *http.Client
	// retryClient resends a request proven unread by the server
	// (reqTrace.unseen), on a connection of its own.
	retryClient *http.Client
	connRetries atomic.Int64
	// noReuse: every request opens a connection of its own from now on
	// (stopReuse); reuseStoppedAt is when, as a run offset + 1 (0: never).
	noReuse        atomic.Bool
	reuseStoppedAt atomic.Int64
	// backoffs counts closed-loop waits after failures, retryAfters those
	// that honoured a Retry-After (failureBackoff).
	backoffs, retryAfters atomic.Int64
	// goneSince is the run offset + 1 of the first connect failure since
	// the last request that got past the connect (0: none); goneAt, when
	// the run stopped for it (StopTargetGone).
	goneSince, goneAt atomic.Int64
	// errMessages interns failed records' messages (finish): a dead
	// target's thousands of failures share a few strings.
	errMessages map[string]string
	// failedTimes counts the chunk times failed records keep,
	// failedTimesDropped the failed records that keep none
	// (boundFailedTimes).
	failedTimes, failedTimesDropped atomic.Int64
	endpoints                       map[string]string // by API: every API's URL under BaseURL

	issueCtx, hardCtx       context.Context
	parent                  context.Context // the caller's: canceled on Ctrl-C
	interrupted             atomic.Int64    // requests cut off by the caller's cancel
	canceledAtStop          atomic.Int64    // cut off after an over-saturation stop's grace
	stopIssue, hardStop     context.CancelFunc
	inFlight, peak          atomic.Int64
	sent, completed, failed atomic.Int64
	tokens, dropped         atomic.Int64
	kernelStamps            bool         // connections are dialed with kernel receive timestamps
	kernelStamped           atomic.Int64 // streams stamped by the kernel throughout
	userStamped             atomic.Int64 // streams with a read stamped in user space
	errKinds                [16]atomic.Int64
	stoppedBy               atomic.Pointer[string] // the first reason issuing stopped
	// Outcomes for StopIfUnreachable: connect failures, and whether any
	// request finished otherwise (answered, or failed past the connect).
	connectFailures atomic.Int64
	reachedServer   atomic.Bool
	building        chan struct{} // Source calls in progress (build)
	oversatTTFT     ttftWindow
	oversatWhy      atomic.Pointer[string]

	mu      sync.Mutex
	records []record.Request

	done   chan struct{}
	result *Result
}

// Start validates cfg and starts the run; the load begins at once. Errors
// wrap ErrConfig.
func Start(ctx context.Context, cfg Config, src Source) (*Run, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if src == nil {
		return nil, configErr("no request source")
	}
	endpoints := map[string]string{}
	for _, api := range openai.APIs {
		endpoints[api], _ = openai.EndpointFor(cfg.BaseURL, api, cfg.RerankPath) // the base URL was validated
	}
	r := &Run{cfg: cfg, src: src, endpoints: endpoints, done: make(chan struct{}), wallNow: wallNow,
		building: make(chan struct{}, runtime.GOMAXPROCS(0))}
	tr := cfg.Transport
	if tr == nil {
		r.kernelStamps = kernelStampsSupported && !cfg.UserSpaceTimestamps
		tr = newTransport(cfg, r.kernelStamps)
	}
	r.client = &http.Client{
		Transport: tr,
		// A redirect of a streaming POST is a misconfigured URL, not
		// something to follow.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	r.retryClient = r.client
	if cfg.Transport == nil {
		fresh := newTransport(cfg, r.kernelStamps)
		fresh.DisableKeepAlives = true // every resend dials: the pool may hold more dead connections
		r.retryClient = &http.Client{Transport: fresh, CheckRedirect: r.client.CheckRedirect}
	}
	if r.kernelStamps {
		holdKernelStamps()
	}
	r.parent = ctx
	r.hardCtx, r.hardStop = context.WithCancel(ctx)
	r.issueCtx, r.stopIssue = context.WithCancel(r.hardCtx)
	r.start = time.Now()
	if !cfg.Origin.IsZero() {
		if cfg.Origin.After(r.start) {
			return nil, configErr("origin %v is %v after the start: wait for it first", cfg.Origin, cfg.Origin.Sub(r.start))
		}
		// Add keeps the monotonic reading (an Origin read from a database
		// has none): the run's times stay immune to wall-clock steps.
		r.start = r.start.Add(cfg.Origin.Sub(r.start))
	}
	r.clock.advance(wallSample(r.start, r.wallNow))
	if r.kernelStamps {
		go r.trackWallClock()
	}
	go r.run()
	return r, nil
}

// newTransport is one shared HTTP/1.1 keep-alive transport sized to the
// load, so connections are reused and never capped below the load (a cap
// would queue requests inside the transport, hiding client lag).
func newTransport(cfg Config, kernelStamps bool) *http.Transport {
	idle := cfg.users()
	if cfg.MaxConcurrency > 0 {
		idle = cfg.MaxConcurrency
	}
	if idle == 0 {
		idle = 4096 // open loop without a cap: keep what the load needs
	}
	dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
	dial := dialWitnessed(dialer)
	if kernelStamps {
		dial = dialStamped(dialer)
	}
	return &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         dial,
		MaxIdleConns:        0,
		MaxIdleConnsPerHost: idle,
		MaxConnsPerHost:     cfg.users(), // 0 (no limit) in open loop
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
		// A non-nil empty map turns HTTP/2 off: one stream per connection,
		// so one slow stream never delays another's reads.
		TLSNextProto:    map[string]func(string, *tls.Conn) http.RoundTripper{},
		ReadBufferSize:  16 << 10,
		WriteBufferSize: 16 << 10,
	}
}

// run drives the load model, then waits for every request, then
// publishes the result.
func (r *Run) run() {
	var wg sync.WaitGroup // request goroutines
	workersDone := make(chan struct{})
	grace := r.cfg.Grace
	if grace == 0 {
		grace = DefaultGrace
	}
	go func() {
		<-r.issueCtx.Done()
		if grace < 0 {
			r.hardStop()
			return
		}
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-workersDone:
		case <-t.C:
			r.hardStop()
		case <-r.hardCtx.Done():
		}
	}()
	if r.cfg.Duration > 0 {
		t := time.AfterFunc(r.cfg.Duration-time.Since(r.start), func() { r.stopFor(StopDuration) })
		defer t.Stop()
	}
	if r.cfg.StopIfUnreachable > 0 {
		t := time.AfterFunc(r.cfg.StopIfUnreachable, func() {
			if !r.reachedServer.Load() && r.connectFailures.Load() > 0 {
				r.stopFor(StopUnreachable)
			}
		})
		defer t.Stop()
	}
	if r.cfg.StopOversaturated {
		go r.watchOversaturation()
	}
	var probes sync.WaitGroup
	if r.cfg.ProbeRateRPS > 0 {
		probes.Add(1)
		go r.probeLoop(&probes)
	}
	if r.cfg.Sessions > 0 {
		r.sessionLoop(&wg)
	} else if r.cfg.users() > 0 {
		r.closedLoop(&wg)
	} else {
		r.openLoop(&wg)
	}
	// A loop that returns on its own ended for the reason it gave; one
	// that returned because issuing stopped did so for an earlier reason.
	if r.parent.Err() != nil {
		r.stopFor(StopInterrupted)
	}
	r.stopFor(StopCalled)
	probes.Wait()
	wg.Wait()
	close(workersDone)
	elapsed := time.Since(r.start)
	r.hardStop()
	if t, ok := r.client.Transport.(*http.Transport); ok && r.cfg.Transport == nil {
		t.CloseIdleConnections()
	}

	r.mu.Lock()
	recs := r.records
	r.records = nil
	r.mu.Unlock()
	slices.SortFunc(recs, func(a, b record.Request) int { return int(a.ID - b.ID) })
	res := &Result{Records: recs, Start: r.start, Elapsed: elapsed, PeakInFlight: int(r.peak.Load()), Dropped: r.dropped.Load(),
		UserStampedStreams: r.userStamped.Load(), Interrupted: r.interrupted.Load(), CanceledAtStop: r.canceledAtStop.Load(), WallClockSteps: r.clockSteps.Load(),
		ConnectionRetries: r.connRetries.Load(), StoppedBy: *r.stoppedBy.Load()}
	if why := r.oversatWhy.Load(); why != nil && res.StoppedBy == StopOversaturated {
		res.Oversaturation = *why
	}
	if n := r.backoffs.Load(); n > 0 {
		note := fmt.Sprintf("closed-loop users waited %d times after consecutive failures before sending again (from %v, doubling to %v)", n, minBackoff, maxBackoff)
		if k := r.retryAfters.Load(); k > 0 {
			note += fmt.Sprintf(", %d of them as long as the server's Retry-After asked (up to %v)", k, maxRetryAfter)
		}
		res.Notes = append(res.Notes, note)
	}
	if at := r.goneAt.Load(); at > 0 && res.StoppedBy == StopTargetGone {
		res.Notes = append(res.Notes, fmt.Sprintf("stopped early at %.1fs: every request that ended from %.1fs on failed to connect, for over %v (the target went away); the figures cover the run until then",
			time.Duration(at-1).Seconds(), time.Duration(r.goneSince.Load()-1).Seconds(), r.cfg.StopIfUnreachable))
	}
	if n := r.failedTimesDropped.Load(); n > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d failed requests keep no per-chunk times (their first token, end and token count only): the run's failed records had reached their bound of %d chunk times", n, maxFailedTimes))
	}
	if at := r.reuseStoppedAt.Load(); at > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("the server closed kept-alive connections and knee could not tell whether a request that met such a close had been read (no TCP_INFO here), so from %.1fs into the run every request opened a connection of its own (connection set-up is then part of each request)",
			time.Duration(at-1).Seconds()))
	}
	res.KernelTimestamps = res.UserStampedStreams == 0 && r.kernelStamped.Load() > 0
	res.OfferedRateRPS = r.cfg.OfferedRateRPS()
	r.result = res
	close(r.done)
}

// trackWallClock measures the wall clock against the run's monotonic one
// every 50 ms until the run ends: the kernel stamps packets with
// CLOCK_REALTIME, which may run at its own pace or be stepped mid-run,
// while every other time in a record is monotonic.
func (r *Run) trackWallClock() {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-r.done:
			return
		case <-t.C:
			if r.clock.advance(wallSample(r.start, r.wallNow)) {
				r.clockSteps.Add(1)
			}
		}
	}
}

// Wait blocks until every request has finished (or been canceled after
// the grace period) and returns the result.
func (r *Run) Wait() *Result {
	<-r.done
	return r.result
}

// Stop ends issuing now; in-flight requests get the grace period.
func (r *Run) Stop() { r.stopFor(StopCalled) }

// stopFor ends issuing, remembering the first reason given.
func (r *Run) stopFor(reason string) {
	r.stoppedBy.CompareAndSwap(nil, &reason)
	r.stopIssue()
}

// stopReuse makes every later request open a connection of its own: the
// server closes kept-alive connections (after its responses, or when idle)
// and the connections cannot tell whether a request that met such a close
// was read (no TCP_INFO: not Linux, or a kernel without it), so reusing
// them would race the server's closes and lose requests it never saw.
// Needs a transport of knee's own (not Config.Transport).
func (r *Run) stopReuse() {
	if r.cfg.Transport != nil || !r.noReuse.CompareAndSwap(false, true) {
		return
	}
	r.reuseStoppedAt.Store(int64(time.Since(r.start)) + 1)
}

// canceled marks rec as cut off by the hard stop; when that stop is the
// caller's interrupt, or follows an over-saturation stop, rec leaves the
// statistics like cool-down: knee cut it off, the server did not fail it.
func (r *Run) canceled(rec *record.Request) {
	rec.Error = record.ErrCanceled
	switch by := r.stoppedBy.Load(); {
	case r.parent.Err() != nil:
		rec.Warmup = true
		r.interrupted.Add(1)
	case by != nil && *by == StopOversaturated:
		rec.Warmup = true
		r.canceledAtStop.Add(1)
	}
}

// Snapshot returns live counters; safe to call at any time.
func (r *Run) Snapshot() Snapshot {
	s := Snapshot{
		Elapsed:           time.Since(r.start),
		Sent:              r.sent.Load(),
		Completed:         r.completed.Load(),
		Errors:            r.failed.Load(),
		InFlight:          r.inFlight.Load(),
		PeakInFlight:      r.peak.Load(),
		OutputTokens:      r.tokens.Load(),
		Dropped:           r.dropped.Load(),
		ConnectionRetries: r.connRetries.Load(),
		Issuing:           r.issueCtx.Err() == nil,
	}
	for i, k := range record.ErrorKinds {
		if n := r.errKinds[i].Load(); n > 0 {
			if s.ErrorsByKind == nil {
				s.ErrorsByKind = make(map[record.ErrorKind]int64)
			}
			s.ErrorsByKind[k] = n
		}
	}
	select {
	case <-r.done:
		s.Elapsed = r.result.Elapsed
	default:
	}
	return s
}

// finish publishes one finished request.
func (r *Run) finish(rec *record.Request) {
	r.inFlight.Add(-1)
	if rec.Error == record.ErrConnect {
		r.connectFailures.Add(1)
		r.connectFailed()
	} else if rec.Error != record.ErrCanceled {
		r.reachedServer.Store(true)
		r.goneSince.Store(0)
	}
	if rec.Error == record.ErrNone {
		r.completed.Add(1)
		if r.cfg.StopOversaturated && rec.Class != record.ProbeClass {
			if ttft, ok := rec.TTFT(); ok {
				r.oversatTTFT.add(ttft)
			}
		}
	} else {
		r.failed.Add(1)
		// A server may quote the key it refused ("invalid key sk-..."):
		// records, reports and the store never hold it.
		if k := r.cfg.APIKey; len(k) >= 4 && strings.Contains(rec.ErrorMessage, k) {
			rec.ErrorMessage = strings.ReplaceAll(rec.ErrorMessage, k, "(the API key)")
		}
		if i := slices.Index(record.ErrorKinds, rec.Error); i >= 0 {
			r.errKinds[i].Add(1)
		}
	}
	if r.cfg.OnRecord != nil {
		r.cfg.OnRecord(rec)
	}
	if r.cfg.DiscardRecords {
		return
	}
	if rec.Error != record.ErrNone {
		r.boundFailedTimes(rec)
	}
	r.mu.Lock()
	if rec.ErrorMessage != "" {
		rec.ErrorMessage = r.intern(rec.ErrorMessage)
	}
	r.records = append(r.records, *rec)
	r.mu.Unlock()
}

// maxFailedTimes bounds the per-chunk times (client and server token
// times) that the run's failed records keep, all together: a server that
// streams without end fails request after request at the chunk bound
// (2·max_tokens+256 chunks each), and the run holds its records to the
// end, so without a run-wide bound its memory grew with its length (80 →
// 303 MB in 110 s at concurrency 4). Statistics take ITL and TPOT from
// completed requests only; a failed record past the bound keeps its first
// token and end times and its token count, not each chunk's time.
const maxFailedTimes = 1 << 20

// boundFailedTimes applies maxFailedTimes to failed record rec, and
// gives the times it keeps a slice of their own length (append's
// doubling left up to half of it spare).
func (r *Run) boundFailedTimes(rec *record.Request) {
	n := int64(len(rec.TokenTimes) + len(rec.ServerTokenTimes) + len(rec.ServerWriteTimes))
	if n == 0 {
		return
	}
	bound := int64(maxFailedTimes)
	if r.cfg.failedTimesBound > 0 {
		bound = r.cfg.failedTimesBound
	}
	if r.failedTimes.Add(n) > bound {
		r.failedTimes.Add(-n)
		r.failedTimesDropped.Add(1)
		rec.TokenTimes, rec.TokenCounts, rec.ServerTokenTimes, rec.ServerWriteTimes = nil, nil, nil, nil
		return
	}
	if cap(rec.TokenTimes) > len(rec.TokenTimes)+len(rec.TokenTimes)/4+8 {
		rec.TokenTimes = slices.Clone(rec.TokenTimes)
		if rec.TokenCounts != nil {
			rec.TokenCounts = slices.Clone(rec.TokenCounts)
		}
	}
}

// maxInterned bounds the messages interned: a server that puts a counter
// in each message gets no sharing past it, and no growth of the table.
const maxInterned = 1024

// intern returns the run's copy of msg, if it has one (r.mu held).
func (r *Run) intern(msg string) string {
	if m, ok := r.errMessages[msg]; ok {
		return m
	}
	if r.errMessages == nil {
		r.errMessages = make(map[string]string)
	}
	if len(r.errMessages) < maxInterned {
		r.errMessages[msg] = msg
	}
	return msg
}

// connectFailed notes a request that failed to connect: once every
// request that ended for Config.StopIfUnreachable has, past the start-up
// check's own stretch, issuing stops (StopTargetGone).
func (r *Run) connectFailed() {
	window := r.cfg.StopIfUnreachable
	if window <= 0 {
		return
	}
	now := int64(time.Since(r.start)) + 1
	since := r.goneSince.Load()
	if since == 0 {
		r.goneSince.CompareAndSwap(0, now)
		return
	}
	if now-since >= int64(window) && now-1 > int64(window) && r.reachedServer.Load() {
		if r.goneAt.CompareAndSwap(0, now) {
			r.stopFor(StopTargetGone)
		}
	}
}

// warmup reports whether request i scheduled at t is part of warm-up.
func (r *Run) warmup(i int64, t time.Duration) bool {
	return t < r.cfg.Warmup || i < int64(r.cfg.WarmupRequests)
}
