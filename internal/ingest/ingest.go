// Package ingest turns result files of other tools, and knee's own
// records.jsonl, into knee records and a summary, so imported runs sit
// beside knee's own in the store.
//
// Reading order: Read (this file) detects the format; vllm.go reads a vLLM
// `bench serve` result JSON (detailed with --save-detailed, or summary
// only); others.go reads GuideLLM's, AIPerf's and inference-perf's
// aggregate reports (summary only); records.jsonl is read with the record
// package's codec.
package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/stats"
)

// Formats Read recognises.
const (
	FormatVLLM          = "vllm-bench-serve"         // result JSON of `vllm bench serve --save-result`
	FormatRecords       = "knee-records"             // knee's records.jsonl
	FormatGuideLLM      = "guidellm-benchmarks"      // GuideLLM's benchmarks.json
	FormatAIPerf        = "aiperf-profile-export"    // AIPerf's profile_export_aiperf.json
	FormatInferencePerf = "inference-perf-lifecycle" // inference-perf's stage_N_lifecycle_metrics.json
)

// knownFormats is quoted when a file is none of them.
const knownFormats = "a vLLM bench serve result JSON, GuideLLM benchmarks.json, AIPerf profile_export_aiperf.json, " +
	"an inference-perf stage_N_lifecycle_metrics.json, or knee records.jsonl"

// ErrUnknownFormat: the file is neither format (errors wrap it).
var ErrUnknownFormat = errors.New("unknown import format")

// Run is one imported run.
type Run struct {
	Format string
	Label  string // from the file when it carries one
	Model  string
	Target string    // what the file says was measured (vLLM: backend), else empty
	Start  time.Time // zero when the file does not say
	// Config is what the file says about how the run was made, in order.
	Config [][2]string
	// Records are per-request records; nil for a summary-only vLLM file.
	Records []record.Request
	Summary stats.Summary
	Notes   []string
	// Warnings are what the reader skipped (a last line cut short).
	Warnings []string
	// The load the file says the run was made at, 0 when it does not say:
	// requests kept in flight, and requests per second offered.
	Concurrency float64
	RateRPS     float64
	// Source names the run within its file when a file holds several
	// (GuideLLM: "benchmark 2 (concurrent@4)").
	Source string
}

// Read detects the format of data and reads every run in it (a vLLM file
// written with --append-result holds one JSON object per run). Errors are
// about the input and say what was expected.
func Read(data []byte) ([]Run, error) {
	format, err := Detect(data)
	if err != nil {
		return nil, err
	}
	switch format {
	case FormatRecords:
		r, err := readRecords(data)
		if err != nil {
			return nil, err
		}
		return []Run{*r}, nil
	case FormatGuideLLM:
		return readGuideLLM(data)
	case FormatAIPerf:
		return readAIPerf(data)
	case FormatInferencePerf:
		return readInferencePerf(data)
	}
	return readVLLM(data)
}

// Detect names the format of data from its first JSON value: a knee record
// has "sent_ms"; a vLLM result has "duration" and "completed"; GuideLLM's
// report a "benchmarks" list; inference-perf's "load_summary" and
// "successes"; AIPerf's metric objects with a "unit" (request_count,
// request_throughput, ...).
func Detect(data []byte) (string, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff")
	trimmed = bytes.TrimPrefix(trimmed, []byte("\xef\xbb\xbf"))
	if len(trimmed) == 0 {
		return "", fmt.Errorf("%w: the file is empty", ErrUnknownFormat)
	}
	if trimmed[0] != '{' {
		return "", fmt.Errorf("%w: want %s; the file starts with %q", ErrUnknownFormat, knownFormats, firstBytes(trimmed))
	}
	var keys map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if err := dec.Decode(&keys); err != nil {
		// A damaged file of a known kind: let its reader say where it broke.
		head := trimmed[:min(len(trimmed), 4096)]
		switch {
		case bytes.Contains(head, []byte(`"sent_ms"`)):
			return FormatRecords, nil
		case bytes.Contains(head, []byte(`"duration"`)) || bytes.Contains(head, []byte(`"ttfts"`)):
			return FormatVLLM, nil
		}
		return "", fmt.Errorf("%w: the first JSON value does not parse: %v", ErrUnknownFormat, err)
	}
	_, sent := keys["sent_ms"]
	_, duration := keys["duration"]
	_, completed := keys["completed"]
	isObject := func(k string) bool { v := keys[k]; return len(v) > 0 && v[0] == '{' }
	unitObject := func(k string) bool {
		var m map[string]json.RawMessage
		return isObject(k) && json.Unmarshal(keys[k], &m) == nil && m["unit"] != nil
	}
	switch {
	case sent:
		return FormatRecords, nil
	case duration && completed:
		return FormatVLLM, nil
	case len(keys["benchmarks"]) > 0 && keys["benchmarks"][0] == '[':
		return FormatGuideLLM, nil
	case isObject("load_summary") && isObject("successes"):
		return FormatInferencePerf, nil
	case unitObject("request_count") || unitObject("request_throughput") || unitObject("time_to_first_token") ||
		(isObject("records") && bytes.Contains(keys["records"], []byte(`"unit"`))):
		return FormatAIPerf, nil
	}
	return "", fmt.Errorf("%w: a JSON object that is none of %s (knee looks for \"sent_ms\", \"duration\" and \"completed\", \"benchmarks\", \"load_summary\" and \"successes\", or metric objects with a \"unit\")",
		ErrUnknownFormat, knownFormats)
}

