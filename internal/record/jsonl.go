package record

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"time"
)

// wire is the JSONL shape of a Request: stable names, units in the names.
type wire struct {
	ID                    int64     `json:"id"`
	Warmup                bool      `json:"warmup,omitempty"`
	ScheduledMS           float64   `json:"scheduled_ms"`
	SentMS                float64   `json:"sent_ms"`
	FirstTokenMS          *float64  `json:"first_token_ms,omitempty"`
	DoneMS                *float64  `json:"done_ms,omitempty"`
	StreamEndMS           float64   `json:"stream_end_ms"`
	TTFTMS                *float64  `json:"ttft_ms,omitempty"`
	TTFTSchedMS           *float64  `json:"ttft_sched_ms,omitempty"`
	E2EMS                 *float64  `json:"e2e_ms,omitempty"`
	TPOTMS                *float64  `json:"tpot_ms,omitempty"`
	LagMS                 float64   `json:"lag_ms"`
	TokenTimesMS          []float64 `json:"token_times_ms,omitempty"`
	TokenCounts           []int32   `json:"token_counts,omitempty"`
	CoalescedChunks       int       `json:"coalesced_chunks,omitempty"`
	InputTokens           int       `json:"input_tokens"`
	OutputTokens          int       `json:"output_tokens"`
	TokenSource           string    `json:"token_source,omitempty"`
	PromptTokensRequested int       `json:"prompt_tokens_requested,omitempty"`
	MaxTokens             int       `json:"max_tokens,omitempty"`
	InFlightAtSend        int       `json:"in_flight_at_send,omitempty"`
	SessionID             string    `json:"session_id,omitempty"`
	Turn                  int       `json:"turn,omitempty"`
	ConnectionRetries     int       `json:"connection_retries,omitempty"`
	CachedPromptTokens    int       `json:"cached_prompt_tokens,omitempty"`
	ServerQueueMS         *float64  `json:"server_queue_ms,omitempty"`
	ServerPrefillMS       *float64  `json:"server_prefill_ms,omitempty"`
	ServerDecodeMS        *float64  `json:"server_decode_ms,omitempty"`
	ServerTokenTimesMS    []float64 `json:"server_token_times_ms,omitempty"`
	ServerWriteTimesMS    []float64 `json:"server_write_times_ms,omitempty"`
	HTTPStatus            int       `json:"http_status,omitempty"`
	FinishReason          string    `json:"finish_reason,omitempty"`
	Error                 string    `json:"error,omitempty"`
	ErrorMessage          string    `json:"error_message,omitempty"`
	Replica               string    `json:"replica,omitempty"`
	Class                 string    `json:"class,omitempty"`
	Items                 int       `json:"items,omitempty"`
}

// ms converts a duration to milliseconds, rounded to the nanosecond so the
// round trip through JSON is exact.
func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func fromMS(v float64) time.Duration { return time.Duration(math.Round(v * 1e6)) }

func msPtr(d time.Duration) *float64 { v := ms(d); return &v }

func msSlice(ds []time.Duration) []float64 {
	if len(ds) == 0 {
		return nil
	}
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = ms(d)
	}
	return out
}

func durSlice(vs []float64) []time.Duration {
	if len(vs) == 0 {
		return nil
	}
	out := make([]time.Duration, len(vs))
	for i, v := range vs {
		out[i] = fromMS(v)
	}
	return out
}

