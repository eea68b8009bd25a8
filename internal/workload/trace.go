package workload

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"github.com/knee-dev/knee/internal/record"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/knee-dev/knee/internal/simengine"
)

// TraceOptions select and reshape the part of a trace that is replayed.
type TraceOptions struct {
	Format string // one of TraceFormats; "" = detect from the file
	// Start and End bound the window replayed, in trace time from the first
	// row (End 0 = to the end). Arrivals count from Start.
	Start, End time.Duration
	// Speedup divides every gap between arrivals (2 = twice the rate; 0 =
	// 1). TargetRateRPS, when set, chooses the speed-up that gives the
	// window this mean arrival rate.
	Speedup       float64
	TargetRateRPS float64
	// MaxContext caps prompt + output at this many tokens (0 = no cap):
	// the output first to leave a prompt, then the prompt.
	MaxContext int
	// Sample keeps this fraction of the rows (0 = all), chosen by a hash of
	// (Seed, line) so the same rows are kept at every speed-up.
	Sample float64
	Seed   uint64
	// Tokenizer builds prompt text (nil = DefaultTokenizer);
	// PromptOverheadTokens is what the server adds to every prompt (its
	// chat template), taken off the text so the served length is the
	// trace's.
	Tokenizer            Tokenizer
	PromptOverheadTokens int
	// Context, when set, stops reading the file once it ends (Ctrl-C while
	// a huge trace is checked).
	Context context.Context
}

// TraceInfo describes a trace and the part of it that is replayed; OpenTrace
// fills it in one streaming pass.
type TraceInfo struct {
	Path, Format string
	Rows         int // requests read
	Kept         int // replayed (in the window, sampled, non-empty)
	Empty        int // rows with 0 input or output tokens, skipped (failed requests in BurstGPT and Azure)
	Capped       int // rows cut to MaxContext
	Span         time.Duration
	Speedup      float64
	MeanRateRPS  float64 // of the replay, after the speed-up
	InputTokens  int64   // of the kept rows (after caps)
	OutputTokens int64
	Sessions     int // distinct session ids (generic formats)
	// HashTokens is how many kept input tokens hash_ids name; ReuseTokens
	// how many of those an infinite prefix cache would hit (blocks seen
	// before, as a prefix). ReuseExact is false when there were too many
	// distinct blocks to track, making ReuseTokens a lower bound.
	HashTokens, ReuseTokens int64
	ReuseExact              bool
}

// String is a one-line description for reports.
func (i TraceInfo) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "trace %s (%s): %d of %d requests over %v", i.Path, i.Format, i.Kept, i.Rows, i.Span.Round(time.Millisecond))
	if i.Speedup != 1 {
		fmt.Fprintf(&b, ", speed-up %.4gx", i.Speedup)
	}
	fmt.Fprintf(&b, ", %.3g req/s", i.MeanRateRPS)
	if i.Kept > 0 {
		fmt.Fprintf(&b, ", mean %d in / %d out tokens", i.InputTokens/int64(i.Kept), i.OutputTokens/int64(i.Kept))
	}
	if i.Empty > 0 {
		fmt.Fprintf(&b, ", %d empty rows skipped", i.Empty)
	}
	if i.Capped > 0 {
		fmt.Fprintf(&b, ", %d cut to the context", i.Capped)
	}
	if i.HashTokens > 0 {
		bound := ""
		if !i.ReuseExact {
			bound = "≥"
		}
		fmt.Fprintf(&b, ", prefix reuse %s%.1f%% of input tokens (infinite cache)", bound, 100*float64(i.ReuseTokens)/float64(i.InputTokens))
	}
	if i.Sessions > 0 {
		fmt.Fprintf(&b, ", %d sessions", i.Sessions)
	}
	return b.String()
}

// Trace is an opened, validated trace file; Stream replays it (any number of
// times: a sweep replays it once per step).
type Trace struct {
	path    string
	opts    TraceOptions
	info    TraceInfo
	pbs     *sharedBuilder
	segSalt uint64
}

// ContextReader reads r until ctx ends (Ctrl-C, SIGTERM), then fails every
// read with ctx's error: a parser of any input stops within one read.
func ContextReader(ctx context.Context, r io.Reader) io.Reader {
	return ctxReader{ctx, r}
}

// ctxReader fails reads once ctx has ended, so a long parse stops.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// sharedBuilder is the prompt builder of a trace and its re-speeded copies,
// made on first use (the simulator never needs one).
type sharedBuilder struct {
	once sync.Once
	pb   *promptBuilder
	err  error
}

