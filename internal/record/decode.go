package record

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// DecodeLine reads one JSONL record into r, exactly as json.Unmarshal into
// a Request does (same records accepted, same values), at several times its
// speed for the lines knee writes: a 2 GiB records.jsonl spent most of
// knee import's time in encoding/json. Lines outside the fast path's subset
// of JSON (escapes in strings, null, keys it does not know, duplicates) are
// read by encoding/json.
func DecodeLine(b []byte, r *Request) error {
	var w wire
	if !fastDecode(b, &w) {
		w = wire{}
		if err := json.Unmarshal(b, &w); err != nil {
			return err
		}
	}
	return w.toRequest(r)
}

// fieldBit numbers the wire fields for the duplicate check.
const (
	fID = iota
	fWarmup
	fScheduled
	fSent
	fFirstToken
	fDone
	fStreamEnd
	fTTFT
	fTTFTSched
	fE2E
	fTPOT
	fLag
	fTokenTimes
	fTokenCounts
	fCoalesced
	fInputTokens
	fOutputTokens
	fTokenSource
	fPromptRequested
	fMaxTokens
	fInFlight
	fSession
	fTurn
	fRetries
	fCached
	fServerQueue
	fServerPrefill
	fServerDecode
	fServerTokenTimes
	fServerWriteTimes
	fHTTPStatus
	fFinishReason
	fError
	fErrorMessage
	fReplica
	fClass
	fItems
)

// fastParser reads the subset of JSON that knee's own lines are made of.
// Any method returning false means "not in the subset": the caller then
// leaves the line to encoding/json, which either reads it or says why not,
// so the subset never accepts what encoding/json would refuse or read
// differently.
type fastParser struct {
	b []byte
	i int
}

func fastDecode(b []byte, w *wire) bool {
	p := fastParser{b: b}
	p.ws()
	if !p.byte('{') {
		return false
	}
	var seen uint64
	p.ws()
	if p.byte('}') {
		return p.end()
	}
	for {
		p.ws()
		key, ok := p.plainString()
		if !ok {
			return false
		}
		p.ws()
		if !p.byte(':') {
			return false
		}
		p.ws()
		bit, ok := p.field(key, w)
		if !ok || seen&(1<<bit) != 0 {
			return false
		}
		seen |= 1 << bit
		p.ws()
		if p.byte(',') {
			continue
		}
		if p.byte('}') {
			return p.end()
		}
		return false
	}
}

// field reads the value of key into w and returns the key's bit.
func (p *fastParser) field(key []byte, w *wire) (int, bool) {
	switch string(key) { // compiled without allocating
	case "id":
		return fID, p.int64(&w.ID)
	case "warmup":
		return fWarmup, p.bool(&w.Warmup)
	case "scheduled_ms":
		return fScheduled, p.float(&w.ScheduledMS)
	case "sent_ms":
		return fSent, p.float(&w.SentMS)
	case "first_token_ms":
		return fFirstToken, p.floatPtr(&w.FirstTokenMS)
	case "done_ms":
		return fDone, p.floatPtr(&w.DoneMS)
	case "stream_end_ms":
		return fStreamEnd, p.float(&w.StreamEndMS)
	case "ttft_ms":
		return fTTFT, p.floatPtr(&w.TTFTMS)
	case "ttft_sched_ms":
		return fTTFTSched, p.floatPtr(&w.TTFTSchedMS)
	case "e2e_ms":
		return fE2E, p.floatPtr(&w.E2EMS)
	case "tpot_ms":
		return fTPOT, p.floatPtr(&w.TPOTMS)
	case "lag_ms":
		return fLag, p.float(&w.LagMS)
	case "token_times_ms":
		return fTokenTimes, p.floats(&w.TokenTimesMS)
	case "token_counts":
		return fTokenCounts, p.int32s(&w.TokenCounts)
	case "coalesced_chunks":
		return fCoalesced, p.int(&w.CoalescedChunks)
	case "input_tokens":
		return fInputTokens, p.int(&w.InputTokens)
	case "output_tokens":
		return fOutputTokens, p.int(&w.OutputTokens)
	case "token_source":
		return fTokenSource, p.string(&w.TokenSource)
	case "prompt_tokens_requested":
		return fPromptRequested, p.int(&w.PromptTokensRequested)
	case "max_tokens":
		return fMaxTokens, p.int(&w.MaxTokens)
	case "in_flight_at_send":
		return fInFlight, p.int(&w.InFlightAtSend)
	case "session_id":
		return fSession, p.string(&w.SessionID)
	case "turn":
		return fTurn, p.int(&w.Turn)
	case "connection_retries":
		return fRetries, p.int(&w.ConnectionRetries)
	case "cached_prompt_tokens":
		return fCached, p.int(&w.CachedPromptTokens)
	case "server_queue_ms":
		return fServerQueue, p.floatPtr(&w.ServerQueueMS)
	case "server_prefill_ms":
		return fServerPrefill, p.floatPtr(&w.ServerPrefillMS)
	case "server_decode_ms":
		return fServerDecode, p.floatPtr(&w.ServerDecodeMS)
	case "server_token_times_ms":
		return fServerTokenTimes, p.floats(&w.ServerTokenTimesMS)
	case "server_write_times_ms":
		return fServerWriteTimes, p.floats(&w.ServerWriteTimesMS)
	case "http_status":
		return fHTTPStatus, p.int(&w.HTTPStatus)
	case "finish_reason":
		return fFinishReason, p.string(&w.FinishReason)
	case "error":
		return fError, p.string(&w.Error)
	case "error_message":
		return fErrorMessage, p.string(&w.ErrorMessage)
	case "replica":
		return fReplica, p.string(&w.Replica)
	case "class":
		return fClass, p.string(&w.Class)
	case "items":
		return fItems, p.int(&w.Items)
	}
	// Unknown keys, and known ones in another case (encoding/json matches
	// those case-insensitively), are encoding/json's.
	return 0, false
}

