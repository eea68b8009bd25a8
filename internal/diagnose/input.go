package diagnose

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/knee-dev/knee/internal/record"
)

// Format names an input format.
type Format string

// Input formats Read understands.
const (
	FormatRecords Format = "records" // knee records.jsonl
	FormatPhases  Format = "phases"  // per-request phase times, CSV or JSONL
	FormatVLLM    Format = "vllm"    // vLLM bench serve --save-result JSON
)

// PhaseColumns are the fields of a per-request phase table (CSV header or
// JSONL keys); times in milliseconds. A row needs queue_ms, prefill_ms and
// decode_ms, or ttft_ms.
var PhaseColumns = []string{"id", "sent_ms", "queue_ms", "prefill_ms", "decode_ms", "ttft_ms", "tpot_ms", "itl_ms", "e2e_ms",
	"input_tokens", "output_tokens", "in_flight", "error"}

// What diagnose holds in memory is bounded by the input's size, refused
// past these before memory runs out (a 2 GiB file once ended in the
// runtime's "fatal error: out of memory"). Variables so tests can lower
// them.
var (
	// MaxWholeJSON bounds a vLLM result, parsed whole as one JSON document:
	// a detailed result takes about 9 times its size while it is parsed
	// (a 72 MB file peaked at 620 MB).
	MaxWholeJSON int64 = 96 << 20
	// MaxHeldBytes bounds the records and phase rows diagnose holds (every
	// request is needed at once to relate TTFT to in-flight count and
	// input length): about 3 times the text they were read from (a 45 MB
	// records.jsonl peaked at 120 MB).
	MaxHeldBytes int64 = 256 << 20
)

// TooLargeError says an input is over one of the bounds above, and why.
type TooLargeError struct {
	What  string // "a vLLM result JSON", "knee records.jsonl", ...
	Size  int64  // the file's size, -1 when it was found while reading
	Limit int64
	Why   string
}

func (e *TooLargeError) Error() string {
	size := fmt.Sprintf("more than %s", mib(e.Limit))
	if e.Size >= 0 {
		size = mib(e.Size)
	}
	return fmt.Sprintf("%s of %s: knee diagnose reads at most %s of it, %s; diagnose a part of it (split -l, or knee bench --requests N for a smaller run)",
		e.What, size, mib(e.Limit), e.Why)
}

func mib(n int64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%.0f MiB", math.Ceil(float64(n)/(1<<20)))
}

const (
	wholeWhy = "as it parses it whole, as one JSON document, which takes about 9 times its size in memory"
	heldWhy  = "as it holds every request at once, about 3 times the text in memory"
)

// capped fails a read past limit bytes with a *TooLargeError, before the
// reader behind it is asked for more: an input of unknown size (stdin) is
// refused when it proves too large.
type capped struct {
	r     io.Reader
	n     int64
	limit int64
	what  string
	why   string
}

