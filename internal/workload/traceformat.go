package workload

import (
	"bufio"
	"bytes"
	"container/heap"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/knee-dev/knee/internal/record"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// Trace formats. Each reader yields rows in file order with the line they
// came from, so every error names its line.
const (
	TraceMooncake = "mooncake" // JSONL: timestamp (ms), input_length, output_length, hash_ids
	TraceAzure    = "azure"    // CSV: TIMESTAMP (datetime), ContextTokens, GeneratedTokens
	TraceBurstGPT = "burstgpt" // CSV: Timestamp (s), Model, Request tokens, Response tokens, Total tokens, Log Type
	TraceJSONL    = "jsonl"    // generic JSONL (knee's records.jsonl among them)
	TraceCSV      = "csv"      // generic CSV with a header
)

// TraceFormats lists the formats --trace-format accepts.
var TraceFormats = []string{TraceMooncake, TraceAzure, TraceBurstGPT, TraceJSONL, TraceCSV}

// MooncakeBlockTokens is the size of the prompt blocks Mooncake's hash_ids
// name (FAST'25 release traces).
const MooncakeBlockTokens = 512

// traceRow is one request of a trace as read.
type traceRow struct {
	line    int
	at      int64 // trace time in ns, on the format's own origin
	in, out int
	hashIDs []int64
	prompt  string
	session string
}

type rowReader interface {
	next() (traceRow, error) // io.EOF at the end
}

// maxTraceLine bounds one line of a trace file: a generic JSONL row may
// carry its prompt, but no row is tens of MiB, and a file without line
// breaks must not be read whole.
const maxTraceLine = 64 << 20

// maxQuoted bounds how much of a file an error message quotes.
const maxQuoted = 200

// quoteCapped quotes at most maxQuoted bytes of s.
func quoteCapped(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	return strconv.Quote(strings.ToValidUTF8(s[:maxQuoted], "")) + fmt.Sprintf("… (%d bytes in all)", len(s))
}

// lineBound fails a read once a line runs past max bytes, so a parser
// that has no line limit of its own (encoding/csv) cannot buffer a file
// without line breaks.
type lineBound struct {
	r       io.Reader
	max     int
	current int // bytes since the last line break
}

func (l *lineBound) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if i := bytes.LastIndexByte(p[:n], '\n'); i >= 0 {
		l.current = n - i - 1
	} else {
		l.current += n
	}
	if l.current > l.max {
		return n, fmt.Errorf("a line longer than %d MiB (the bound on one trace line)", l.max>>20)
	}
	return n, err
}

// oneDocumentHead is how much of a file is looked at to tell a one-line
// JSON document (a benchmark's result) from a long trace row.
const oneDocumentHead = 1 << 20

// resultKeys are top-level keys of vLLM's `bench serve` result, which knee
// reads with `knee import` and `--from`, never as a trace.
var resultKeys = map[string]bool{"ttfts": true, "itls": true, "input_lens": true, "output_lens": true, "e2els": true, "generated_texts": true}

// refuseOneDocument refuses, before any line is read whole, a file whose
// first line is one JSON document rather than a trace row: it starts with
// '{', has no line break in its first MiB, and holds a benchmark result's
// key or a top-level array still open at that point. Reading such a line
// to the 64 MiB row bound would hold hundreds of MB for a file that was
// never a trace; a long row carrying a prompt (a string) is still read.
func refuseOneDocument(path string, br *bufio.Reader) error {
	head, _ := br.Peek(oneDocumentHead)
	head = bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\xef\xbb\xbf")), " \t\r\n")
	if len(head) == 0 || head[0] != '{' || len(head) < oneDocumentHead-8 || bytes.IndexByte(head, '\n') >= 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(head))
	depth := 0
	wantKey := false
	key := ""
	for {
		tok, err := dec.Token()
		if err != nil {
			// The head ended inside the document: an array open at the
			// top level this long is a result's list, not a row's field.
			if depth >= 2 && key != "" {
				return oneDocumentError(path, key)
			}
			return nil
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				depth++
				if depth == 2 && v == '[' && resultKeys[key] {
					return oneDocumentError(path, key)
				}
			default:
				depth--
			}
			wantKey = depth == 1
			continue
		case string:
			if depth == 1 && wantKey {
				key = v
				if resultKeys[key] {
					return oneDocumentError(path, key)
				}
				wantKey = false
				continue
			}
		}
		wantKey = depth == 1
	}
}

