package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/stats"
)

// TestRunWriterSpillsPastItsLimit: while the database takes no records, a
// writer holds at most its limit in memory and writes the rest to a spill
// file in the folder it was given; when the database takes records again
// they are all stored (each once, each with its sweep step) and the file
// is gone; when it is down at the end, Finish's error names the file that
// holds every record not stored, and the run is not complete. (SQLite's
// max_page_count makes every write fail as a dead database does.)
func TestRunWriterSpillsPastItsLimit(t *testing.T) {
	if MemoryRecords != 50_000 {
		t.Fatalf("MemoryRecords = %d, want 50,000", MemoryRecords)
	}
	st := openT(t, tempDB(t))
	w, err := st.BeginRun(RunMeta{Kind: KindSweep, Target: "t"})
	if err != nil {
		t.Fatal(err)
	}
	const limit = 100
	w.mu.Lock()
	w.memLimit = limit
	w.mu.Unlock()
	dir := t.TempDir()
	w.SpillDir(dir)
	var said []string
	w.OnTrouble(func(msg string) { said = append(said, msg) })
	n := int64(0)
	add := func(k int) {
		for range k {
			r := rec(n, 20_000_000)
			n++
			w.Add(&r)
		}
	}
	spillFiles := func() []string {
		m, _ := filepath.Glob(filepath.Join(dir, "knee-run-*-unstored-*.jsonl"))
		return m
	}

	w.SetStep(0)
	add(10)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	fillUp(t, st) // down
	add(50)
	w.SetStep(1)
	add(450) // 440 past the limit of 100 in memory
	if w.Flush() == nil {
		t.Fatal("flush into a full database succeeded")
	}
	w.mu.Lock()
	inMemory, spilled := len(w.pending), 0
	if w.spill != nil {
		spilled = w.spill.lines
	}
	w.mu.Unlock()
	if inMemory > limit || inMemory+spilled != 500 {
		t.Fatalf("while down: %d records in memory and %d in the spill file; want at most %d in memory, 500 in all", inMemory, spilled, limit)
	}
	if files := spillFiles(); len(files) != 1 || !strings.Contains(strings.Join(said, "\n"), files[0]) {
		t.Fatalf("spill files %q; said %q: want one file, named when it was opened", files, said)
	}

	if _, err := st.db.Exec(`PRAGMA max_page_count = 1073741823`); err != nil { // back
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatalf("flush after the outage: %v", err)
	}
	if files := spillFiles(); len(files) != 0 {
		t.Errorf("spill files left after every record was stored: %q", files)
	}
	steps := map[int64]int{}
	if err := st.StepRecords(w.ID(), func(step int, r *record.Request) error {
		if _, dup := steps[r.ID]; dup {
			t.Errorf("record %d stored twice", r.ID)
		}
		steps[r.ID] = step
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(steps) != 510 {
		t.Fatalf("%d records stored after the outage, want 510", len(steps))
	}
	for id, step := range steps {
		if want := map[bool]int{true: 0, false: 1}[id < 60]; step != want {
			t.Fatalf("record %d stored in step %d, want %d", id, step, want)
		}
	}

	fillUp(t, st) // down again, to the end
	add(300)
	err = w.Finish(stats.Summary{Requests: int(n)}, StatusComplete)
	var ue *UnstoredError
	if !errors.As(err, &ue) || ue.Unstored != 300 || ue.Added != n || ue.KeptRecords != 300 || ue.Kept == "" ||
		!strings.Contains(err.Error(), ue.Kept) {
		t.Fatalf("Finish on a dead database: %v (%+v); want 300 of %d unstored, all kept in a file the error names", err, ue, n)
	}
	f, err := os.Open(ue.Kept)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	kept, err := record.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[int64]bool{}
	for _, r := range kept {
		ids[r.ID] = true
	}
	if len(kept) != 300 || len(ids) != 300 {
		t.Fatalf("kept file holds %d records (%d distinct), want the 300 unstored", len(kept), len(ids))
	}
	for id := int64(510); id < 810; id++ {
		if !ids[id] {
			t.Fatalf("record %d is neither stored nor kept", id)
		}
	}
	if files := spillFiles(); len(files) != 1 || files[0] != ue.Kept {
		t.Errorf("files left: %q, want only the one the error names", files)
	}
	if _, err := st.db.Exec(`PRAGMA max_page_count = 1073741823`); err != nil {
		t.Fatal(err)
	}
	if info, err := st.Run(w.ID()); err != nil || info.Status == StatusComplete {
		t.Errorf("run after the dead end: %+v %v; want not complete", info, err)
	}
}

// TestSpillStoresPastACutLine: while a flush reads the spill file back,
// Add may have left half a line after the records it reads (its buffer
// flushed mid-line); that is no damage: every written record is stored.
// A file damaged mid-way stores what reads back and counts the rest as not
// stored, and later records go to memory again.
func TestSpillStoresPastACutLine(t *testing.T) {
	st := openT(t, tempDB(t))
	w, err := st.BeginRun(RunMeta{Kind: KindBench, Target: "t"})
	if err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	w.memLimit = 10
	w.mu.Unlock()
	w.SpillDir(t.TempDir())
	fillUp(t, st)
	for id := range int64(30) { // 10 in memory, 20 in the file
		r := rec(id, 20_000_000)
		w.Add(&r)
	}
	w.Flush()
	w.mu.Lock()
	sp := w.spill
	if sp == nil || sp.lines != 20 {
		w.mu.Unlock()
		t.Fatalf("spill %+v, want 20 records in it", sp)
	}
	sp.w.Flush()
	sp.f.WriteString(`{"id": 30, "sched`) // a record cut by the buffer's flush
	w.mu.Unlock()
	if _, err := st.db.Exec(`PRAGMA max_page_count = 1073741823`); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatalf("flush past a cut line: %v", err)
	}
	if info, _ := st.Run(w.ID()); info.Records != 30 {
		t.Fatalf("%d records stored, want 30", info.Records)
	}

	// Down again; this time the file is damaged mid-way (a write failed).
	fillUp(t, st)
	for id := int64(30); id < 60; id++ {
		r := rec(id, 20_000_000)
		w.Add(&r)
	}
	w.Flush()
	w.mu.Lock()
	sp = w.spill
	sp.w.Flush()
	sp.f.WriteString(`{"id": 50, "sched`) // cut; the next records run on from it
	w.mu.Unlock()
	for id := int64(60); id < 65; id++ {
		r := rec(id, 20_000_000)
		w.Add(&r)
	}
	w.mu.Lock()
	sp.broken = true // as a failed write leaves it
	w.mu.Unlock()
	r := rec(65, 20_000_000)
	w.Add(&r) // lost: the file is broken
	if _, err := st.db.Exec(`PRAGMA max_page_count = 1073741823`); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatalf("flush with a damaged spill file: %v", err)
	}
	r = rec(66, 20_000_000)
	w.Add(&r) // memory again
	err = w.Finish(stats.Summary{}, StatusComplete)
	var ue *UnstoredError
	// Stored: the 30 before, 30..39 from memory, 40..59 read back before
	// the damage, and 66. Not stored: 60..64 after the cut and 65.
	info, _ := st.Run(w.ID())
	if info.Records != 61 || !errors.As(err, &ue) || ue.Unstored != 6 || info.Status == StatusComplete {
		t.Fatalf("after a damaged spill file: %d records stored, %v (%+v); want 61 stored, 6 not, the run not complete", info.Records, err, ue)
	}
	if files, _ := filepath.Glob(filepath.Join(filepath.Dir(sp.path), "*")); len(files) != 0 {
		t.Errorf("files left: %q", files)
	}
}