// maxReuseIDs bounds the distinct hash ids the reuse count tracks (~100 MB).
const maxReuseIDs = 1 << 22

// OpenTrace reads the whole trace once, streaming: it checks every row (a
// bad row is an error naming its line), applies the window, sampling and
// caps, and measures what is replayed. Memory stays bounded by the reorder
// window and the reuse count's id set, not by the file.
func OpenTrace(path string, opts TraceOptions) (*Trace, error) {
	switch {
	case opts.Speedup < 0 || math.IsNaN(opts.Speedup) || math.IsInf(opts.Speedup, 0):
		return nil, fmt.Errorf("trace speed-up %v: want a positive factor", opts.Speedup)
	case opts.TargetRateRPS < 0:
		return nil, fmt.Errorf("trace target rate %v: want a positive rate", opts.TargetRateRPS)
	case opts.Sample < 0 || opts.Sample > 1:
		return nil, fmt.Errorf("trace sample %v: want a fraction in (0, 1]", opts.Sample)
	case opts.Start < 0 || opts.End < 0 || (opts.End > 0 && opts.End <= opts.Start):
		return nil, fmt.Errorf("trace window %v to %v: want 0 <= start < end", opts.Start, opts.End)
	case opts.MaxContext < 0 || opts.MaxContext == 1:
		return nil, fmt.Errorf("trace max context %d: want 0 (none) or at least 2 tokens", opts.MaxContext)
	}
	if opts.Format != "" && !slices.Contains(TraceFormats, opts.Format) {
		return nil, fmt.Errorf("trace format %q: want one of %s", opts.Format, strings.Join(TraceFormats, ", "))
	}
	if opts.Speedup == 0 {
		opts.Speedup = 1
	}
	if opts.Sample == 0 {
		opts.Sample = 1
	}
	t := &Trace{path: path, opts: opts, pbs: &sharedBuilder{}, segSalt: mix64(opts.Seed ^ 0x7472616365626c6b)}
	c, err := t.open()
	if err != nil {
		return nil, err
	}
	defer c.close()
	t.opts.Format = c.format
	info := TraceInfo{Path: path, Format: c.format, ReuseExact: true}
	seen := map[int64]struct{}{}
	sessions := map[string]struct{}{}
	var first, last time.Duration
	for {
		r, err := c.next()
		if err == io.EOF {
			break
		}
		if opts.Context != nil && opts.Context.Err() != nil {
			return nil, fmt.Errorf("reading %s: %w", path, opts.Context.Err())
		}
		if err != nil {
			return nil, err
		}
		if info.Kept == 0 {
			first = r.at
		}
		last = r.at
		info.Kept++
		info.InputTokens += int64(r.in)
		info.OutputTokens += int64(r.out)
		if r.session != "" {
			sessions[r.session] = struct{}{}
		}
		hit := true
		for j, h := range r.hashIDs {
			n := int64(min(MooncakeBlockTokens, r.in-j*MooncakeBlockTokens))
			if n <= 0 {
				break
			}
			info.HashTokens += n
			_, ok := seen[h]
			if hit = hit && ok; hit {
				info.ReuseTokens += n
			}
			if !ok {
				if len(seen) < maxReuseIDs {
					seen[h] = struct{}{}
				} else {
					info.ReuseExact = false
				}
			}
		}
	}
	info.Rows, info.Empty, info.Capped = c.rows, c.empty, c.capped
	info.Sessions = len(sessions)
	if info.Kept == 0 {
		return nil, fmt.Errorf("%s: no requests to replay (%d rows read; check the window and sample)", path, info.Rows)
	}
	info.Span = last - first
	if opts.TargetRateRPS > 0 {
		if info.Span <= 0 || info.Kept < 2 {
			return nil, fmt.Errorf("%s: cannot set a target rate: the %d replayed requests arrive at one instant", path, info.Kept)
		}
		native := float64(info.Kept-1) / info.Span.Seconds()
		t.opts.Speedup = opts.TargetRateRPS / native
	}
	info.Speedup = t.opts.Speedup
	if info.Span > 0 {
		info.MeanRateRPS = float64(info.Kept-1) / info.Span.Seconds() * t.opts.Speedup
	}
	t.info = info
	return t, nil
}

// Info describes the trace and what is replayed.
func (t *Trace) Info() TraceInfo { return t.info }

