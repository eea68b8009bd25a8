package runs

import (
	"bytes"
	"fmt"
	"hash"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/ingest"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/store"
)

// Imported is what knee import says of each run it stored.
type Imported struct {
	ID       int64  `json:"id"`
	Format   string `json:"format"`
	Requests int    `json:"requests"`
	Records  int    `json:"records"`
}

// Import is a file to store as runs, with the flags that override what it
// says.
type Import struct {
	Path, Label, Model, Target string
	Version                    string // knee's, stored with the run
	// Say prints a warning or note about the import (one line, no newline).
	Say func(msg string)
	// Size is the file's size in bytes (-1 or 0: not known, as stdin):
	// with it, Stream says how far it got and how long is left.
	Size int64
	// Now is the clock progress is timed by (nil: time.Now).
	Now func() time.Time
}

// Progress lines: the first once the rate is measured, then at most one
// every progressEvery, so a long import says how long it will take and a
// short one says nothing.
const (
	progressFirst = 3 * time.Second
	progressEvery = 15 * time.Second
)

// progress counts what Stream read and says how far it got.
type progress struct {
	r           io.Reader
	o           *Import
	start, last time.Time
	n           int64
}

func (p *progress) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.n += int64(n)
	now := p.o.Now()
	if since := now.Sub(p.start); (p.last.IsZero() && since >= progressFirst) || (!p.last.IsZero() && now.Sub(p.last) >= progressEvery) {
		p.last = now
		p.o.Say(progressLine(p.n, p.o.Size, since))
	}
	return n, err
}

// progressLine says how much of size was read in elapsed, and at that rate
// how long the rest takes.
func progressLine(read, size int64, elapsed time.Duration) string {
	mb := func(n int64) string { return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) }
	if size <= 0 || read <= 0 {
		return fmt.Sprintf("%s MB read and stored in %s", mb(read), elapsed.Round(time.Second))
	}
	left := time.Duration(float64(elapsed) * float64(size-read) / float64(read))
	return fmt.Sprintf("%s of %s MB read and stored (%.0f%%) in %s; about %s to go at this rate",
		mb(read), mb(size), 100*float64(read)/float64(size), elapsed.Round(time.Second), left.Round(time.Second))
}

// Meta is the stored description of an imported run: its names (the flags
// win over the file), configuration and notes; and the summary as stored,
// with what the file lacked noted.
func (o Import) Meta(r *ingest.Run, digest string) (store.RunMeta, stats.Summary) {
	meta := store.RunMeta{Kind: store.KindImport, Label: r.Label, Model: r.Model, Target: r.Target, Version: o.Version, Start: r.Start}
	if meta.Label == "" {
		meta.Label = r.Source // one of several runs in the file (GuideLLM: its benchmark)
	}
	if o.Label != "" {
		meta.Label = o.Label
	}
	if o.Model != "" {
		meta.Model = o.Model
	}
	if o.Target != "" {
		meta.Target = o.Target
	}
	if meta.Target == "" {
		meta.Target = filepath.Base(o.Path)
	}
	cfg := [][2]string{{"imported_from", o.Path}, {"format", r.Format}}
	if digest != "" {
		cfg = append(cfg, [2]string{"file_sha256", digest})
	}
	if r.Source != "" {
		cfg = append(cfg, [2]string{"run", r.Source})
	}
	switch {
	case r.Concurrency > 0 && r.RateRPS > 0:
		cfg = append(cfg, [2]string{"load", fmt.Sprintf("%g req/s, at most %g in flight", r.RateRPS, r.Concurrency)})
	case r.Concurrency > 0:
		cfg = append(cfg, [2]string{"load", fmt.Sprintf("%g in flight", r.Concurrency)})
	case r.RateRPS > 0:
		cfg = append(cfg, [2]string{"load", fmt.Sprintf("%g req/s", r.RateRPS)})
	}
	cfg = append(cfg, r.Config...)
	sum, missing := ingest.StorableSummary(r.Summary)
	notes := append(r.Notes, r.Warnings...)
	if len(missing) > 0 {
		notes = append(notes, "not in the file (shown as 0): "+strings.Join(missing, ", "))
	}
	for _, n := range notes {
		cfg = append(cfg, [2]string{"note", n})
	}
	meta.Config = PairsJSON(cfg)
	return meta, sum
}