func oneDocumentError(path, key string) error {
	return fmt.Errorf("%s is one JSON document (its first line runs past %d MiB and holds %s), not a trace of one request a line: "+
		"a benchmark's result is read with `knee import %s` or `--from %s`; a trace is JSONL, Mooncake, Azure, BurstGPT or CSV",
		path, oneDocumentHead>>20, quoteCapped(key), path, path)
}

// lineError names a trace line in an error.
func lineError(path string, line int, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", path, line, fmt.Sprintf(format, args...))
}

// detectTraceFormat names the format from the first non-empty line.
func detectTraceFormat(path string, first []byte) (string, error) {
	first = bytes.TrimSpace(bytes.TrimPrefix(first, []byte("\xef\xbb\xbf")))
	if len(first) == 0 {
		return "", fmt.Errorf("%s: empty trace", path)
	}
	if first[0] == '{' {
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(first, &keys); err != nil {
			return "", lineError(path, 1, "not a JSON object: %v", err)
		}
		if _, ok := keys["hash_ids"]; ok {
			return TraceMooncake, nil
		}
		if _, ok := keys["input_length"]; ok {
			return TraceMooncake, nil
		}
		return TraceJSONL, nil
	}
	header := string(first)
	switch {
	case strings.Contains(header, "ContextTokens"):
		return TraceAzure, nil
	case strings.Contains(header, "Request tokens"):
		return TraceBurstGPT, nil
	}
	return TraceCSV, nil
}

// ---- JSONL (Mooncake and generic) ----

type jsonlReader struct {
	path     string
	lines    *record.LineReader
	line     int
	mooncake bool
}

func newJSONLReader(path string, r io.Reader, mooncake bool) *jsonlReader {
	return &jsonlReader{path: path, lines: record.NewLineReader(r, maxTraceLine), mooncake: mooncake}
}

// jsonRow has every field a JSONL trace row may carry: Mooncake's names,
// the generic names, and knee's records.jsonl names (so a run's records
// replay as a trace).
type jsonRow struct {
	Timestamp    *float64 `json:"timestamp"` // Mooncake: ms
	InputLength  *int     `json:"input_length"`
	OutputLength *int     `json:"output_length"`
	HashIDs      []int64  `json:"hash_ids"`

	ArrivalMS   *float64 `json:"arrival_ms"`
	TimestampMS *float64 `json:"timestamp_ms"`
	ScheduledMS *float64 `json:"scheduled_ms"` // knee records
	ArrivalS    *float64 `json:"arrival_s"`
	TimestampS  *float64 `json:"timestamp_s"`

	InputTokens           *int `json:"input_tokens"`
	PromptTokens          *int `json:"prompt_tokens"`
	PromptTokensRequested *int `json:"prompt_tokens_requested"`
	OutputTokens          *int `json:"output_tokens"`
	CompletionTokens      *int `json:"completion_tokens"`
	MaxTokens             *int `json:"max_tokens"`

	Prompt    *string         `json:"prompt"`
	SessionID json.RawMessage `json:"session_id"`
}

const genericTimeFields = "arrival_ms, timestamp_ms, scheduled_ms, arrival_s or timestamp_s"

func (r *jsonlReader) next() (traceRow, error) {
	for {
		raw, _, err := r.lines.Next()
		if err == io.EOF {
			return traceRow{}, io.EOF
		}
		r.line++
		if err != nil {
			return traceRow{}, lineError(r.path, r.line, "%v", err)
		}
		b := bytes.TrimSpace(raw)
		if len(b) == 0 {
			continue
		}
		var j jsonRow
		if err := json.Unmarshal(b, &j); err != nil {
			return traceRow{}, lineError(r.path, r.line, "not a JSON object of a trace row: %v", err)
		}
		if r.mooncake {
			return r.mooncakeRow(&j)
		}
		return r.genericRow(&j)
	}
}

func (r *jsonlReader) mooncakeRow(j *jsonRow) (traceRow, error) {
	switch {
	case j.Timestamp == nil:
		return traceRow{}, lineError(r.path, r.line, `missing "timestamp" (ms from the trace start)`)
	case j.InputLength == nil:
		return traceRow{}, lineError(r.path, r.line, `missing "input_length"`)
	case j.OutputLength == nil:
		return traceRow{}, lineError(r.path, r.line, `missing "output_length"`)
	}
	row := traceRow{line: r.line, in: *j.InputLength, out: *j.OutputLength, hashIDs: j.HashIDs}
	at, err := msToNS(*j.Timestamp)
	if err != nil {
		return traceRow{}, lineError(r.path, r.line, `"timestamp" %v: %v`, *j.Timestamp, err)
	}
	row.at = at
	if want := (row.in + MooncakeBlockTokens - 1) / MooncakeBlockTokens; len(row.hashIDs) > want && row.in > 0 {
		return traceRow{}, lineError(r.path, r.line, "%d hash_ids for %d input tokens (want at most %d blocks of %d)", len(row.hashIDs), row.in, want, MooncakeBlockTokens)
	}
	return row, nil
}

