package workload

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestOpenTraceHostileFiles: a folder, a huge binary file, a 20 MB row and
// a huge header get clear, short errors (or are read), at once.
func TestOpenTraceHostileFiles(t *testing.T) {
	dir := t.TempDir()
	t.Run("directory", func(t *testing.T) {
		_, err := OpenTrace(dir, TraceOptions{})
		if err == nil || !strings.Contains(err.Error(), "is a directory") {
			t.Errorf("err = %v, want it to say it is a directory", err)
		}
	})
	t.Run("huge binary", func(t *testing.T) {
		path := filepath.Join(dir, "zeros.jsonl")
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(path, 2<<30); err != nil {
			t.Skipf("no sparse file here: %v", err)
		}
		start := time.Now()
		_, err := OpenTrace(path, TraceOptions{})
		if err == nil || !strings.Contains(err.Error(), "binary file") || len(err.Error()) > 400 {
			t.Errorf("err = %.500v, want a short error saying binary", err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("took %v", d)
		}
	})
	t.Run("20 MB row", func(t *testing.T) {
		path := filepath.Join(dir, "long.jsonl")
		prompt := strings.Repeat("word ", 4<<20)
		row := `{"arrival_ms": 0, "input_tokens": 10, "output_tokens": 2, "prompt": "` + prompt + `"}` + "\n"
		if err := os.WriteFile(path, []byte(row+`{"arrival_ms": 5, "input_tokens": 10, "output_tokens": 2}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		tr, err := OpenTrace(path, TraceOptions{})
		if err != nil {
			t.Fatalf("a valid 20 MB row: %v", err)
		}
		if tr.Info().Kept != 2 {
			t.Errorf("kept %d rows, want 2", tr.Info().Kept)
		}
	})
	t.Run("huge header", func(t *testing.T) {
		path := filepath.Join(dir, "wide.csv")
		if err := os.WriteFile(path, []byte(strings.Repeat("x", 1<<20)+",y\n1,2\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := OpenTrace(path, TraceOptions{Format: TraceCSV})
		if err == nil || len(err.Error()) > 1000 {
			t.Errorf("a 1 MB header lacking columns: error %.300v, want a short one", err)
		}
	})
}

// TestOpenTraceAnswersCancel: reading a trace stops when its context ends.
func TestOpenTraceAnswersCancel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	var b strings.Builder
	for i := range 50000 {
		b.WriteString(`{"arrival_ms": ` + strconv.Itoa(i) + `, "input_tokens": 10, "output_tokens": 2}` + "\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := OpenTrace(path, TraceOptions{Context: ctx})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want the cancel", err)
	}
}

// TestOpenTraceRefusesOneDocument: a benchmark's result on one line (a
// vLLM `bench serve` JSON, 70 MiB of "ttfts") is refused as not a trace,
// naming knee import, without reading the line: before, the 64 MiB row
// bound was read into memory first (issue 43 item 1, ~175 MB at 2 GiB).
func TestOpenTraceRefusesOneDocument(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "vllm.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"date": "20261101-120000", "backend": "openai-chat", "duration": 10, "completed": 5, "ttfts": [`)
	chunk := []byte(strings.Repeat("0.123456, ", 1<<16))
	for n := 0; n < 70<<20; n += len(chunk) {
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	f.WriteString("0.1]}\n")
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = OpenTrace(path, TraceOptions{})
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "knee import") || !strings.Contains(err.Error(), "one JSON document") {
		t.Errorf("err = %.400v, want it refused as one JSON document naming knee import", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 16<<20 {
		t.Errorf("allocated %d MiB to refuse it, want well under the 64 MiB row bound", got>>20)
	}

	// Any key: a top-level list still open after the first MiB.
	other := filepath.Join(dir, "other.json")
	if err := os.WriteFile(other, []byte(`{"samples": [`+strings.Repeat("1, ", 1<<20)+"1]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenTrace(other, TraceOptions{}); err == nil || !strings.Contains(err.Error(), "one JSON document") {
		t.Errorf("a 3 MiB one-line document: err = %.400v, want it refused as one JSON document", err)
	}
}
