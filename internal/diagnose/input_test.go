package diagnose

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
)

func TestReadPhaseCSV(t *testing.T) {
	in := "# per-request phases\nqueue_ms,prefill_ms,decode_ms,input_tokens,output_tokens,error\n5,20,1000,512,101,\n,,,,,http_5xx\n"
	recs, f, err := Read(strings.NewReader(in))
	if err != nil || f != FormatPhases || len(recs) != 2 {
		t.Fatalf("%v %v %d", err, f, len(recs))
	}
	r := recs[0]
	ttft, _ := r.TTFT()
	tpot, _ := r.TPOT()
	if r.ServerPhases.Queue != 5*time.Millisecond || ttft != 25*time.Millisecond || tpot != 10*time.Millisecond || r.InputTokens != 512 {
		t.Errorf("record %+v ttft %v tpot %v", r, ttft, tpot)
	}
	if recs[1].Error != record.ErrHTTP5xx {
		t.Errorf("second row %+v", recs[1])
	}
}

func TestReadPhaseJSONLAndClientOnly(t *testing.T) {
	in := `{"ttft_ms": 120, "tpot_ms": 9, "input_tokens": 2048, "output_tokens": 11, "in_flight": 3, "sent_ms": 10}` + "\n" +
		`{"queue_ms": 1, "prefill_ms": 2, "decode_ms": 30, "output_tokens": 4, "error": null}` + "\n"
	recs, f, err := Read(strings.NewReader(in))
	if err != nil || f != FormatPhases || len(recs) != 2 {
		t.Fatalf("%v %v %d", err, f, len(recs))
	}
	e2e, _ := recs[0].E2E()
	if e2e != 210*time.Millisecond || recs[0].ServerPhases != nil || recs[0].InFlightAtSend != 3 || recs[0].Sent != 10*time.Millisecond {
		t.Errorf("row 1: %+v e2e %v", recs[0], e2e)
	}
	if recs[1].ServerPhases == nil || recs[1].Done-recs[1].FirstToken != 30*time.Millisecond {
		t.Errorf("row 2: %+v", recs[1])
	}
}

func TestReadKneeRecords(t *testing.T) {
	var buf bytes.Buffer
	w := record.NewWriter(&buf)
	r := record.Request{ID: 1, Sent: time.Millisecond, FirstToken: 30 * time.Millisecond, Done: 90 * time.Millisecond,
		TokenTimes: []time.Duration{30 * time.Millisecond, 90 * time.Millisecond}, OutputTokens: 2,
		ServerPhases: &record.Phases{Queue: time.Millisecond, Prefill: 20 * time.Millisecond, Decode: 60 * time.Millisecond}}
	_ = w.Write(&r)
	_ = w.Flush()
	recs, f, err := Read(&buf)
	if err != nil || f != FormatRecords || len(recs) != 1 || recs[0].ServerPhases.Prefill != 20*time.Millisecond {
		t.Fatalf("%v %v %+v", err, f, recs)
	}
}

func TestReadVLLM(t *testing.T) {
	b, err := os.ReadFile("testdata/vllm_result.json")
	if err != nil {
		t.Fatal(err)
	}
	recs, f, err := Read(bytes.NewReader(b))
	if err != nil || f != FormatVLLM {
		t.Fatalf("%v %v", err, f)
	}
	if len(recs) != 3 || recs[2].Error != record.ErrHTTP5xx {
		t.Fatalf("%+v", recs)
	}
	ttft, _ := recs[0].TTFT()
	itls := recs[0].ITLs(nil)
	if ttft != 120*time.Millisecond || len(itls) != 3 || itls[1] != 20*time.Millisecond || recs[0].InputTokens != 1024 || recs[0].OutputTokens != 4 {
		t.Errorf("record 0: ttft %v itls %v %+v", ttft, itls, recs[0])
	}
	if recs[1].Sent != 500*time.Millisecond {
		t.Errorf("start_times not used: sent %v", recs[1].Sent)
	}
}

