package cli

import (
	"cmp"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/report"
	"github.com/knee-dev/knee/internal/scrape"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/sweep"
)

// runTally is everything bench's report takes from the records, gathered
// as each record finishes (loadgen's OnRecord) so that the run keeps no
// record for its own length: the records themselves stream to the run
// database and --out/records.jsonl (recordSink), and the report, SLO
// gates, notes, JUnit verdicts and the server view read the tally. Its
// memory is bounded: the accumulators are streaming histograms; the only
// per-request state is stats.Accumulator's 16 bytes for the exact
// in-flight count (and 8 bytes per measured turn of a conversation).
//
// It also keeps the run's records while they fit in keepBytes, as knee
// sim keeps its stored ones: --out's report.html draws its curves and
// waterfall from them, and a run whose records could not all be saved
// writes them to the temp folder. A run that outgrows the budget drops
// them all at once (a prefix would draw curves of the run's start only).
type runTally struct {
	mu       sync.Mutex
	overall  *stats.Accumulator // every record but the probes
	classes  *report.ClassTally
	errors   report.ErrorTally
	sessions stats.SessionTally
	join     scrape.JoinTally
	work     sweep.GPUWork  // what the GPUs' energy is divided by
	byClass  map[string]int // records per class as the records name it, for a mix's split note
	count    int64
	lastSend time.Duration

	kept recordKeeper
}

// recordKeeper keeps a run's records while they fit in a budget of bytes
// and drops them all once they outgrow it (bench's and sim's --out
// report.html, and the temp file of a run that could not save them). Not
// safe for concurrent use.
type recordKeeper struct {
	budget int64 // 0: keep none
	bytes  int64
	recs   []record.Request
	over   bool // the records outgrew the budget and were dropped
}

// add keeps a copy of r while the records fit.
func (k *recordKeeper) add(r *record.Request) {
	if k.over || k.budget == 0 {
		return
	}
	k.bytes += recordBytes(r)
	if k.bytes > k.budget {
		k.recs, k.over = nil, true
		return
	}
	k.recs = append(k.recs, r.Clone())
}

// sorted are the records kept, in request order (nil when they outgrew
// the budget).
func (k *recordKeeper) sorted() []record.Request {
	slices.SortStableFunc(k.recs, func(a, b record.Request) int { return cmp.Compare(a.ID, b.ID) })
	return k.recs
}

// keptRecordsBytes is the budget of records a bench or sim run keeps for
// its report.html and for the temp file of a run that could not save them:
// runs of a few thousand requests keep them all (8 MiB: 1,800 records of
// 512 chunk times, an endless stream's; more of shorter ones); longer ones draw their
// curves from the percentiles, as knee report does for imported summaries.
var keptRecordsBytes int64 = 8 << 20

func newRunTally(opts stats.Options, objectives slo.Set, classSLOs map[string]slo.Set, order []string, keepBytes int64) *runTally {
	return &runTally{overall: stats.NewAccumulator(opts), classes: report.NewClassTally(opts, objectives, classSLOs, order),
		byClass: map[string]int{}, kept: recordKeeper{budget: keepBytes}}
}

// add takes one finished record; loadgen may reuse r after.
func (t *runTally) add(r *record.Request) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r.Class != record.ProbeClass { // the probes are a class apart, not the load's
		t.overall.Add(r)
	}
	t.classes.Add(r)
	t.errors.Add(r)
	t.sessions.Add(r)
	t.join.Add(r)
	t.work.Add(r)
	t.byClass[r.Class]++
	t.count++
	t.lastSend = max(t.lastSend, r.Sent)
	t.kept.add(r)
}

// recordBytes is about what a copy of r holds in memory.
func recordBytes(r *record.Request) int64 {
	n := int64(unsafe.Sizeof(*r))
	n += int64(8 * (len(r.TokenTimes) + len(r.ServerTokenTimes) + len(r.ServerWriteTimes)))
	n += int64(4 * len(r.TokenCounts))
	n += int64(len(r.ErrorMessage) + len(r.Session) + len(r.FinishReason) + len(r.Class) + len(r.Replica))
	if r.ServerPhases != nil {
		n += int64(unsafe.Sizeof(*r.ServerPhases))
	}
	return n
}

// summary is the run's overall summary (probes left out) and its classes
// (nil for a run of one class), as report.ClassSummaries gives them for
// the records sorted by ID.
func (t *runTally) summary() (stats.Summary, []report.Class) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.overall.Summary(), t.classes.Classes()
}

// keptRecords are the records kept, in request order (nil when the run
// outgrew the budget, or kept none).
func (t *runTally) keptRecords() []record.Request {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.kept.sorted()
}

// gpuWork is the work the run's GPU energy is divided by.
func (t *runTally) gpuWork() sweep.GPUWork {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.work
}