// MarshalJSON writes the record's stable JSONL shape, derived metrics included.
func (r Request) MarshalJSON() ([]byte, error) {
	w := wire{
		ID: r.ID, Warmup: r.Warmup,
		ScheduledMS: ms(r.Scheduled), SentMS: ms(r.Sent), StreamEndMS: ms(r.StreamEnd),
		LagMS:        ms(r.Lag()),
		TokenTimesMS: msSlice(r.TokenTimes), TokenCounts: r.TokenCounts, CoalescedChunks: r.CoalescedChunks,
		InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, TokenSource: string(r.TokenSource),
		PromptTokensRequested: r.PromptTokensRequested, MaxTokens: r.MaxTokens, InFlightAtSend: r.InFlightAtSend,
		SessionID: r.Session, Turn: r.Turn,
		ConnectionRetries: r.ConnectionRetries, CachedPromptTokens: r.CachedPromptTokens,
		ServerTokenTimesMS: msSlice(r.ServerTokenTimes), ServerWriteTimesMS: msSlice(r.ServerWriteTimes),
		HTTPStatus: r.HTTPStatus, FinishReason: r.FinishReason,
		Error: string(r.Error), ErrorMessage: r.ErrorMessage, Replica: r.Replica, Class: r.Class,
		Items: r.Items,
	}
	if r.HasFirstToken() {
		w.FirstTokenMS, w.DoneMS = msPtr(r.FirstToken), msPtr(r.Done)
		ttft, _ := r.TTFT()
		sched, _ := r.TTFTSched()
		e2e, _ := r.E2E()
		w.TTFTMS, w.TTFTSchedMS, w.E2EMS = msPtr(ttft), msPtr(sched), msPtr(e2e)
		if tpot, ok := r.TPOT(); ok {
			w.TPOTMS = msPtr(tpot)
		}
	} else if e2e, ok := r.E2E(); ok {
		w.DoneMS, w.E2EMS = msPtr(r.Done), msPtr(e2e)
	}
	if p := r.ServerPhases; p != nil {
		w.ServerPrefillMS, w.ServerDecodeMS = msPtr(p.Prefill), msPtr(p.Decode)
		if !p.QueueUnknown {
			w.ServerQueueMS = msPtr(p.Queue)
		}
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads the JSONL shape. Derived fields are recomputed, not read.
func (r *Request) UnmarshalJSON(b []byte) error { return DecodeLine(b, r) }

// toRequest sets r from the wire shape, checking the error kind.
func (w *wire) toRequest(r *Request) error {
	kind := ErrorKind(w.Error)
	if !kind.Valid() {
		return fmt.Errorf("unknown error kind %q (want one of %v)", w.Error, ErrorKinds)
	}
	*r = Request{
		ID: w.ID, Warmup: w.Warmup,
		Scheduled: fromMS(w.ScheduledMS), Sent: fromMS(w.SentMS), StreamEnd: fromMS(w.StreamEndMS),
		TokenTimes: durSlice(w.TokenTimesMS), TokenCounts: w.TokenCounts, CoalescedChunks: w.CoalescedChunks,
		InputTokens: w.InputTokens, OutputTokens: w.OutputTokens, TokenSource: TokenSource(w.TokenSource),
		PromptTokensRequested: w.PromptTokensRequested, MaxTokens: w.MaxTokens, InFlightAtSend: w.InFlightAtSend,
		Session: w.SessionID, Turn: w.Turn,
		ConnectionRetries: w.ConnectionRetries, CachedPromptTokens: w.CachedPromptTokens,
		ServerTokenTimes: durSlice(w.ServerTokenTimesMS), ServerWriteTimes: durSlice(w.ServerWriteTimesMS),
		HTTPStatus: w.HTTPStatus, FinishReason: w.FinishReason,
		Error: kind, ErrorMessage: w.ErrorMessage, Replica: w.Replica, Class: w.Class,
		Items: w.Items,
	}
	if w.FirstTokenMS != nil {
		r.FirstToken = fromMS(*w.FirstTokenMS)
	}
	if w.DoneMS != nil {
		r.Done = fromMS(*w.DoneMS)
	}
	if w.ServerQueueMS != nil || w.ServerPrefillMS != nil || w.ServerDecodeMS != nil {
		p := &Phases{QueueUnknown: w.ServerQueueMS == nil}
		if w.ServerQueueMS != nil {
			p.Queue = fromMS(*w.ServerQueueMS)
		}
		if w.ServerPrefillMS != nil {
			p.Prefill = fromMS(*w.ServerPrefillMS)
		}
		if w.ServerDecodeMS != nil {
			p.Decode = fromMS(*w.ServerDecodeMS)
		}
		r.ServerPhases = p
	}
	return nil
}

// Writer streams records as JSONL.
type Writer struct {
	bw  *bufio.Writer
	enc *json.Encoder
}

// NewWriter returns a JSONL writer on w. Call Flush when done.
func NewWriter(w io.Writer) *Writer {
	bw := bufio.NewWriterSize(w, 64<<10)
	return &Writer{bw: bw, enc: json.NewEncoder(bw)}
}

// Write appends one record as a line.
func (w *Writer) Write(r *Request) error { return w.enc.Encode(r) }

// WriteLine appends line, one record's JSON as ScanLines gave it, and a
// line break.
func (w *Writer) WriteLine(line []byte) error {
	if _, err := w.bw.Write(line); err != nil {
		return err
	}
	return w.bw.WriteByte('\n')
}

// Flush writes buffered lines through.
func (w *Writer) Flush() error { return w.bw.Flush() }

// MaxLineBytes bounds one JSONL line: far above any record knee writes
// (token times are capped), small enough that a file without line breaks
// cannot take the machine's memory.
const MaxLineBytes = 256 << 20

// CutLastLineError: the input ends in a line that has no line break and
// is not complete JSON, as a writer killed mid-line leaves it. Every record before
// it was read; callers may go on with them and warn.
type CutLastLineError struct {
	Line  int // 1-based
	Bytes int // length of the cut line
	Err   error
}

func (e *CutLastLineError) Error() string {
	return fmt.Sprintf("line %d: cut short (%d bytes, no line break: the writer was stopped mid-line?): %v", e.Line, e.Bytes, e.Err)
}

func (e *CutLastLineError) Unwrap() error { return e.Err }

// ReadAll reads JSONL records; an error names the line that failed. With a
// *CutLastLineError the records before the cut line are returned too.
func ReadAll(rd io.Reader) ([]Request, error) {
	var out []Request
	err := Scan(rd, func(r *Request) error { out = append(out, *r); return nil })
	return out, err
}

// Scan calls fn for every record in rd, in order, without holding them all.
// A last line cut short ends it with a *CutLastLineError after every
// complete record was given to fn.
func Scan(rd io.Reader, fn func(*Request) error) error {
	return ScanLines(rd, func(r *Request, _ []byte) error { return fn(r) })
}

// ScanLines is Scan that also gives fn the line each record was read from,
// without its line break and surrounding blanks (valid only until fn
// returns): a store can keep the line as it is instead of encoding the
// record again.
func ScanLines(rd io.Reader, fn func(r *Request, line []byte) error) error {
	lines := NewLineReader(rd, MaxLineBytes)
	for {
		b, terminated, err := lines.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("line %d: %w", lines.Line(), err)
		}
		read := len(b)
		b = trimSpace(b)
		if len(b) == 0 {
			continue
		}
		var r Request
		if err := DecodeLine(b, &r); err != nil {
			if !terminated && !json.Valid(b) {
				return &CutLastLineError{Line: lines.Line(), Bytes: read, Err: err}
			}
			return fmt.Errorf("line %d: not a knee record: %w", lines.Line(), err)
		}
		if err := fn(&r, b); err != nil {
			return err
		}
	}
}

// LineReader reads lines of any length up to a bound, unlike
// bufio.Scanner, whose default token limit is 64 KiB.
type LineReader struct {
	br   *bufio.Reader
	max  int
	line int
	buf  []byte
}

// NewLineReader reads lines from rd of at most max bytes each.
func NewLineReader(rd io.Reader, max int) *LineReader {
	return &LineReader{br: bufio.NewReaderSize(rd, 64<<10), max: max}
}

// Line is the 1-based number of the line Next returned last.
func (l *LineReader) Line() int { return l.line }

// Next returns the next line without its line break (valid until the next
// call) and whether a line break ended it (false for a last line without
// one). It returns io.EOF after the last line, and an error naming the bound
// when a line is longer than max.
func (l *LineReader) Next() (line []byte, terminated bool, err error) {
	l.buf = l.buf[:0]
	for {
		chunk, err := l.br.ReadSlice('\n')
		if len(l.buf)+len(chunk) > l.max+1 {
			l.line++
			return nil, false, fmt.Errorf("a line longer than %d MiB (the bound on one line)", l.max>>20)
		}
		if need := len(l.buf) + len(chunk); need > cap(l.buf) {
			// Double, but never past the bound: a line at the bound costs
			// the bound and the half before it, not append's overshoot and
			// its trail of larger copies (a 64 MiB bound once peaked at 255 MB).
			grown := make([]byte, len(l.buf), min(max(2*cap(l.buf), need), l.max+1))
			copy(grown, l.buf)
			l.buf = grown
		}
		l.buf = append(l.buf, chunk...)
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF:
			if len(l.buf) == 0 {
				return nil, false, io.EOF
			}
			l.line++
			return l.buf, false, nil
		case err != nil:
			l.line++
			return nil, false, err
		}
		l.line++
		return l.buf[:len(l.buf)-1], true, nil
	}
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
