package store_test

import (
	"bytes"
	"crypto/sha256"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/runs"
	"github.com/knee-dev/knee/internal/store"
	"github.com/knee-dev/knee/internal/store/storetest"
)

// importFile is a records.jsonl of n records shaped like a real bench's: 128
// streamed tokens each, about 4 KB a line.
func importFile(tb testing.TB, n int) []byte {
	tb.Helper()
	var buf bytes.Buffer
	w := record.NewWriter(&buf)
	for i := range n {
		sent := time.Duration(i)*3*time.Millisecond + 13_255_403
		r := record.Request{ID: int64(i), Scheduled: sent - 9_716_722, Sent: sent, InputTokens: 512, OutputTokens: 128,
			TokenSource: record.TokensFromUsage, MaxTokens: 128, InFlightAtSend: 1 + i%32, HTTPStatus: 200, FinishReason: "length"}
		t := sent + 124_488_697
		for k := range 128 {
			r.TokenTimes = append(r.TokenTimes, t)
			t += time.Duration(7_900_000 + (i*131+k*977)%300_000)
		}
		r.FirstToken, r.Done = r.TokenTimes[0], r.TokenTimes[127]
		r.StreamEnd = r.Done + 12_345
		if err := w.Write(&r); err != nil {
			tb.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkImportRecords is knee import's throughput for a records.jsonl
// (read, checked, summarised and stored in SQLite), in MB/s of file.
func BenchmarkImportRecords(b *testing.B) {
	data := importFile(b, 5000)
	st, err := store.Open(filepath.Join(b.TempDir(), "knee.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for range b.N {
		o := runs.Import{Path: "records.jsonl", Size: int64(len(data))}
		if _, err := o.Stream(st, bytes.NewReader(data), sha256.New()); err != nil {
			b.Fatal(err)
		}
	}
}

// A streamed import stores every record as it reads back from the file,
// whatever shape its lines have (knee's own, spaced, with fields this knee
// does not know, with escapes, in invalid UTF-8), over several batches.
func TestImportStreamStoresWhatTheFileSays(t *testing.T) {
	data := importFile(t, 2*store.BatchRecords+300)
	data = append(data, []byte(` {"id":9001, "sent_ms":5,"first_token_ms":9,"done_ms":12,"output_tokens":2,"extra":{"a":1}}`+"\r\n"+
		`{"id":9002,"sent_ms":5,"error":"http_5xx","error_message":"\u001b]0;x\u0007 \"q\""}`+"\n"+
		"{\"id\":9003,\"sent_ms\":5,\"error\":\"connect\",\"error_message\":\"\xff\"}\n")...)
	t.Run("sqlite", func(t *testing.T) { checkStreamStores(t, filepath.Join(t.TempDir(), "knee.db"), data) })
	t.Run("postgres", func(t *testing.T) { checkStreamStores(t, storetest.PostgresURL(t), data) })
}

func checkStreamStores(t *testing.T, db string, data []byte) {
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	o := runs.Import{Path: "records.jsonl", Size: int64(len(data))}
	imp, err := o.Stream(st, bytes.NewReader(data), sha256.New())
	if err != nil {
		t.Fatal(err)
	}
	want, err := record.ReadAll(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	got, err := st.AllRecords(imp.ID)
	if err != nil {
		t.Fatal(err)
	}
	if imp.Records != len(want) || len(got) != len(want) {
		t.Fatalf("imported %d, stored %d records, want %d", imp.Records, len(got), len(want))
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("stored records (-file +stored):\n%s", d)
	}
	run, err := st.Run(imp.ID)
	if err != nil || run.Status != store.StatusComplete {
		t.Errorf("run %d: %+v %v, want complete", imp.ID, run, err)
	}
}
