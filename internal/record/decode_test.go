package record

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fullRecord sets every field the JSONL shape has.
func fullRecord() Request {
	r := sample()
	r.Warmup = true
	r.CoalescedChunks = 2
	r.PromptTokensRequested, r.MaxTokens, r.InFlightAtSend = 500, 64, 9
	r.Session, r.Turn, r.ConnectionRetries, r.CachedPromptTokens = "s-1 é", 3, 1, 128
	r.ServerTokenTimes = []time.Duration{1 * ms1, 2 * ms1}
	r.ServerWriteTimes = []time.Duration{1*ms1 + 7, 2*ms1 + 9}
	r.Error, r.ErrorMessage, r.Replica, r.Class, r.Items = ErrHTTP5xx, "boom", "r2", "chat", 4
	return r
}

// decodeCases are lines the fast path must read as encoding/json does, or
// leave to it: each is checked both ways in TestDecodeLineMatchesEncodingJSON
// and seeds FuzzDecodeLine.
var decodeCases = []string{
	`{}`,
	` { "id" : 1 , "sent_ms" : 2.5 } `,
	`{"id":1,"sent_ms":1e3,"scheduled_ms":-0,"token_times_ms":[],"token_counts":[]}`,
	`{"id":1,"token_times_ms":[ 1.5 , 2E-3,3e+2 ],"token_counts":[1,2,2147483647]}`,
	`{"id":1,"token_counts":[2147483648]}`,           // overflows int32: an error
	`{"id":1.5}`,                                     // not an integer: an error
	`{"id":9223372036854775808}`,                     // overflows int64: an error
	`{"id":1,"sent_ms":1e999}`,                       // out of range: an error
	`{"id":1,"sent_ms":+1}`, `{"id":1,"sent_ms":01}`, // not JSON numbers
	`{"id":1,"sent_ms":1.}`, `{"id":1,"sent_ms":.5}`, // not JSON numbers
	`{"id":1,"sent_ms":Infinity}`, `{"id":1,"sent_ms":0x10}`, // not JSON numbers
	`{"id":1,"first_token_ms":null,"done_ms":3}`, // null: encoding/json's
	`{"id":1,"ID":2}`, // case-insensitive duplicate
	`{"id":1,"id":2}`, // duplicate: the last wins
	`{"Sent_MS":4}`,   // case-insensitive match
	`{"id":1,"unknown":{"a":[1,"x"]},"sent_ms":3}`,           // unknown fields are skipped
	`{"id":1,"error_message":"a \"quoted\" \u00e9 \n line"}`, // escapes
	"{\"id\":1,\"error_message\":\"bad \xff byte\"}",         // invalid UTF-8: replaced
	"{\"id\":1,\"error_message\":\"raw \x01 control\"}",      // not JSON
	`{"id":1,"error":"nonsense"}`,                            // unknown error kind
	`{"id":1,"warmup":true,"items":3}`, `{"id":1,"warmup":false}`, `{"id":1,"warmup":tru}`,
	`{"id":1} x`, `{"id":1}}`, `{"id":1,}`, `{"id":1`, `[1]`, `"x"`, ``, `{"id":1 "sent_ms":2}`,
	`{"id":1,"token_times_ms":[1,]}`, `{"id":1,"token_times_ms":[1 2]}`, `{"id":1,"token_times_ms":[1`,
	`{"id":1,"server_queue_ms":1,"server_prefill_ms":2,"server_decode_ms":3}`,
	`{"id":1,"server_prefill_ms":2,"server_decode_ms":3}`,
}

func TestDecodeLineMatchesEncodingJSON(t *testing.T) {
	for _, r := range []Request{sample(), fullRecord(), {ID: 3, Sent: 5 * ms1, Error: ErrConnect, ErrorMessage: "dial"}} {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var w wire
		if !fastDecode(b, &w) {
			t.Errorf("the fast path does not take knee's own line %s", b)
		}
		var got Request
		if err := DecodeLine(b, &got); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(r, got); d != "" {
			t.Errorf("round trip of %s (-want +got):\n%s", b, d)
		}
		checkSameAsEncodingJSON(t, b)
	}
	for _, c := range decodeCases {
		checkSameAsEncodingJSON(t, []byte(c))
	}
	// The fast path takes some of the cases above itself: it is the path
	// being compared, not encoding/json twice.
	var w wire
	if !fastDecode([]byte(decodeCases[3]), &w) || fastDecode([]byte(decodeCases[4]), &w) {
		t.Errorf("the fast path should take %s and leave %s", decodeCases[3], decodeCases[4])
	}
}

