package stats

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/knee-dev/knee/internal/record"
)

// Options tune a summary.
type Options struct {
	// Good reports whether a completed request met every SLO (goodput).
	// Nil means no SLOs were given: GoodputRPS stays nil.
	Good func(*record.Request) bool
	// OfferedRateRPS is the open-loop rate asked for, copied into the
	// summary beside the achieved rate (0: closed loop).
	OfferedRateRPS float64
	// Series asks for the per-second time series.
	Series bool
}

// maxSeriesSeconds bounds the time series (a day): a record with an absurd
// timestamp (an imported file, a clock fault) must not allocate gigabytes.
const maxSeriesSeconds = 24 * 3600

// Accumulator builds a Summary from records added one at a time, in any
// order, with bounded memory: distributions are streaming histograms
// (hist.go); the only per-request state is a send and an end time (16 bytes)
// kept for the exact in-flight count. Safe for concurrent use, so it can be
// fed from loadgen's OnRecord and read mid-run.
type Accumulator struct {
	mu   sync.Mutex
	opts Options

	ttft, ttftSched, itl, tpot, e2e, lag *hist
	failedE2E, adjTTFT                   *hist
	srvQueue, srvPrefill, srvDecode      *hist
	inTok, outTok                        *hist

	requests, completed, errors, rejected, good int
	noContent                                   int // completed without any content chunk
	kinds                                       map[record.ErrorKind]int
	sources                                     map[record.TokenSource]int
	inSum, outSum                               int64
	items                                       int64 // embeddings and rerank answers' items
	chunks, multiChunks, coalesced              int
	connRetries                                 int
	// Served against requested prompt lengths (completed, counts from usage).
	promptOff                  []float32 // (served − requested) / requested
	promptExact, promptWithin1 int

	measured            bool // any non-warm-up request seen
	firstSent, lastSent time.Duration
	lastEnd             time.Duration

	sends, ends []int64 // every request, warm-up included: in-flight
	warmSends   []int64 // warm-up requests' send times: warm-up vs cool-down
	series      []secondAcc
	seriesClip  int // token/completion events beyond maxSeriesSeconds
}

type secondAcc struct {
	completions, errors int
	outTokens           int64
	ttft                *hist
}

// NewAccumulator returns an empty accumulator.
func NewAccumulator(opts Options) *Accumulator {
	h := func() *hist { return newHist(precisionBits, exactLimit) }
	return &Accumulator{
		opts: opts,
		ttft: h(), ttftSched: h(), itl: h(), tpot: h(), e2e: h(), lag: h(),
		failedE2E: h(), adjTTFT: h(),
		srvQueue: h(), srvPrefill: h(), srvDecode: h(),
		inTok: h(), outTok: h(),
		kinds:   map[record.ErrorKind]int{},
		sources: map[record.TokenSource]int{},
	}
}

// Summarize summarises a slice of records.
func Summarize(recs []record.Request, opts Options) Summary {
	a := NewAccumulator(opts)
	for i := range recs {
		a.Add(&recs[i])
	}
	return a.Summary()
}

// end is when a request stopped occupying the server as the client saw it:
// its stream's end, or its last content chunk, never before it was sent.
func end(r *record.Request) time.Duration {
	return max(r.StreamEnd, r.Done, r.Sent)
}

// AddGaps folds count inter-chunk gaps of one value into the ITL
// distribution, for callers that know gaps in bulk (the simulator: every
// request decoding in a step gets the same gap) and add records without
// TokenTimes. Only gaps of measured requests belong here.
func (a *Accumulator) AddGaps(gap time.Duration, count int) {
	a.mu.Lock()
	a.itl.addN(int64(gap), uint64(count))
	a.mu.Unlock()
}