func (r *jsonlReader) genericRow(j *jsonRow) (traceRow, error) {
	row := traceRow{line: r.line}
	var t *float64
	unit := 1e6 // ms → ns
	for _, c := range []struct {
		v *float64
		s bool
	}{{j.ArrivalMS, false}, {j.TimestampMS, false}, {j.ScheduledMS, false}, {j.ArrivalS, true}, {j.TimestampS, true}} {
		if c.v != nil {
			t = c.v
			if c.s {
				unit = 1e9
			}
			break
		}
	}
	if t == nil {
		return traceRow{}, lineError(r.path, r.line, "missing the arrival time (one of %s)", genericTimeFields)
	}
	at, err := scaledNS(*t, unit)
	if err != nil {
		return traceRow{}, lineError(r.path, r.line, "arrival time %v: %v", *t, err)
	}
	row.at = at
	row.in = firstPositive(j.InputTokens, j.PromptTokens, j.PromptTokensRequested)
	row.out = firstPositive(j.OutputTokens, j.CompletionTokens, j.MaxTokens)
	if j.Prompt != nil {
		row.prompt = *j.Prompt
	}
	if row.in < 0 || (row.in == 0 && row.prompt == "" && j.InputTokens == nil && j.PromptTokens == nil && j.PromptTokensRequested == nil) {
		return traceRow{}, lineError(r.path, r.line, "missing the input length (input_tokens or prompt_tokens) and no prompt text")
	}
	if j.OutputTokens == nil && j.CompletionTokens == nil && j.MaxTokens == nil {
		return traceRow{}, lineError(r.path, r.line, "missing the output length (output_tokens, completion_tokens or max_tokens)")
	}
	row.hashIDs = j.HashIDs
	if s := bytes.TrimSpace(j.SessionID); len(s) > 0 && string(s) != "null" {
		var str string
		if json.Unmarshal(s, &str) == nil {
			row.session = str
		} else {
			row.session = string(s) // a number
		}
	}
	return row, nil
}

// firstPositive is the first value above 0, else the first given, else 0:
// records of failed requests carry output_tokens 0 and max_tokens > 0.
func firstPositive(vs ...*int) int {
	for _, v := range vs {
		if v != nil && *v > 0 {
			return *v
		}
	}
	for _, v := range vs {
		if v != nil {
			return *v
		}
	}
	return 0
}

func msToNS(ms float64) (int64, error) { return scaledNS(ms, 1e6) }

func scaledNS(v, unit float64) (int64, error) {
	ns := v * unit
	if math.IsNaN(ns) || ns < 0 || ns > math.MaxInt64/2 {
		return 0, errors.New("want a non-negative time")
	}
	return int64(ns), nil
}

// ---- CSV (Azure, BurstGPT, generic) ----

type csvReader struct {
	path   string
	format string
	cr     *csv.Reader
	time   int // column indices; -1 = absent
	in     int
	out    int
	prompt int
	sess   int
	timeS  bool // the time column is in seconds (else ms; Azure is a datetime)
}

func newCSVReader(path, format string, r io.Reader) (*csvReader, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: reading the CSV header: %w", path, err)
	}
	col := map[string]int{}
	for i, h := range header {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		col[h] = i
		col[strings.ToLower(h)] = i
	}
	find := func(names ...string) int {
		for _, n := range names {
			if i, ok := col[n]; ok {
				return i
			}
		}
		return -1
	}
	c := &csvReader{path: path, format: format, cr: cr}
	var want string
	switch format {
	case TraceAzure:
		c.time, c.in, c.out = find("TIMESTAMP"), find("ContextTokens"), find("GeneratedTokens")
		want = "TIMESTAMP, ContextTokens, GeneratedTokens"
	case TraceBurstGPT:
		c.time, c.in, c.out, c.timeS = find("Timestamp"), find("Request tokens"), find("Response tokens"), true
		c.sess = find("Session ID")
		want = "Timestamp, Request tokens, Response tokens (BurstGPT)"
	default:
		c.time = find("arrival_ms", "timestamp_ms", "scheduled_ms")
		if c.time < 0 {
			c.time, c.timeS = find("arrival_s", "timestamp_s"), true
		}
		c.in = find("input_tokens", "prompt_tokens")
		c.out = find("output_tokens", "completion_tokens", "max_tokens")
		c.prompt = find("prompt")
		c.sess = find("session_id")
		want = "an arrival time (" + genericTimeFields + "), input_tokens (or prompt_tokens) and output_tokens (or completion_tokens, max_tokens)"
	}
	if format != TraceCSV {
		c.prompt = -1
		if format == TraceAzure {
			c.sess = -1
		}
	}
	if c.time < 0 || c.in < 0 || c.out < 0 {
		return nil, fmt.Errorf("%s:1: %s trace header %s lacks columns: want %s", path, format, quoteCapped(strings.Join(header, ",")), want)
	}
	return c, nil
}