// checkSameAsEncodingJSON: what the fast path reads, encoding/json reads
// the same; and DecodeLine accepts exactly what json.Unmarshal does.
func checkSameAsEncodingJSON(t *testing.T, b []byte) {
	t.Helper()
	var fast, slow wire
	ok := fastDecode(b, &fast)
	err := json.Unmarshal(b, &slow)
	if ok {
		if err != nil {
			t.Errorf("%q: the fast path read it, encoding/json says %v", b, err)
		} else if d := cmp.Diff(slow, fast); d != "" {
			t.Errorf("%q: the fast path read it differently (-encoding/json +fast):\n%s", b, d)
		}
	}
	var viaLine, viaJSON Request
	lineErr := DecodeLine(b, &viaLine)
	jsonErr := unmarshalSlow(b, &viaJSON)
	if (lineErr == nil) != (jsonErr == nil) {
		t.Errorf("%q: DecodeLine error %v, encoding/json error %v", b, lineErr, jsonErr)
	} else if lineErr == nil {
		if d := cmp.Diff(viaJSON, viaLine); d != "" {
			t.Errorf("%q: DecodeLine read it differently (-encoding/json +DecodeLine):\n%s", b, d)
		}
	} else if lineErr.Error() != jsonErr.Error() {
		t.Errorf("%q: DecodeLine says %q, encoding/json %q", b, lineErr, jsonErr)
	}
}

// unmarshalSlow is how a line was read before the fast path: encoding/json
// over the whole line, then into the wire shape.
func unmarshalSlow(b []byte, r *Request) error {
	if !json.Valid(b) {
		var v any
		return json.Unmarshal(b, &v)
	}
	var w wire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	return w.toRequest(r)
}

func FuzzDecodeLine(f *testing.F) {
	for _, c := range decodeCases {
		f.Add([]byte(c))
	}
	for _, r := range []Request{sample(), fullRecord()} {
		b, _ := json.Marshal(r)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkSameAsEncodingJSON(t, b) })
}

// BenchmarkDecodeLine is the cost of reading one line of a real bench's
// shape (128 token times) through the fast path.
func BenchmarkDecodeLine(b *testing.B) {
	r := sample()
	r.TokenTimes = nil
	for k := range 128 {
		r.TokenTimes = append(r.TokenTimes, 305*ms1+time.Duration(k)*7_912_345)
	}
	r.TokenCounts = nil
	line, _ := json.Marshal(r)
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for range b.N {
		var got Request
		if err := DecodeLine(line, &got); err != nil {
			b.Fatal(err)
		}
	}
}

// The fast path's own float conversion gives strconv.ParseFloat's value,
// bit for bit, over numbers of every length and scale knee writes and more.
func TestFastFloatMatchesStrconv(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	texts := []string{"0", "-0", "0.0", "-0.0", "1", "0.1", "0.3", "137.7441", "1430.077328", "4503599627370495.5",
		"4503599627370496", "9007199254740993", "0.0000000000000000000001", "123456789012345678901234567890",
		"1.7976931348623157", "2.2250738585072014", "604800000.000001", "99999999999999999999.5"}
	for range 20000 {
		v := rng.Float64() * math.Pow(10, float64(rng.IntN(16)-3))
		texts = append(texts, strconv.FormatFloat(v, 'f', -1, 64), strconv.FormatFloat(-v, 'f', rng.IntN(12), 64))
	}
	for _, text := range texts {
		p := fastParser{b: []byte(text)}
		var got float64
		if !p.float(&got) || p.i != len(text) {
			t.Errorf("%s: not read", text)
			continue
		}
		want, err := strconv.ParseFloat(text, 64)
		if err != nil {
			t.Fatal(err)
		}
		if math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("%s: read as %v (%#x), strconv says %v (%#x)", text, got, math.Float64bits(got), want, math.Float64bits(want))
		}
	}
}