func (c *capped) Read(p []byte) (int, error) {
	if c.n > c.limit {
		return 0, &TooLargeError{What: c.what, Size: -1, Limit: c.limit, Why: c.why}
	}
	if rest := c.limit + 1 - c.n; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// peekSize is how much of the input format detection may look at.
const peekSize = 4 << 20

// Read detects the format of rd and returns its requests as records. Errors
// name the line (and column) that was wrong.
func Read(rd io.Reader) ([]record.Request, Format, error) { return ReadSized(rd, -1) }

// ReadSized is Read of an input of size bytes (-1: not known, as stdin):
// an input over what its format may hold is refused with a *TooLargeError
// from its size, before it is read, or else as soon as the bound is passed.
func ReadSized(rd io.Reader, size int64) ([]record.Request, Format, error) {
	br := bufio.NewReaderSize(rd, peekSize)
	head, _ := br.Peek(peekSize)
	trim := bytes.TrimLeft(head, " \t\r\n\ufeff")
	if len(trim) == 0 {
		return nil, "", errors.New("empty input: want knee records.jsonl, a CSV/JSONL of per-request phase times (queue_ms,prefill_ms,decode_ms or ttft_ms,...), or a vLLM bench serve result JSON")
	}
	held := func(what string) (io.Reader, error) {
		if size > MaxHeldBytes {
			return nil, &TooLargeError{What: what, Size: size, Limit: MaxHeldBytes, Why: heldWhy}
		}
		return &capped{r: br, limit: MaxHeldBytes, what: what, why: heldWhy}, nil
	}
	if trim[0] != '{' {
		in, err := held("a phase CSV")
		if err != nil {
			return nil, FormatPhases, err
		}
		recs, err := readPhaseCSV(in)
		return recs, FormatPhases, unwrapTooLarge(err)
	}
	// One JSON object spanning several lines, or with "ttfts": vLLM. One
	// object per line: knee records (they have sent_ms) or phase rows.
	firstLine := trim
	if i := bytes.IndexByte(trim, '\n'); i >= 0 {
		firstLine = trim[:i]
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(firstLine, &probe); err != nil {
		// A first line longer than the peek (a knee record with many
		// token times): tell the formats apart by their keys.
		probe = map[string]json.RawMessage{}
		for _, k := range []string{"ttfts", "sent_ms", "scheduled_ms", "duration", "completed"} {
			if bytes.Contains(head, []byte(`"`+k+`"`)) {
				probe[k] = json.RawMessage("0")
			}
		}
		if probe["ttfts"] == nil && (probe["sent_ms"] == nil || probe["scheduled_ms"] == nil) {
			probe["ttfts"] = json.RawMessage("0") // unknown JSON: let the vLLM reader say what is wrong
		}
	}
	if !bytes.Contains(head, []byte(`"ttfts"`)) && bytes.Contains(head, []byte(`"benchmarks"`)) {
		return nil, "", errors.New(guideLLMNote)
	}
	// vLLM's result always has duration and completed; the per-request
	// arrays only with --save-detailed.
	if probe["ttfts"] != nil || (probe["duration"] != nil && probe["completed"] != nil) {
		const what = "a vLLM result JSON"
		if size > MaxWholeJSON {
			return nil, FormatVLLM, &TooLargeError{What: what, Size: size, Limit: MaxWholeJSON, Why: wholeWhy}
		}
		data, err := io.ReadAll(&capped{r: br, limit: MaxWholeJSON, what: what, why: wholeWhy})
		if err != nil {
			return nil, FormatVLLM, err
		}
		recs, err := readVLLM(data)
		return recs, FormatVLLM, err
	}
	if probe["sent_ms"] != nil && probe["scheduled_ms"] != nil {
		in, err := held("a knee records.jsonl")
		if err != nil {
			return nil, FormatRecords, err
		}
		recs, err := record.ReadAll(in)
		return recs, FormatRecords, unwrapTooLarge(err)
	}
	in, err := held("a phase JSONL")
	if err != nil {
		return nil, FormatPhases, err
	}
	recs, err := readPhaseJSONL(in)
	return recs, FormatPhases, unwrapTooLarge(err)
}

// unwrapTooLarge gives the bound's own message without the line it was
// passed on: "line 81234: a knee records.jsonl of …" reads as a fault of
// that line.
func unwrapTooLarge(err error) error {
	var tl *TooLargeError
	if errors.As(err, &tl) {
		return tl
	}
	return err
}

// guideLLMNote says what a GuideLLM benchmarks.json can and cannot give.
const guideLLMNote = "a GuideLLM benchmarks.json: knee reads its benchmarks' aggregate percentiles (TTFT, ITL, latency, throughput per load), " +
	"not per-request times, so it cannot tell queueing from prefill or decode here. It can give: knee import FILE (each benchmark a run, " +
	"for knee report and knee compare) and knee sweep --from FILE (the load curve, its knee and SLO-safe point). For a diagnosis, give " +
	"per-request times: knee bench --out DIR (records.jsonl), a phase CSV/JSONL, or vLLM bench serve --save-result --save-detailed"

// phaseRow is one row of a phase table; nil means absent.
type phaseRow map[string]float64

func (p phaseRow) has(k string) bool { _, ok := p[k]; return ok }

// toRecord builds the record a phase row describes. line is for errors.
func (p phaseRow) toRecord(i int, errKind string, where string) (record.Request, error) {
	if !(p.has("queue_ms") && p.has("prefill_ms") && p.has("decode_ms")) && !p.has("ttft_ms") && errKind == "" {
		return record.Request{}, fmt.Errorf("%s: a row needs queue_ms, prefill_ms and decode_ms, or ttft_ms", where)
	}
	kind := record.ErrorKind(errKind)
	if !kind.Valid() {
		return record.Request{}, fmt.Errorf("%s: error %q is not an error kind (want empty or one of %v)", where, errKind, record.ErrorKinds)
	}
	d := func(k string) time.Duration { return time.Duration(math.Round(p[k] * 1e6)) }
	r := record.Request{ID: int64(i), InputTokens: int(p["input_tokens"]), OutputTokens: int(p["output_tokens"]),
		InFlightAtSend: int(p["in_flight"]), Error: kind}
	if p.has("id") {
		r.ID = int64(p["id"])
	}
	r.Sent = d("sent_ms")
	r.Scheduled = r.Sent
	if p.has("queue_ms") && p.has("prefill_ms") && p.has("decode_ms") {
		r.ServerPhases = &record.Phases{Queue: d("queue_ms"), Prefill: d("prefill_ms"), Decode: d("decode_ms")}
	}
	if kind != record.ErrNone {
		r.Done, r.StreamEnd = r.Sent, r.Sent
		if p.has("e2e_ms") {
			r.StreamEnd = r.Sent + d("e2e_ms")
		}
		return r, nil
	}
	ttft := d("ttft_ms")
	if !p.has("ttft_ms") {
		ttft = r.ServerPhases.Queue + r.ServerPhases.Prefill
	}
	if ttft <= 0 {
		ttft = 1 // a first token at the send instant still counts as arrived
	}
	r.FirstToken = r.Sent + ttft
	switch out := time.Duration(max(r.OutputTokens-1, 0)); {
	case p.has("e2e_ms"):
		r.Done = r.Sent + d("e2e_ms")
	case r.ServerPhases != nil:
		r.Done = r.FirstToken + r.ServerPhases.Decode
	case p.has("tpot_ms"):
		r.Done = r.FirstToken + d("tpot_ms")*out
	case p.has("itl_ms"):
		r.Done = r.FirstToken + d("itl_ms")*out
	default:
		r.Done = r.FirstToken
	}
	if r.Done < r.FirstToken {
		return record.Request{}, fmt.Errorf("%s: e2e_ms is shorter than ttft_ms", where)
	}
	r.StreamEnd = r.Done
	return r, nil
}

func knownPhaseColumn(k string) bool {
	for _, c := range PhaseColumns {
		if c == k {
			return true
		}
	}
	return false
}

func readPhaseCSV(rd io.Reader) ([]record.Request, error) {
	cr := csv.NewReader(rd)
	cr.Comment = '#'
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	header, err := cr.Read()
	if err != nil {
		return nil, csvErr(err)
	}
	hline, _ := cr.FieldPos(0)
	cols := make([]string, len(header))
	seen := map[string]bool{}
	for i, h := range header {
		k := strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))
		if !knownPhaseColumn(k) {
			return nil, fmt.Errorf("line %d, column %d: unknown column %q; want per-request columns with units: %s", hline, i+1, h, strings.Join(PhaseColumns, ","))
		}
		if seen[k] {
			return nil, fmt.Errorf("line %d, column %d: column %q given twice", hline, i+1, k)
		}
		seen[k] = true
		cols[i] = k
	}
	if !(seen["queue_ms"] && seen["prefill_ms"] && seen["decode_ms"]) && !seen["ttft_ms"] {
		return nil, fmt.Errorf("line %d: the header needs queue_ms,prefill_ms,decode_ms or ttft_ms (e.g. queue_ms,prefill_ms,decode_ms,input_tokens,output_tokens)", hline)
	}
	var out []record.Request
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, csvErr(err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != len(cols) {
			return nil, fmt.Errorf("line %d: %d fields, but the header has %d columns", line, len(rec), len(cols))
		}
		row, errKind := phaseRow{}, ""
		for i, cell := range rec {
			cell = strings.TrimSpace(cell)
			if cols[i] == "error" {
				errKind = cell
				continue
			}
			if cell == "" {
				continue
			}
			v, err := strconv.ParseFloat(cell, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > 1e12 {
				return nil, fmt.Errorf("line %d, column %d (%s): %q is not a non-negative number", line, i+1, cols[i], cell)
			}
			row[cols[i]] = v
		}
		r, err := row.toRecord(len(out), errKind, fmt.Sprintf("line %d", line))
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("line %d: a header but no rows: want one line per request", hline)
	}
	return out, nil
}

func readPhaseJSONL(rd io.Reader) ([]record.Request, error) {
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var out []record.Request
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("line %d: not a JSON object: %v", line, err)
		}
		row, errKind := phaseRow{}, ""
		for k, v := range m {
			if !knownPhaseColumn(k) {
				return nil, fmt.Errorf("line %d: unknown field %q; want per-request fields with units: %s", line, k, strings.Join(PhaseColumns, ","))
			}
			if k == "error" {
				if v == nil {
					continue
				}
				s, ok := v.(string)
				if !ok {
					return nil, fmt.Errorf("line %d: field error: want a string error kind", line)
				}
				errKind = s
				continue
			}
			if v == nil {
				continue
			}
			f, ok := v.(float64)
			if !ok || f < 0 || f > 1e12 {
				return nil, fmt.Errorf("line %d: field %s: %v is not a non-negative number", line, k, v)
			}
			row[k] = f
		}
		r, err := row.toRecord(len(out), errKind, fmt.Sprintf("line %d", line))
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", line+1, err)
	}
	if len(out) == 0 {
		return nil, errors.New("no rows")
	}
	return out, nil
}