// WithSpeedup returns the same trace replayed at another speed-up (a
// sweep's steps); the file is not read again until Stream.
func (t *Trace) WithSpeedup(f float64) *Trace {
	c := &Trace{path: t.path, opts: t.opts, info: t.info, pbs: t.pbs, segSalt: t.segSalt}
	c.opts.Speedup = f
	c.info.Speedup = f
	if t.info.Speedup > 0 {
		c.info.MeanRateRPS = t.info.MeanRateRPS / t.info.Speedup * f
	}
	return c
}

// WithPrompts returns the trace with prompts built by tk (nil keeps the
// current tokenizer) for a server that adds overhead tokens to each prompt.
func (t *Trace) WithPrompts(tk Tokenizer, overhead int) *Trace {
	c := &Trace{path: t.path, opts: t.opts, info: t.info, pbs: &sharedBuilder{}, segSalt: t.segSalt}
	if tk != nil {
		c.opts.Tokenizer = tk
	}
	c.opts.PromptOverheadTokens = max(0, overhead)
	return c
}

// AtRate returns the trace replayed at the speed-up that gives it a mean
// arrival rate of rateRPS (a sweep's rate steps).
func (t *Trace) AtRate(rateRPS float64) *Trace {
	native := t.info.MeanRateRPS / t.info.Speedup
	if !(native > 0) {
		return t.WithSpeedup(t.info.Speedup) // all at one instant: no rate to scale
	}
	return t.WithSpeedup(rateRPS / native)
}

// traceReq is one replayed request.
type traceReq struct {
	traceRow
	at time.Duration // replay arrival: from the window start, sped up
}

// traceCursor applies the window, sampling, emptiness and caps to the rows.
type traceCursor struct {
	t       *Trace
	f       *os.File
	format  string
	rd      rowReader
	origin  int64
	started bool
	done    bool
	rows    int
	empty   int
	capped  int
}

func (t *Trace) open() (*traceCursor, error) {
	f, err := os.Open(t.path)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		f.Close()
		return nil, fmt.Errorf("%s is a directory: want a trace file (%s)", t.path, strings.Join(TraceFormats, ", "))
	}
	var src io.Reader = f
	if t.opts.Context != nil {
		src = ctxReader{t.opts.Context, f}
	}
	bounded := &lineBound{r: src, max: maxTraceLine}
	br := bufio.NewReaderSize(bounded, 1<<20)
	head, _ := br.Peek(8 << 10)
	if bytes.IndexByte(head, 0) >= 0 {
		f.Close()
		return nil, fmt.Errorf("%s is a binary file (it holds NUL bytes; it starts with %s), not a trace", t.path, quoteCapped(string(head[:min(len(head), 16)])))
	}
	if err := refuseOneDocument(t.path, br); err != nil {
		f.Close()
		return nil, err
	}
	format := t.opts.Format
	if format == "" {
		// The whole first line, however long (a row may carry a prompt).
		lines := record.NewLineReader(br, maxTraceLine)
		var first []byte
		for len(bytes.TrimSpace(first)) == 0 {
			line, _, rerr := lines.Next()
			if rerr == io.EOF {
				break
			}
			if rerr != nil {
				f.Close()
				return nil, fmt.Errorf("%s: line %d: %w", t.path, lines.Line(), rerr)
			}
			first = line
		}
		if format, err = detectTraceFormat(t.path, first); err != nil {
			f.Close()
			return nil, err
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			f.Close()
			return nil, err
		}
		bounded.current = 0
		br.Reset(bounded)
	}
	c := &traceCursor{t: t, f: f, format: format}
	var rd rowReader
	window := 0
	switch format {
	case TraceMooncake, TraceJSONL:
		rd = newJSONLReader(t.path, br, format == TraceMooncake)
	default:
		cr, err := newCSVReader(t.path, format, br)
		if err != nil {
			f.Close()
			return nil, err
		}
		rd = cr
	}
	if format == TraceJSONL || format == TraceCSV {
		window = 4096 // records.jsonl is in completion order
	}
	c.rd = &sortedReader{path: t.path, rd: rd, window: window}
	return c, nil
}

func (c *traceCursor) close() {
	if c.f != nil {
		c.f.Close()
		c.f = nil
	}
}

// sampleKeep decides by (seed, line) whether a sampled row is replayed.
func (t *Trace) sampleKeep(line int) bool {
	if t.opts.Sample >= 1 {
		return true
	}
	return float64(mix64(t.opts.Seed^mix64(uint64(line)))>>11)/(1<<53) < t.opts.Sample
}