func firstBytes(b []byte) string {
	if len(b) > 20 {
		b = b[:20]
	}
	return string(b)
}

func readRecords(data []byte) (*Run, error) {
	var recs []record.Request
	r, err := ScanRecords(bytes.NewReader(data), func(rec *record.Request) error {
		recs = append(recs, *rec)
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.Records = recs
	return r, nil
}

// ScanRecords reads a knee records.jsonl from rd one record at a time,
// checking each and folding it into the summary, and gives every record to
// fn (which must not keep it): a file of any size is read in bounded
// memory. The returned Run has the summary and warnings but no Records.
// An error of fn ends the scan and is returned as it is.
func ScanRecords(rd io.Reader, fn func(*record.Request) error) (*Run, error) {
	return ScanRecordLines(rd, func(r *record.Request, _ []byte) error { return fn(r) })
}

// ScanRecordLines is ScanRecords that also gives fn the line each record
// was read from (valid only until fn returns; see record.ScanLines).
func ScanRecordLines(rd io.Reader, fn func(r *record.Request, line []byte) error) (*Run, error) {
	acc := stats.NewAccumulator(stats.Options{Series: true})
	n := 0
	var fnErr error
	err := record.ScanLines(&textOnly{r: rd}, func(rec *record.Request, line []byte) error {
		n++
		if err := checkRecord(n, rec); err != nil {
			return err
		}
		acc.Add(rec)
		if err := fn(rec, line); err != nil {
			fnErr = err
			return err
		}
		return nil
	})
	if fnErr != nil {
		return nil, fnErr
	}
	var warnings []string
	var cut *record.CutLastLineError
	if errors.As(err, &cut) {
		// A writer killed mid-line (kill -9) leaves one: keep the rest.
		warnings = append(warnings, fmt.Sprintf("skipped the last line, %v; imported the %d complete records before it", cut, n))
		err = nil
	}
	if err != nil {
		return nil, fmt.Errorf("knee records.jsonl: %w", err)
	}
	if n == 0 {
		return nil, errors.New("knee records.jsonl: no records")
	}
	return &Run{Format: FormatRecords, Warnings: warnings, Summary: acc.Summary()}, nil
}

// textOnly fails at the first NUL byte: JSON text never holds one, so a
// binary file, or the hole of a sparse file, is refused where it starts
// instead of being read as one endless line.
type textOnly struct {
	r   io.Reader
	off int64
}

func (t *textOnly) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if i := bytes.IndexByte(p[:n], 0); i >= 0 {
		return i, fmt.Errorf("a NUL byte at byte %d: binary data, not JSON text", t.off+int64(i))
	}
	t.off += int64(n)
	return n, err
}

// maxOffset bounds every time in an imported record (a week): absurd values
// are bad input, not a reason to allocate a huge time series.
const maxOffset = 7 * 24 * time.Hour

// checkRecord rejects a record whose times cannot be real; i is its
// 1-based position in the file.
func checkRecord(i int, r *record.Request) error {
	ts := []time.Duration{r.Scheduled, r.Sent, r.FirstToken, r.Done, r.StreamEnd}
	for _, t := range ts {
		if t < 0 || t > maxOffset {
			return fmt.Errorf("record %d (id %d): a time of %v is outside 0..%v", i, r.ID, t, maxOffset)
		}
	}
	for _, t := range r.TokenTimes {
		if t < 0 || t > maxOffset {
			return fmt.Errorf("record %d (id %d): a token time of %v is outside 0..%v", i, r.ID, t, maxOffset)
		}
	}
	if r.InputTokens < 0 || r.OutputTokens < 0 {
		return fmt.Errorf("record %d (id %d): negative token count", i, r.ID)
	}
	return nil
}
