package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/stats"
)

// storedJSON is record seq of run id as the database holds it.
func storedJSON(t *testing.T, st *Store, id, seq int64) []byte {
	t.Helper()
	var raw []byte
	if err := st.db.QueryRow(`SELECT record_json FROM records WHERE run_id = ? AND seq = ?`, id, seq).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	return raw
}

// AddLine stores a records.jsonl line as it was read, not encoded again,
// and it reads back as the record it was decoded into; a line in invalid
// UTF-8 (PostgreSQL's text refuses it) is stored encoded from the record.
// Both dialects.
func TestAddLineStoresTheLineAsRead(t *testing.T) {
	eachDialect(t, func(t *testing.T, db string) {
		st := openT(t, db)
		w, err := st.BeginRun(RunMeta{Kind: KindImport, Target: "t"})
		if err != nil {
			t.Fatal(err)
		}
		canonical, err := json.Marshal(rec(1, 20*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		lines := [][]byte{
			canonical,
			[]byte(`{"id":2, "sent_ms":5,"first_token_ms":9,"done_ms":12,"output_tokens":2,"input_tokens":3,"from_a_newer_knee":[1,2]}`),
			[]byte(`{"id":3,"sent_ms":5,"error":"http_5xx","error_message":"bad \"quote\" \u001b[2J"}`),
			[]byte("{\"id\":4,\"sent_ms\":5,\"error\":\"http_5xx\",\"error_message\":\"cut \xff byte\"}"),
		}
		var want []record.Request
		for _, line := range lines {
			var r record.Request
			if err := record.DecodeLine(line, &r); err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			want = append(want, r)
			w.AddLine(&r, line)
		}
		if err := w.FlushAsync(); err != nil {
			t.Fatal(err)
		}
		if err := w.Finish(stats.Summary{Requests: len(lines)}, StatusComplete); err != nil {
			t.Fatal(err)
		}
		for seq, line := range lines[:3] {
			if got := storedJSON(t, st, w.ID(), int64(seq)); !bytes.Equal(got, line) {
				t.Errorf("record %d stored as %s, want the line as read: %s", seq, got, line)
			}
		}
		if got := storedJSON(t, st, w.ID(), 3); !utf8.Valid(got) || bytes.Equal(got, lines[3]) {
			t.Errorf("a line in invalid UTF-8 stored as %q, want it encoded again", got)
		}
		got, err := st.AllRecords(w.ID())
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("records read back (-decoded +stored):\n%s", d)
		}
	})
}

// FlushAsync runs one batch ahead of the database and no more: the error
// of a batch the database refused comes back from the next call, and
// Finish keeps what was not stored as it does for Add.
func TestFlushAsyncReportsTheDatabaseRefusing(t *testing.T) {
	st := openT(t, tempDB(t))
	w, err := st.BeginRun(RunMeta{Kind: KindImport, Target: "t"})
	if err != nil {
		t.Fatal(err)
	}
	w.SpillDir(t.TempDir())
	add := func(from, n int) {
		for i := from; i < from+n; i++ {
			r := rec(int64(i), 20*time.Millisecond)
			line, _ := json.Marshal(&r)
			w.AddLine(&r, line)
		}
	}
	fillUp(t, st)
	add(0, 3000)
	if err := w.FlushAsync(); err != nil {
		t.Fatalf("FlushAsync with no flush before it: %v", err)
	}
	if err := w.FlushAsync(); err == nil {
		t.Fatal("FlushAsync after a batch the full database refused: no error")
	}
	err = w.Finish(stats.Summary{}, StatusComplete)
	var ue *UnstoredError
	if !errors.As(err, &ue) || ue.Unstored != 3000 || ue.Added != 3000 || ue.KeptRecords != 3000 {
		t.Fatalf("Finish: %v, want all 3000 records unstored and kept", err)
	}
	kept, err := record.ReadAll(mustOpen(t, ue.Kept))
	if err != nil || len(kept) != 3000 || kept[0].ID != 0 || kept[2999].ID != 2999 {
		t.Fatalf("kept file: %d records (%v), want records 0..2999", len(kept), err)
	}
}

// An import killed outright (no Finish) leaves its run with the batches
// stored so far, shown as interrupted once its heartbeat is stale.
func TestKilledLineImportIsInterrupted(t *testing.T) {
	path := tempDB(t)
	st := openT(t, path)
	w, err := st.BeginRun(RunMeta{Kind: KindImport, Target: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Finish(stats.Summary{}, StatusFailed)
	for i := range 2 * BatchRecords {
		r := rec(int64(i), 20*time.Millisecond)
		line, _ := json.Marshal(&r)
		if w.AddLine(&r, line) {
			if err := w.FlushAsync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The first call waits for the flush before it and starts one of the
	// rest; the second waits for that one.
	for range 2 {
		if err := w.FlushAsync(); err != nil {
			t.Fatal(err)
		}
	}
	later := openT(t, path)
	later.now = func() time.Time { return time.Now().Add(time.Minute) }
	ri, err := later.Run(w.ID())
	if err != nil {
		t.Fatal(err)
	}
	if ri.Status != StatusInterrupted || ri.Records != 2*BatchRecords {
		t.Errorf("a killed import reads as %s with %d records, want interrupted with %d", ri.Status, ri.Records, 2*BatchRecords)
	}
}

func mustOpen(t *testing.T, path string) *bytes.Reader {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(fmt.Errorf("reading %s: %w", path, err))
	}
	return bytes.NewReader(b)
}