func (c *traceCursor) next() (traceReq, error) {
	o := &c.t.opts
	for !c.done {
		row, err := c.rd.next()
		if err != nil {
			if err == io.EOF {
				c.done = true
			}
			return traceReq{}, err
		}
		c.rows++
		if !c.started {
			c.origin, c.started = row.at, true
		}
		rel := time.Duration(row.at - c.origin)
		if rel < o.Start {
			continue
		}
		if o.End > 0 && rel >= o.End {
			c.done = true
			break
		}
		if row.in < 0 || row.out < 0 {
			return traceReq{}, lineError(c.t.path, row.line, "negative token count (%d input, %d output)", row.in, row.out)
		}
		if row.prompt != "" && row.in == 0 {
			// Text without a length: the simulator needs its count too.
			tk, err := c.t.tokenizer()
			if err != nil {
				return traceReq{}, err
			}
			row.in = tk.Count(row.prompt)
		}
		if row.in == 0 || row.out == 0 {
			c.empty++
			continue
		}
		if !c.t.sampleKeep(row.line) {
			continue
		}
		if m := o.MaxContext; m > 0 && row.in+row.out > m {
			row.out = min(row.out, m-1)
			row.in = min(row.in, m-row.out)
			c.capped++
		}
		at := time.Duration(float64(rel-o.Start) / o.Speedup)
		return traceReq{traceRow: row, at: at}, nil
	}
	return traceReq{}, io.EOF
}

func (t *Trace) tokenizer() (Tokenizer, error) {
	if t.opts.Tokenizer != nil {
		return t.opts.Tokenizer, nil
	}
	return LoadTokenizer(DefaultTokenizer)
}

func (t *Trace) builder() (*promptBuilder, error) {
	b := t.pbs
	b.once.Do(func() {
		tk := t.opts.Tokenizer
		if tk == nil {
			if tk, b.err = LoadTokenizer(DefaultTokenizer); b.err != nil {
				return
			}
		}
		b.pb, b.err = newPromptBuilder(tk, 0, t.opts.Seed)
	})
	return b.pb, b.err
}

// TraceStream replays a trace once: it is the run's arrival schedule (Next)
// and its requests (Item for a real target, Content or Lengths for the
// simulator). Rows are read from disk as arrivals are asked for; each
// request is held only from its arrival until it is taken, once.
type TraceStream struct {
	t   *Trace
	cur *traceCursor

	mu      sync.Mutex
	pending map[int64]*traceItem
	n       int64
	err     error

	ch    chan *traceItem // prompts built ahead by a producer goroutine
	stop  chan struct{}
	ready chan struct{} // closed once the lookahead is full (or the trace ended)
	wg    sync.WaitGroup
}

type traceItem struct {
	traceReq
	item Item
}

// promptLookahead is how many requests' prompts are built ahead of their
// arrival, so building them never delays a send.
const promptLookahead = 256

// Stream opens a replay. withPrompts builds each request's prompt text (for
// a real target) ahead of its arrival, and returns once the first
// promptLookahead prompts are ready, so the run starts with no backlog; the
// simulator needs none. Close it.
func (t *Trace) Stream(withPrompts bool) (*TraceStream, error) {
	c, err := t.open()
	if err != nil {
		return nil, err
	}
	s := &TraceStream{t: t, cur: c, pending: map[int64]*traceItem{}}
	if withPrompts {
		pb, err := t.builder()
		if err != nil {
			c.close()
			return nil, err
		}
		s.ch = make(chan *traceItem, promptLookahead)
		s.stop = make(chan struct{})
		s.ready = make(chan struct{})
		s.wg.Add(1)
		go s.produce(pb)
		<-s.ready
	}
	return s, nil
}

func (s *TraceStream) produce(pb *promptBuilder) {
	defer s.wg.Done()
	defer close(s.ch)
	sent := 0
	signal := func() {
		if sent == promptLookahead {
			close(s.ready)
		}
	}
	defer func() {
		if sent < promptLookahead {
			close(s.ready)
		}
	}()
	pcg := rand.NewPCG(0, 0)
	rng := rand.New(pcg)
	for {
		r, err := s.cur.next()
		if err != nil {
			if err != io.EOF {
				s.setErr(err)
			}
			return
		}
		it := &traceItem{traceReq: r}
		it.item = s.t.buildItem(pb, &r, pcg, rng)
		select {
		case s.ch <- it:
			sent++
			signal()
		case <-s.stop:
			return
		}
	}
}

func (s *TraceStream) setErr(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
}