// azureLayouts are the TIMESTAMP forms of the Azure LLM inference traces
// (2023: 7 fractional digits; 2024: with a UTC offset).
var azureLayouts = []string{"2006-01-02 15:04:05.999999999", "2006-01-02 15:04:05.999999999-07:00", time.RFC3339Nano}

func (c *csvReader) next() (traceRow, error) {
	rec, err := c.cr.Read()
	if err == io.EOF {
		return traceRow{}, io.EOF
	}
	if err != nil {
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			return traceRow{}, lineError(c.path, pe.Line, "%v", pe.Err)
		}
		return traceRow{}, fmt.Errorf("%s: %w", c.path, err)
	}
	line, _ := c.cr.FieldPos(0)
	row := traceRow{line: line}
	field := func(i int) string { return strings.TrimSpace(rec[i]) }
	ts := field(c.time)
	if c.format == TraceAzure {
		var t time.Time
		var perr error
		for _, l := range azureLayouts {
			if t, perr = time.Parse(l, ts); perr == nil {
				break
			}
		}
		if perr != nil {
			return traceRow{}, lineError(c.path, line, "TIMESTAMP %q: want a datetime such as 2023-11-16 18:17:03.9799600", ts)
		}
		row.at = t.UnixNano()
	} else {
		v, perr := strconv.ParseFloat(ts, 64)
		unit := 1e6
		if c.timeS {
			unit = 1e9
		}
		if perr == nil {
			row.at, perr = scaledNS(v, unit)
		}
		if perr != nil {
			return traceRow{}, lineError(c.path, line, "arrival time %q: want a non-negative number", ts)
		}
	}
	for _, f := range []struct {
		i   int
		dst *int
	}{{c.in, &row.in}, {c.out, &row.out}} {
		s := field(f.i)
		n, perr := strconv.ParseFloat(s, 64) // some exports write 512.0
		if perr != nil || n != math.Trunc(n) || math.Abs(n) > MaxLengthTokens {
			return traceRow{}, lineError(c.path, line, "token count %q: want a whole number", s)
		}
		*f.dst = int(n)
	}
	if c.prompt >= 0 {
		row.prompt = rec[c.prompt]
	}
	if c.sess >= 0 {
		row.session = field(c.sess)
	}
	return row, nil
}

// ---- ordering ----

// sortedReader checks that rows come in time order. Production formats must
// be sorted; generic files may be out of order by up to window rows (a
// run's records.jsonl is written in completion order) and are put back in
// order through a bounded heap.
type sortedReader struct {
	path   string
	rd     rowReader
	window int
	h      rowHeap
	last   traceRow
	first  int64 // the first row's time, for messages
	seen   bool
	eof    bool
}

type rowHeap []traceRow

func (h rowHeap) Len() int { return len(h) }
func (h rowHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].line < h[j].line
}
func (h rowHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *rowHeap) Push(x any)   { *h = append(*h, x.(traceRow)) }
func (h *rowHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (s *sortedReader) next() (traceRow, error) {
	for !s.eof && len(s.h) <= s.window {
		row, err := s.rd.next()
		if err == io.EOF {
			s.eof = true
			break
		}
		if err != nil {
			return traceRow{}, err
		}
		heap.Push(&s.h, row)
	}
	if len(s.h) == 0 {
		return traceRow{}, io.EOF
	}
	row := heap.Pop(&s.h).(traceRow)
	if s.seen && row.at < s.last.at {
		what := "the trace must be sorted by arrival time"
		if s.window > 0 {
			what = fmt.Sprintf("rows may be out of order by at most %d rows", s.window)
		}
		return traceRow{}, lineError(s.path, row.line, "arrival time %v is before line %d's %v: %s",
			time.Duration(row.at-s.first), s.last.line, time.Duration(s.last.at-s.first), what)
	}
	if !s.seen {
		s.first = row.at
	}
	s.last, s.seen = row, true
	return row, nil
}
