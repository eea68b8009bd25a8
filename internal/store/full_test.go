package store

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/stats"
)

// fillUp makes st's database full after its current size: SQLite's
// max_page_count gives the same SQLITE_FULL a full disk gives. One pooled
// connection, so the pragma holds for every statement.
func fillUp(t *testing.T, st *Store) {
	t.Helper()
	st.db.SetMaxOpenConns(1)
	var pages int
	if err := st.db.QueryRow(`PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := st.db.Exec(`PRAGMA max_page_count = ` + strconv.Itoa(pages)); err != nil {
		t.Fatal(err)
	}
}

// TestFinishOnFullDatabaseIsNotComplete: records that could not be written
// (database or disk full) make Finish fail with an UnstoredError naming how
// many, and the run is not stored as complete.
func TestFinishOnFullDatabaseIsNotComplete(t *testing.T) {
	st := openT(t, tempDB(t))
	w, err := st.BeginRun(RunMeta{Kind: KindBench, Target: "t"})
	if err != nil {
		t.Fatal(err)
	}
	w.SpillDir(t.TempDir()) // the unstored records are kept there
	fillUp(t, st)
	const n = 3000 // more than a few pages of records
	for i := int64(0); i < n; i++ {
		r := rec(i, 20_000_000)
		w.Add(&r)
	}
	err = w.Finish(stats.Summary{Requests: n, Completed: n}, StatusComplete)
	var ue *UnstoredError
	if !errors.As(err, &ue) {
		t.Fatalf("Finish on a full database: %v, want an UnstoredError", err)
	}
	if ue.Unstored == 0 || ue.Added != n {
		t.Errorf("UnstoredError %+v: want some of %d unstored", ue, n)
	}
	if !strings.Contains(err.Error(), "full") {
		t.Errorf("error %q does not say the database is full", err)
	}
	info, err := st.Run(w.ID())
	if err != nil {
		t.Fatal(err)
	}
	if info.Status == StatusComplete {
		t.Errorf("run stored as %q with %d of %d records", info.Status, info.Records, n)
	}
}