// Err is the first read error met while streaming (the file changed after
// OpenTrace checked it); the replay ended there.
func (s *TraceStream) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close stops the replay and closes the file.
func (s *TraceStream) Close() {
	if s.stop != nil {
		select {
		case <-s.stop:
		default:
			close(s.stop)
		}
		s.wg.Wait()
	}
	s.cur.close()
}

// neverArrives ends a schedule: no run bound reaches it.
const neverArrives = time.Duration(math.MaxInt64)

// Next is the arrival of the next request (its index is the number of
// earlier calls); after the last one it returns a time no run reaches.
func (s *TraceStream) Next() time.Duration {
	var it *traceItem
	if s.ch != nil {
		var ok bool
		if it, ok = <-s.ch; !ok {
			return neverArrives
		}
	} else {
		r, err := s.cur.next()
		if err != nil {
			if err != io.EOF {
				s.setErr(err)
			}
			return neverArrives
		}
		it = &traceItem{traceReq: r}
	}
	s.mu.Lock()
	s.pending[s.n] = it
	s.n++
	s.mu.Unlock()
	return it.at
}

func (s *TraceStream) take(i int64) *traceItem {
	s.mu.Lock()
	it, ok := s.pending[i]
	delete(s.pending, i)
	s.mu.Unlock()
	if !ok {
		panic(fmt.Sprintf("workload: trace request %d taken before its arrival or twice", i))
	}
	return it
}

// Item returns request i's prompt and lengths (Stream(true)); each request
// is taken once.
func (s *TraceStream) Item(i int64) Item { return s.take(i).item }

// Lengths returns request i's input and output tokens; each request is
// taken once (by Lengths, Content or Item).
func (s *TraceStream) Lengths(i int64) (in, out int) {
	it := s.take(i)
	return it.in, it.out
}

// Content returns request i's lengths and the content of its prompt for the
// engine's prefix cache: one segment per hash_id block (equal ids, equal
// text); the rest is unique.
func (s *TraceStream) Content(i int64, dst []simengine.Segment) (in, out int, prompt []simengine.Segment) {
	it := s.take(i)
	return it.in, it.out, s.t.segments(&it.traceRow, dst)
}

func (t *Trace) segments(r *traceRow, dst []simengine.Segment) []simengine.Segment {
	for j, h := range r.hashIDs {
		n := min(MooncakeBlockTokens, r.in-j*MooncakeBlockTokens)
		if n <= 0 {
			break
		}
		dst = append(dst, simengine.Segment{ID: mix64(uint64(h)^t.segSalt) | 1, Tokens: int32(n)})
	}
	return dst
}

// Session is request i's session id, "" when the trace has none. Call it
// before taking the request.
func (s *TraceStream) Session(i int64) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if it, ok := s.pending[i]; ok {
		return it.session
	}
	return ""
}

// buildItem makes a request's prompt: the trace's own text if it has one;
// else, with hash_ids, each block's words drawn from a source seeded by its
// id (requests sharing a block id share its exact text, so a real server's
// prefix cache sees the reuse) and unique words after; else unique words.
func (t *Trace) buildItem(pb *promptBuilder, r *traceReq, pcg *rand.PCG, rng *rand.Rand) Item {
	over := t.opts.PromptOverheadTokens
	if r.prompt != "" {
		return Item{Prompt: r.prompt, InputTokens: pb.tk.Count(r.prompt) + over, MaxTokens: r.out, Session: r.session}
	}
	n := max(1, r.in-over)
	var sb strings.Builder
	sb.Grow(n * 8)
	written := 0
	for j, h := range r.hashIDs {
		bn := min(MooncakeBlockTokens, n-j*MooncakeBlockTokens)
		if bn <= 0 {
			break
		}
		pcg.Seed(t.opts.Seed^streamPrompt, mix64(uint64(h)))
		for k := 0; k < bn; k++ {
			pb.writeWord(&sb, rng, written == 0)
			written++
		}
	}
	shared := sb.Len()
	ends := make([]int, 0, n-written+8)
	pcg.Seed(t.opts.Seed^streamPrompt, mix64(uint64(r.line)|1<<62))
	for ; written < n; written++ {
		pb.writeWord(&sb, rng, written == 0)
		ends = append(ends, sb.Len())
	}
	if len(ends) == 0 {
		ends = append(ends, shared) // only shared blocks: fit may not cut into them unless it must
	}
	text, got := pb.fit(sb.String(), ends, n, rng)
	return Item{Prompt: text, InputTokens: got + over, RequestedTokens: r.in, MaxTokens: r.out, Session: r.session}
}
