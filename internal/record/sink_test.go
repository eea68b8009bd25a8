package record

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

// Every record added reaches the JSONL file and also, in order, as a copy
// (the caller may reuse its record); Close flushes and says nothing failed.
func TestSinkKeepsEveryRecordInOrder(t *testing.T) {
	var buf bytes.Buffer
	var seen []int64
	s := NewSink(NewWriter(&buf), func(r *Request) { seen = append(seen, r.ID) })
	var r Request
	for i := range int64(100) {
		r.ID = i
		s.Add(&r)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	back, err := ReadAll(&buf)
	if err != nil || len(back) != 100 || len(seen) != 100 {
		t.Fatalf("read back %d records (%v), also saw %d; want 100 each", len(back), err, len(seen))
	}
	for i := range back {
		if back[i].ID != int64(i) || seen[i] != int64(i) {
			t.Fatalf("record %d: file has id %d, also saw %d", i, back[i].ID, seen[i])
		}
	}
}

// A tick flushes what was written, so a killed run loses at most the
// records since the last tick.
func TestSinkFlushesOnTick(t *testing.T) {
	var buf bytes.Buffer
	tick := make(chan time.Time) // unbuffered: a second send returns once the first tick's flush is done
	seen := make(chan struct{}, 1)
	s := newSink(NewWriter(&buf), func(*Request) { seen <- struct{}{} }, tick, func() {})
	s.Add(&Request{ID: 7})
	<-seen
	if buf.Len() != 0 {
		t.Fatalf("written through before any tick: %q", buf.String())
	}
	tick <- time.Time{}
	tick <- time.Time{}
	if !strings.Contains(buf.String(), `"id":7`) {
		t.Errorf("after a tick the file holds %q, want record 7", buf.String())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// A file that cannot be written is reported by Close, and the records
// still reach also (the run database keeps them).
func TestSinkReportsWriteError(t *testing.T) {
	n := 0
	s := NewSink(NewWriter(failingWriter{}), func(*Request) { n++ })
	s.Add(&Request{ID: 1})
	s.Add(&Request{ID: 2})
	if err := s.Close(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Close: %v, want the write error", err)
	}
	if n != 2 {
		t.Errorf("also saw %d records, want 2", n)
	}
}

// Without a file, records go to also alone.
func TestSinkWithoutFile(t *testing.T) {
	n := 0
	s := NewSink(nil, func(*Request) { n++ })
	s.Add(&Request{ID: 1})
	if err := s.Close(); err != nil || n != 1 {
		t.Errorf("Close: %v, also saw %d; want nil and 1", err, n)
	}
}