// Add folds one finished request in. The record is not retained.
func (a *Accumulator) Add(r *record.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e := end(r)
	a.sends = append(a.sends, int64(r.Sent))
	a.ends = append(a.ends, int64(e))
	if a.opts.Series {
		a.addSeries(r, e)
	}
	if r.Warmup {
		a.warmSends = append(a.warmSends, int64(r.Sent))
		return
	}

	a.requests++
	if !a.measured || r.Sent < a.firstSent {
		a.firstSent = r.Sent
	}
	if !a.measured || r.Sent > a.lastSent {
		a.lastSent = r.Sent
	}
	if !a.measured || e > a.lastEnd {
		a.lastEnd = e
	}
	a.measured = true
	a.lag.add(int64(r.Lag()))
	a.connRetries += r.ConnectionRetries

	if !r.OK() {
		a.errors++
		a.kinds[r.Error]++
		if r.Error == record.ErrRejected {
			a.rejected++
		}
		a.failedE2E.add(int64(e - r.Sent))
		a.adjTTFT.addInf()
		return
	}

	a.completed++
	if a.opts.Good != nil && a.opts.Good(r) {
		a.good++
	}
	a.sources[r.TokenSource]++
	if r.TokenSource == record.TokensFromUsage && r.PromptTokensRequested > 0 {
		d := r.InputTokens - r.PromptTokensRequested
		a.promptOff = append(a.promptOff, float32(d)/float32(r.PromptTokensRequested))
		if d == 0 {
			a.promptExact++
		}
		if d >= -1 && d <= 1 {
			a.promptWithin1++
		}
	}
	a.inSum += int64(r.InputTokens)
	a.outSum += int64(r.OutputTokens)
	a.inTok.add(int64(r.InputTokens))
	a.outTok.add(int64(r.OutputTokens))

	if ttft, ok := r.TTFT(); ok {
		a.ttft.add(int64(ttft))
		a.adjTTFT.add(int64(ttft))
		sched, _ := r.TTFTSched()
		a.ttftSched.add(int64(sched))
		e2e, _ := r.E2E()
		a.e2e.add(int64(e2e))
	} else if e2e, ok := r.E2E(); ok && r.Items > 0 {
		// An answer of items (embeddings, rerank) has no first token;
		// its latency is the whole answer's.
		a.e2e.add(int64(e2e))
		a.items += int64(r.Items)
	} else {
		// Completed without any content: the user never saw a first token.
		a.noContent++
		a.adjTTFT.addInf()
	}
	if tpot, ok := r.TPOT(); ok {
		a.tpot.add(int64(tpot))
	}
	// ITL is per chunk: the gap before each content chunk after the first,
	// whatever number of tokens the chunk carried.
	for i := 1; i < len(r.TokenTimes); i++ {
		a.itl.add(int64(r.TokenTimes[i] - r.TokenTimes[i-1]))
	}
	a.chunks += len(r.TokenTimes)
	for i := range r.TokenTimes {
		if r.TokensInChunk(i) > 1 {
			a.multiChunks++
		}
	}
	a.coalesced += r.CoalescedChunks
	if p := r.ServerPhases; p != nil {
		if !p.QueueUnknown {
			a.srvQueue.add(int64(p.Queue))
		}
		a.srvPrefill.add(int64(p.Prefill))
		a.srvDecode.add(int64(p.Decode))
	}
}

// second returns the series slot for time t, or nil beyond the bound.
func (a *Accumulator) second(t time.Duration) *secondAcc {
	s := int(max(t, 0) / time.Second)
	if s >= maxSeriesSeconds {
		a.seriesClip++
		return nil
	}
	if s >= len(a.series) {
		a.series = append(a.series, make([]secondAcc, s+1-len(a.series))...)
	}
	return &a.series[s]
}

func (a *Accumulator) addSeries(r *record.Request, e time.Duration) {
	if s := a.second(e); s != nil {
		if r.OK() {
			s.completions++
		} else {
			s.errors++
		}
	}
	if ttft, ok := r.TTFT(); ok {
		if s := a.second(r.FirstToken); s != nil {
			if s.ttft == nil {
				s.ttft = newHist(7, 64) // ~0.8% buckets: enough for a plot, small per second
			}
			s.ttft.add(int64(ttft))
		}
	}
	if len(r.TokenTimes) == 0 {
		if r.OutputTokens > 0 && r.HasFirstToken() {
			if s := a.second(r.Done); s != nil {
				s.outTokens += int64(r.OutputTokens)
			}
		}
		return
	}
	for i, t := range r.TokenTimes {
		if s := a.second(t); s != nil {
			s.outTokens += int64(r.TokensInChunk(i))
		}
	}
}

