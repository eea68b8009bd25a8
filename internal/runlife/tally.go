// Package runlife is what a run's lifecycle shares between bench, sim and
// sweep: the tally a report takes from the records as they finish, the
// records kept within a memory budget, and, when a run could not save its
// results, where its records are instead (LostResults).
package runlife

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

// Tally is everything bench's report takes from the records, gathered
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
type Tally struct {
	mu      sync.Mutex
	overall *stats.Accumulator // every record but the probes
	classes *report.ClassTally
	work    sweep.GPUWork // what the GPUs' energy is divided by

	// What the report reads once the run is over: the error messages,
	// the conversations, the server's view joined to the records, records
	// per class as the records name them (a mix's split note), how many
	// records and the last one's send time.
	Errors   report.ErrorTally
	Sessions stats.SessionTally
	Join     scrape.JoinTally
	ByClass  map[string]int
	Count    int64
	LastSend time.Duration

	kept Keeper
}

// Keeper keeps a run's records while they fit in a budget of bytes
// and drops them all once they outgrow it (bench's and sim's --out
// report.html, and the temp file of a run that could not save them). Not
// safe for concurrent use.
type Keeper struct {
	Budget int64 // 0: keep none
	bytes  int64
	recs   []record.Request
	over   bool // the records outgrew the budget and were dropped
}

// Add keeps a copy of r while the records fit.
func (k *Keeper) Add(r *record.Request) {
	if k.over || k.Budget == 0 {
		return
	}
	k.bytes += RecordBytes(r)
	if k.bytes > k.Budget {
		k.recs, k.over = nil, true
		return
	}
	k.recs = append(k.recs, r.Clone())
}

// Sorted are the records kept, in request order (nil when they outgrew
// the budget).
func (k *Keeper) Sorted() []record.Request {
	slices.SortStableFunc(k.recs, func(a, b record.Request) int { return cmp.Compare(a.ID, b.ID) })
	return k.recs
}

// NewTally tallies a run judged by objectives (and each class by its
// own, classSLOs; order: the classes' order), keeping its records while
// they fit in keepBytes.
func NewTally(opts stats.Options, objectives slo.Set, classSLOs map[string]slo.Set, order []string, keepBytes int64) *Tally {
	return &Tally{overall: stats.NewAccumulator(opts), classes: report.NewClassTally(opts, objectives, classSLOs, order),
		ByClass: map[string]int{}, kept: Keeper{Budget: keepBytes}}
}

// Add takes one finished record; loadgen may reuse r after.
func (t *Tally) Add(r *record.Request) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r.Class != record.ProbeClass { // the probes are a class apart, not the load's
		t.overall.Add(r)
	}
	t.classes.Add(r)
	t.Errors.Add(r)
	t.Sessions.Add(r)
	t.Join.Add(r)
	t.work.Add(r)
	t.ByClass[r.Class]++
	t.Count++
	t.LastSend = max(t.LastSend, r.Sent)
	t.kept.Add(r)
}

// RecordBytes is about what a copy of r holds in memory.
func RecordBytes(r *record.Request) int64 {
	n := int64(unsafe.Sizeof(*r))
	n += int64(8 * (len(r.TokenTimes) + len(r.ServerTokenTimes) + len(r.ServerWriteTimes)))
	n += int64(4 * len(r.TokenCounts))
	n += int64(len(r.ErrorMessage) + len(r.Session) + len(r.FinishReason) + len(r.Class) + len(r.Replica))
	if r.ServerPhases != nil {
		n += int64(unsafe.Sizeof(*r.ServerPhases))
	}
	return n
}

// Summary is the run's overall summary (probes left out) and its classes
// (nil for a run of one class), as report.ClassSummaries gives them for
// the records sorted by ID.
func (t *Tally) Summary() (stats.Summary, []report.Class) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.overall.Summary(), t.classes.Classes()
}

// KeptRecords are the records kept, in request order (nil when the run
// outgrew the budget, or kept none).
func (t *Tally) KeptRecords() []record.Request {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.kept.Sorted()
}

// GPUWork is the work the run's GPU energy is divided by.
func (t *Tally) GPUWork() sweep.GPUWork {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.work
}