// Parsed stores the runs read whole from a file whose content has sha256
// digest, saying first when that content was imported before.
func (o Import) Parsed(st *store.Store, parsed []ingest.Run, digest string) ([]Imported, error) {
	o.sayImportedBefore(st, digest, 0)
	var out []Imported
	for i := range parsed {
		r := &parsed[i]
		meta, sum := o.Meta(r, digest)
		id, err := st.ImportRun(meta, r.Records, &sum, store.StatusComplete)
		if err != nil {
			return out, fmt.Errorf("storing %s: %w", o.Path, err)
		}
		out = append(out, Imported{ID: id, Format: r.Format, Requests: r.Summary.Requests, Records: len(r.Records)})
	}
	return out, nil
}

// Stream stores a knee records.jsonl while it reads it, a batch at a time,
// so a file of any size is imported in bounded memory; sum hashes what src
// yields. The run is stored as running and completed at the end; a file
// that turns out malformed leaves nothing stored (its run is deleted), as
// the other formats, which are parsed whole first.
func (o Import) Stream(st *store.Store, src io.Reader, sum hash.Hash) (Imported, error) {
	meta, _ := o.Meta(&ingest.Run{Format: ingest.FormatRecords}, "")
	w, err := st.BeginRun(meta)
	if err != nil {
		return Imported{}, fmt.Errorf("storing %s: %w", o.Path, err)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Say == nil {
		o.Say = func(string) {}
	}
	n := 0
	var storeErr error
	src = &progress{r: src, o: &o, start: o.Now()}
	run, err := ingest.ScanRecordLines(src, func(r *record.Request, line []byte) error {
		n++
		// Hand each full batch to the database while the next is read, but
		// never read more than one batch ahead of it.
		if w.AddLine(r, line) {
			if storeErr = w.FlushAsync(); storeErr != nil {
				return storeErr
			}
		}
		return nil
	})
	if err != nil {
		w.Finish(stats.Summary{}, store.StatusFailed)
		if derr := st.DeleteRun(w.ID()); derr != nil {
			o.Say(fmt.Sprintf("could not remove the partial run %d: %v", w.ID(), derr))
		}
		if storeErr != nil {
			return Imported{}, fmt.Errorf("storing %s: %w", o.Path, err)
		}
		return Imported{}, badinput.Errorf("%s: %v", o.Path, err)
	}
	for _, warn := range run.Warnings {
		o.Say(fmt.Sprintf("warning: %s: %s", o.Path, warn))
	}
	digest := fmt.Sprintf("%x", sum.Sum(nil))
	o.sayImportedBefore(st, digest, w.ID())
	meta, summary := o.Meta(run, digest)
	if err := st.SetConfig(w.ID(), meta.Config); err != nil {
		w.Finish(summary, store.StatusFailed)
		return Imported{}, fmt.Errorf("storing %s: %w", o.Path, err)
	}
	if err := w.Finish(summary, store.StatusComplete); err != nil {
		return Imported{}, fmt.Errorf("storing %s: %w", o.Path, err)
	}
	return Imported{ID: w.ID(), Format: run.Format, Requests: run.Summary.Requests, Records: n}, nil
}

// sayImportedBefore notes the imported runs other than self whose file had
// this content (sha256): importing a file twice is worth saying.
func (o Import) sayImportedBefore(st *store.Store, digest string, self int64) {
	list, err := st.ListRuns(store.Filter{Kind: store.KindImport})
	if err != nil {
		return
	}
	var ids []string
	for _, r := range list {
		if r.ID != self && bytes.Contains(r.Config, []byte(`"file_sha256":"`+digest+`"`)) {
			ids = append(ids, strconv.FormatInt(r.ID, 10))
		}
	}
	if len(ids) > 0 {
		o.Say(fmt.Sprintf("note: %s has the same content as run(s) %s imported before; storing it again as new run(s)", o.Path, strings.Join(ids, ", ")))
	}
}