// vllmResult holds the per-request arrays of vLLM's bench serve result
// JSON (--save-result): seconds for times; errors are "" when a request
// succeeded. start_times is written by some versions only.
type vllmResult struct {
	TTFTs      []float64   `json:"ttfts"`
	ITLs       [][]float64 `json:"itls"`
	InputLens  []int       `json:"input_lens"`
	OutputLens []int       `json:"output_lens"`
	Errors     []string    `json:"errors"`
	StartTimes []float64   `json:"start_times"`
}

func readVLLM(data []byte) ([]record.Request, error) {
	var v vllmResult
	if err := json.Unmarshal(data, &v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line := 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
			return nil, fmt.Errorf("line %d: not valid JSON: %v", line, err)
		}
		return nil, fmt.Errorf("not a vLLM bench serve result: %v", err)
	}
	n := len(v.TTFTs)
	if n == 0 {
		var keys map[string]json.RawMessage
		_ = json.Unmarshal(data, &keys)
		if keys["duration"] != nil && keys["completed"] != nil && keys["ttfts"] == nil {
			return nil, errors.New(`a vLLM bench serve summary (saved without --save-detailed): it holds only aggregates (mean/median/p99 TTFT, TPOT, ITL and throughput), ` +
				`no per-request "ttfts", "itls", "input_lens", "output_lens" or "errors", so there is nothing to judge request by request; ` +
				`rerun vllm bench serve with --save-result --save-detailed, or store the summary with knee import FILE`)
		}
		return nil, errors.New(`no "ttfts" array: want a vLLM bench serve result saved with --save-result --save-detailed (fields ttfts, itls, input_lens, output_lens, errors)`)
	}
	check := func(name string, l int) error {
		if l != 0 && l != n {
			return fmt.Errorf(`field %q has %d entries but "ttfts" has %d`, name, l, n)
		}
		return nil
	}
	for _, c := range []struct {
		name string
		l    int
	}{{"itls", len(v.ITLs)}, {"input_lens", len(v.InputLens)}, {"output_lens", len(v.OutputLens)}, {"errors", len(v.Errors)}, {"start_times", len(v.StartTimes)}} {
		if err := check(c.name, c.l); err != nil {
			return nil, err
		}
	}
	sec := func(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }
	out := make([]record.Request, n)
	t0 := 0.0
	if len(v.StartTimes) > 0 {
		t0 = v.StartTimes[0]
		for _, s := range v.StartTimes {
			t0 = math.Min(t0, s)
		}
	}
	for i := range out {
		r := &out[i]
		r.ID = int64(i)
		if len(v.StartTimes) > 0 {
			r.Sent = sec(v.StartTimes[i] - t0)
			r.Scheduled = r.Sent
		}
		if len(v.InputLens) > 0 {
			r.InputTokens = v.InputLens[i]
		}
		if len(v.OutputLens) > 0 {
			r.OutputTokens = v.OutputLens[i]
		}
		if len(v.Errors) > 0 && v.Errors[i] != "" {
			r.Error, r.ErrorMessage = record.ErrHTTP5xx, v.Errors[i]
			if strings.Contains(v.Errors[i], "429") {
				r.Error = record.ErrRejected
			}
			continue
		}
		ttft := v.TTFTs[i]
		if ttft < 0 || math.IsNaN(ttft) || ttft > 1e7 {
			return nil, fmt.Errorf("ttfts[%d] = %v: want a non-negative number of seconds", i, ttft)
		}
		if ttft == 0 {
			r.Error, r.ErrorMessage = record.ErrStreamBroken, "vLLM result: no first token"
			continue
		}
		r.FirstToken = r.Sent + sec(ttft)
		t := r.FirstToken
		r.TokenTimes = append(r.TokenTimes, t)
		if len(v.ITLs) > 0 {
			for j, g := range v.ITLs[i] {
				if g < 0 || math.IsNaN(g) || g > 1e7 {
					return nil, fmt.Errorf("itls[%d][%d] = %v: want a non-negative number of seconds", i, j, g)
				}
				t += sec(g)
				r.TokenTimes = append(r.TokenTimes, t)
			}
		}
		r.Done, r.StreamEnd = t, t
		if r.OutputTokens == 0 {
			r.OutputTokens = len(r.TokenTimes)
		}
		r.TokenSource = record.TokensFromUsage
	}
	return out, nil
}

func csvErr(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("line %d, column %d: %v", pe.Line, pe.Column, pe.Err)
	}
	if errors.Is(err, io.EOF) {
		return errors.New("empty input: want a header line such as queue_ms,prefill_ms,decode_ms,input_tokens,output_tokens")
	}
	return err
}