// ws skips JSON whitespace.
func (p *fastParser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// end: only whitespace may follow the object.
func (p *fastParser) end() bool {
	p.ws()
	return p.i == len(p.b)
}

func (p *fastParser) byte(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// plainString reads a string without escapes or control characters, in
// valid UTF-8 (encoding/json replaces invalid bytes; the fast path does not).
func (p *fastParser) plainString() ([]byte, bool) {
	if !p.byte('"') {
		return nil, false
	}
	start, ascii := p.i, true
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			s := p.b[start:p.i]
			p.i++
			return s, ascii || utf8.Valid(s)
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
		p.i++
	}
	return nil, false
}

func (p *fastParser) string(dst *string) bool {
	s, ok := p.plainString()
	if ok {
		*dst = string(s)
	}
	return ok
}

func (p *fastParser) bool(dst *bool) bool {
	rest := p.b[p.i:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		*dst = true
		p.i += 4
	case len(rest) >= 5 && string(rest[:5]) == "false":
		*dst = false
		p.i += 5
	default:
		return false
	}
	return true
}

// number returns the next JSON number's text, checked against JSON's
// grammar (strconv alone would take "+1", "1.", "0x10", "Inf"), and its
// value as mant × 10^exp10 when every digit fit in mant (exact is false
// when not).
func (p *fastParser) number() (num []byte, integer bool, mant uint64, exp10 int, exact, ok bool) {
	b, i := p.b, p.i
	start := i
	if i < len(b) && b[i] == '-' {
		i++
	}
	exact = true
	digit := func(c byte) {
		if mant > (1<<63)/10 {
			exact = false
			return
		}
		mant = mant*10 + uint64(c-'0')
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			digit(b[i])
			i++
		}
	default:
		return nil, false, 0, 0, false, false
	}
	integer = true
	if i < len(b) && b[i] == '.' {
		integer = false
		i++
		digits := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			digit(b[i])
			exp10--
			i++
		}
		if i == digits {
			return nil, false, 0, 0, false, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		integer, exact = false, false // rare in knee's lines: strconv's
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		digits := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == digits {
			return nil, false, 0, 0, false, false
		}
	}
	p.i = i
	return b[start:i], integer, mant, exp10, exact, true
}

// unsafeString views b as a string for strconv, which does not keep it.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// exactPow10 are the powers of ten a float64 holds exactly.
var exactPow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

func (p *fastParser) float(dst *float64) bool {
	num, _, mant, exp10, exact, ok := p.number()
	if !ok {
		return false
	}
	// mant and 10^-exp10 are both exact float64s, so one IEEE division is
	// the correctly rounded value, as strconv.ParseFloat's: the common
	// "137.7441" costs a division instead of strconv's general path.
	if exact && mant < 1<<52 && exp10 <= 0 && -exp10 < len(exactPow10) {
		v := float64(mant) / exactPow10[-exp10]
		if num[0] == '-' {
			v = -v
		}
		*dst = v
		return true
	}
	v, err := strconv.ParseFloat(unsafeString(num), 64)
	if err != nil { // out of range: encoding/json's error
		return false
	}
	*dst = v
	return true
}

func (p *fastParser) floatPtr(dst **float64) bool {
	var v float64
	if !p.float(&v) {
		return false // null included: encoding/json's
	}
	*dst = &v
	return true
}

func (p *fastParser) int64(dst *int64) bool {
	num, integer, _, _, _, ok := p.number()
	if !ok || !integer {
		return false
	}
	v, err := strconv.ParseInt(unsafeString(num), 10, 64)
	if err != nil {
		return false
	}
	*dst = v
	return true
}

func (p *fastParser) int(dst *int) bool {
	num, integer, _, _, _, ok := p.number()
	if !ok || !integer {
		return false
	}
	v, err := strconv.ParseInt(unsafeString(num), 10, strconv.IntSize)
	if err != nil {
		return false
	}
	*dst = int(v)
	return true
}

// array reads a JSON array, calling elem for each element.
func (p *fastParser) array(elem func() bool) bool {
	if !p.byte('[') {
		return false
	}
	p.ws()
	if p.byte(']') {
		return true
	}
	for {
		p.ws()
		if !elem() {
			return false
		}
		p.ws()
		if p.byte(',') {
			continue
		}
		return p.byte(']')
	}
}

func (p *fastParser) floats(dst *[]float64) bool {
	out := make([]float64, 0, 16)
	ok := p.array(func() bool {
		var v float64
		if !p.float(&v) {
			return false
		}
		out = append(out, v)
		return true
	})
	*dst = out
	return ok
}

func (p *fastParser) int32s(dst *[]int32) bool {
	out := make([]int32, 0, 16)
	ok := p.array(func() bool {
		num, integer, _, _, _, ok := p.number()
		if !ok || !integer {
			return false
		}
		v, err := strconv.ParseInt(unsafeString(num), 10, 32)
		if err != nil {
			return false
		}
		out = append(out, int32(v))
		return true
	})
	*dst = out
	return ok
}