func TestReadErrors(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"empty", "", "empty input"},
		{"blank", "  \n\n", "empty input"},
		{"unknown column", "queue_ms,prefill,decode_ms\n1,2,3\n", `line 1, column 2: unknown column "prefill"`},
		{"no phases or ttft", "input_tokens,output_tokens\n1,2\n", "line 1: the header needs queue_ms,prefill_ms,decode_ms or ttft_ms"},
		{"non-numeric", "ttft_ms,input_tokens\n12,abc\n", `line 2, column 2 (input_tokens): "abc" is not a non-negative number`},
		{"short row", "ttft_ms,input_tokens\n12\n", "line 2: 1 fields, but the header has 2 columns"},
		{"header only", "ttft_ms\n", "line 1: a header but no rows"},
		{"bad kind", "ttft_ms,error\n1,oops\n", `line 2: error "oops" is not an error kind`},
		{"jsonl unknown", `{"ttft": 1}` + "\n", `line 1: unknown field "ttft"`},
		{"jsonl bad line", `{"ttft_ms": 1}` + "\n{oops\n", "line 2: not a JSON object"},
		{"jsonl string number", `{"ttft_ms": "1"}` + "\n", "line 1: field ttft_ms"},
		{"knee record bad", `{"id":1,"sent_ms":0,"scheduled_ms":0,"stream_end_ms":0,"lag_ms":0,"input_tokens":0,"output_tokens":0,"error":"weird"}` + "\n", "line 1: not a knee record"},
		{"vllm broken", "{\n \"ttfts\": [0.1,\n oops]\n}", "line 3: not valid JSON"},
		{"vllm mismatched", `{"ttfts": [0.1, 0.2], "input_lens": [1]}`, `field "input_lens" has 1 entries but "ttfts" has 2`},
		{"json without ttfts", "{\n\"foo\": 1\n}", `no "ttfts" array`},
		{"e2e shorter", "ttft_ms,e2e_ms\n10,5\n", "line 2: e2e_ms is shorter than ttft_ms"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := Read(strings.NewReader(c.in))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
}

// FuzzRead: any input gives records or an error, never a panic, and the
// records it gives can be diagnosed.
func FuzzRead(f *testing.F) {
	b, _ := os.ReadFile("testdata/vllm_result.json")
	f.Add(string(b))
	f.Add("queue_ms,prefill_ms,decode_ms,input_tokens,output_tokens,error\n5,20,1000,512,101,\n,,,,,http_5xx\n")
	f.Add(`{"ttft_ms": 120, "tpot_ms": 9, "input_tokens": 2048, "output_tokens": 11}` + "\n")
	f.Add(`{"id":1,"sent_ms":0,"scheduled_ms":0,"stream_end_ms":5,"lag_ms":0,"first_token_ms":3,"done_ms":5,"input_tokens":3,"output_tokens":2}` + "\n")
	f.Fuzz(func(t *testing.T, in string) {
		recs, _, err := Read(strings.NewReader(in))
		if err != nil {
			return
		}
		half := len(recs) / 2
		_ = Diagnose(recs[half:], Options{Baseline: recs[:half]})
		_ = Diagnose(recs, Options{})
	})
}

// A knee record whose line is longer than the format sniffer's window is
// still read as a knee record.
func TestReadLongKneeRecord(t *testing.T) {
	var buf bytes.Buffer
	w := record.NewWriter(&buf)
	r := record.Request{ID: 1, Sent: time.Millisecond, OutputTokens: 400000}
	for i := 0; i < 400000; i++ {
		r.TokenTimes = append(r.TokenTimes, time.Duration(i+2)*time.Millisecond+123456*time.Nanosecond)
	}
	r.FirstToken, r.Done = r.TokenTimes[0], r.TokenTimes[len(r.TokenTimes)-1]
	_ = w.Write(&r)
	_ = w.Write(&r)
	_ = w.Flush()
	if buf.Len() < 2*peekSize {
		t.Fatalf("record line only %d bytes", buf.Len())
	}
	recs, f, err := Read(&buf)
	if err != nil || f != FormatRecords || len(recs) != 2 {
		t.Fatalf("%v %v %d", err, f, len(recs))
	}
}

// vLLM's default result file (no --save-detailed) has only aggregates: it is
// recognised as vLLM and the error says what is missing and how to get it,
// whether the JSON is on one line (as vLLM writes it) or indented.
func TestReadVLLMSummaryOnly(t *testing.T) {
	b, err := os.ReadFile("testdata/vllm_summary.json")
	if err != nil {
		t.Fatal(err)
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, b, "", "  "); err != nil {
		t.Fatal(err)
	}
	for name, in := range map[string][]byte{"one line": b, "indented": indented.Bytes()} {
		_, f, err := Read(bytes.NewReader(in))
		if err == nil {
			t.Fatalf("%s: no error", name)
		}
		msg := err.Error()
		for _, want := range []string{"vLLM", "summary", "--save-detailed", "ttfts"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: error %q does not mention %q", name, msg, want)
			}
		}
		if strings.Contains(msg, "unknown field") || f != FormatVLLM {
			t.Errorf("%s: format %q, error %q; want it read as a vLLM result", name, f, msg)
		}
	}
}
