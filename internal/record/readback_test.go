package record

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func jsonl(t *testing.T, recs ...Request) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for i := range recs {
		if err := w.Write(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestReadAllCutLastLine: a file whose writer was killed mid-line reads back
// every complete record, and says the last line was cut.
func TestReadAllCutLastLine(t *testing.T) {
	var recs []Request
	for i := range 30 {
		r := sample()
		r.ID = int64(i)
		recs = append(recs, r)
	}
	data := jsonl(t, recs...)
	cut := data[:len(data)-40] // inside the last record
	got, err := ReadAll(bytes.NewReader(cut))
	var cl *CutLastLineError
	if !errors.As(err, &cl) {
		t.Fatalf("err = %v, want a CutLastLineError", err)
	}
	if cl.Line != 30 || len(got) != 29 {
		t.Errorf("cut at line %d with %d records read, want line 30 and 29 records", cl.Line, len(got))
	}
	// A broken line followed by others is not a cut: it stays an error.
	mid := append(append([]byte{}, data[:len(data)/2]...), '\n')
	mid = append(mid, data...)
	if _, err := ReadAll(bytes.NewReader(mid)); err == nil || errors.As(err, &cl) {
		t.Errorf("a broken line in the middle: err = %v, want a plain error", err)
	}
}

// TestReadAllLongRecord: a record longer than bufio.Scanner's limits (64
// KiB by default, the 64 MiB knee set before) reads back.
func TestReadAllLongRecord(t *testing.T) {
	if testing.Short() {
		t.Skip("reads a 65 MiB line: seconds on a loaded machine")
	}
	// Written by hand: encoding 65 MiB through the Writer takes seconds.
	long := `{"id":1,"sent_ms":1,"stream_end_ms":2,"error":"bad_payload","error_message":"` + strings.Repeat("x", 65<<20) + "\"}\n"
	data := append(append(jsonl(t, sample()), long...), jsonl(t, sample())...)
	got, err := ReadAll(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("ReadAll of a %d MiB record: %v", len(data)>>20, err)
	}
	if len(got) != 3 || len(got[1].ErrorMessage) != 65<<20 {
		t.Fatalf("read %d records, the long one's message %d bytes", len(got), len(got[1].ErrorMessage))
	}
}

// TestLineReaderBound: a line beyond the bound is an error naming it, not
// an unbounded buffer.
func TestLineReaderBound(t *testing.T) {
	lr := NewLineReader(strings.NewReader(strings.Repeat("a", 200<<10)+"\nok\n"), 100<<10)
	if _, _, err := lr.Next(); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("err = %v, want the bound named", err)
	}
}