// Summary computes the summary of everything added so far.
func (a *Accumulator) Summary() Summary {
	a.mu.Lock()
	defer a.mu.Unlock()
	var s Summary
	s.Requests, s.Completed, s.Errors, s.Rejected = a.requests, a.completed, a.errors, a.rejected
	if len(a.kinds) > 0 {
		s.ErrorKinds = map[string]int{}
		for k, n := range a.kinds {
			s.ErrorKinds[string(k)] = n
		}
	}
	if len(a.sources) > 0 {
		s.TokenSources = map[string]int{}
		for k, n := range a.sources {
			name := string(k)
			if name == "" {
				name = "unknown"
			}
			s.TokenSources[name] += n
		}
	}
	if a.measured {
		s.Window.StartMS = ms(a.firstSent)
		s.Window.EndMS = ms(a.lastEnd)
		s.DurationS = (a.lastEnd - a.firstSent).Seconds()
	}
	for _, t := range a.warmSends {
		if a.measured && t > int64(a.firstSent) {
			s.Window.ExcludedCooldown++
		} else {
			s.Window.ExcludedWarmup++
		}
	}
	if s.DurationS > 0 {
		d := s.DurationS
		s.RequestThroughputRPS = float64(a.completed) / d
		s.InputTokenThroughputTPS = float64(a.inSum) / d
		s.OutputTokenThroughputTPS = float64(a.outSum) / d
		s.TotalTokenThroughputTPS = float64(a.inSum+a.outSum) / d
		s.ItemThroughputPS = float64(a.items) / d
	}
	s.Items = a.items
	if a.opts.Good != nil {
		good := a.good
		var rps float64
		if s.DurationS > 0 {
			rps = float64(good) / s.DurationS
		}
		s.GoodRequests, s.GoodputRPS = &good, &rps
	}
	s.OfferedRateRPS = a.opts.OfferedRateRPS
	if a.requests >= 2 && a.lastSent > a.firstSent {
		s.AchievedRateRPS = float64(a.requests-1) / (a.lastSent - a.firstSent).Seconds()
	}
	if a.requests > 0 {
		s.ErrorRate = float64(a.errors) / float64(a.requests)
		s.RejectionRate = float64(a.rejected) / float64(a.requests)
	}
	s.InputTokens, s.OutputTokens = a.inSum, a.outSum

	const toMS = 1e-6
	s.TTFT, s.TTFTSched, s.ITL = a.ttft.dist(toMS), a.ttftSched.dist(toMS), a.itl.dist(toMS)
	s.TPOT, s.E2E, s.Lag = a.tpot.dist(toMS), a.e2e.dist(toMS), a.lag.dist(toMS)
	s.FailedE2E, s.AdjustedTTFT = a.failedE2E.dist(toMS), a.adjTTFT.dist(toMS)
	if a.srvQueue.count() > 0 {
		q := a.srvQueue.dist(toMS)
		s.ServerQueue = &q
	}
	if a.srvPrefill.count() > 0 {
		p, d := a.srvPrefill.dist(toMS), a.srvDecode.dist(toMS)
		s.ServerPrefill, s.ServerDecode = &p, &d
	}
	s.ConnectionRetries = a.connRetries
	s.PromptCheck = a.promptCheckLocked()
	s.Chunks, s.MultiTokenChunks, s.CoalescedChunks = a.chunks, a.multiChunks, a.coalesced
	s.Shape = Shape{InputTokens: a.inTok.dist(1), OutputTokens: a.outTok.dist(1)}

	peak, perSecond := a.inFlight()
	s.PeakInFlight = peak
	if a.opts.Series {
		s.TimeSeries = a.timeSeries(perSecond)
	}
	s.Warnings = a.warnings()
	return s
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// inFlight sweeps the send and end times in order. It returns the peak
// number of requests in flight (warm-up ones included: the server carries
// them) at any send inside the measurement window, and the peak of each
// second of the run. A request ending at the instant another is sent does
// not overlap it.
func (a *Accumulator) inFlight() (peak int, perSecond []int) {
	slices.Sort(a.sends)
	slices.Sort(a.ends)
	lo, hi := int64(a.firstSent), int64(a.lastEnd)
	cur, j := 0, 0
	note := func(t int64) {
		sec := int(max(t, 0) / int64(time.Second))
		if sec < maxSeriesSeconds && a.opts.Series {
			if sec >= len(perSecond) {
				perSecond = append(perSecond, make([]int, sec+1-len(perSecond))...)
			}
			perSecond[sec] = max(perSecond[sec], cur)
		}
	}
	for _, t := range a.sends {
		for j < len(a.ends) && a.ends[j] <= t {
			cur--
			j++
		}
		cur++
		if a.measured && t >= lo && t <= hi {
			peak = max(peak, cur)
		}
		note(t)
	}
	if a.opts.Series {
		// A second with no event still holds what was in flight when it began.
		cur, i, j := 0, 0, 0
		for sec := range perSecond {
			start := int64(sec) * int64(time.Second)
			for i < len(a.sends) && a.sends[i] < start {
				cur++
				i++
			}
			for j < len(a.ends) && a.ends[j] <= start {
				cur--
				j++
			}
			perSecond[sec] = max(perSecond[sec], cur)
		}
	}
	return peak, perSecond
}

func (a *Accumulator) timeSeries(inflight []int) []Second {
	n := max(len(a.series), len(inflight))
	out := make([]Second, n)
	for i := range out {
		out[i].T = i
		if i < len(inflight) {
			out[i].InFlight = inflight[i]
		}
		if i >= len(a.series) {
			continue
		}
		sa := &a.series[i]
		out[i].Completions, out[i].Errors = sa.completions, sa.errors
		out[i].OutputTPS = float64(sa.outTokens)
		if sa.ttft != nil {
			out[i].TTFTP50MS = sa.ttft.quantile(0.50) / 1e6
			out[i].TTFTP95MS = sa.ttft.quantile(0.95) / 1e6
		}
	}
	return out
}

// warnings are facts a reader needs to trust the numbers, in a fixed order.
// promptCheckLocked compares served with requested prompt lengths (nil:
// no request has both).
func (a *Accumulator) promptCheckLocked() *PromptCheck {
	n := len(a.promptOff)
	if n == 0 {
		return nil
	}
	return &PromptCheck{Compared: n, Exact: a.promptExact, WithinOne: a.promptWithin1, MedianOffPct: 100 * float64(Median(a.promptOff))}
}

func (a *Accumulator) warnings() []string {
	var w []string
	if a.requests == 0 {
		w = append(w, "no measured requests: every record was warm-up, or there were none")
	}
	if a.noContent > 0 {
		w = append(w, fmt.Sprintf("%d completed requests carried no content: they have no TTFT, ITL or E2E and count as infinitely slow in adjusted TTFT", a.noContent))
	}
	if a.multiChunks > 0 {
		w = append(w, fmt.Sprintf("%d of %d chunks carried more than one token: ITL is the gap between chunks, TPOT is per token", a.multiChunks, a.chunks))
	}
	if a.coalesced > 0 {
		w = append(w, fmt.Sprintf("%d of %d chunks (%.2g%%) arrived in one socket read with an earlier chunk: they share its timestamp, so their ITL gap is 0 and the gap before them carries both; either the server wrote them together or knee read later than a token gap (knee selftest shows this machine's limit)",
			a.coalesced, a.chunks, 100*float64(a.coalesced)/float64(max(a.chunks, 1))))
	}
	if pc := a.promptCheckLocked(); pc != nil && pc.Off() {
		dir := "longer"
		if pc.MedianOffPct < 0 {
			dir = "shorter"
		}
		w = append(w, fmt.Sprintf("the server served prompts a median %.1f%% %s than requested (usage.prompt_tokens against prompt_tokens_requested, %d requests, %d exact): input-length figures are about the served lengths",
			math.Abs(pc.MedianOffPct), dir, pc.Compared, pc.Exact))
	}
	var counted []string
	for _, src := range []struct {
		kind record.TokenSource
		how  string
	}{
		{record.TokensFromTokenizer, "counted by knee's tokenizer"},
		{record.TokensFromChunks, "assumed one token per chunk"},
		{"", "of unknown origin"},
	} {
		if n := a.sources[src.kind]; n > 0 {
			counted = append(counted, fmt.Sprintf("%d %s", n, src.how))
		}
	}
	if len(counted) > 0 {
		w = append(w, "token counts not from the server's usage for completed requests: "+strings.Join(counted, ", "))
	}
	if a.seriesClip > 0 {
		w = append(w, fmt.Sprintf("time series stops at %d s; %d later events left out of it", maxSeriesSeconds, a.seriesClip))
	}
	return w
}
