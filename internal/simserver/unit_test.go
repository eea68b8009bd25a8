package simserver

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestAppendMS(t *testing.T) {
	for ns, want := range map[int64]string{0: "0", 1: "0.000001", 1500000: "1.5", 123456789: "123.456789", 2000000: "2", -250000: "-0.25"} {
		if got := string(appendMS(nil, ns)); got != want {
			t.Errorf("appendMS(%d) = %q, want %q", ns, got, want)
		}
	}
}

func TestChunksAreValidJSON(t *testing.T) {
	for _, chat := range []bool{true, false} {
		tm := &timing{queue: 1000, prefill: 2500000, decode: 7000000, tokenTimes: []int64{2501000, 5000000, 9501000},
			writeTimes: []int64{2510000, 5000001, 9600000}}
		tp := newChunkTemplate(chat, 42, 1700000000, []byte(`"m\"x"`))
		var b []byte
		if chat {
			b = tp.appendRole(b)
		}
		b = tp.appendToken(b, word(42, 0))
		b = tp.appendFinal(b, "length", true, 5, 3, tm)
		events := strings.Split(strings.TrimSuffix(string(b), "\n\n"), "\n\n")
		if events[len(events)-1] != "data: [DONE]" {
			t.Fatalf("no [DONE]: %q", b)
		}
		for _, ev := range events[:len(events)-1] {
			var v map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(ev, "data: ")), &v); err != nil {
				t.Fatalf("chat=%v: %v: %s", chat, err, ev)
			}
			if v["model"] != `m"x` || v["id"] == nil {
				t.Errorf("chunk %s", ev)
			}
		}
		var last struct {
			Timing kneeTiming `json:"knee_timing"`
		}
		json.Unmarshal([]byte(strings.TrimPrefix(events[len(events)-2], "data: ")), &last)
		if last.Timing.PrefillMS != 2.5 || len(last.Timing.TokenTimesMS) != 3 || last.Timing.TokenTimesMS[2] != 9.501 ||
			len(last.Timing.WriteTimesMS) != 3 || last.Timing.WriteTimesMS[1] != 5.000001 || last.Timing.WriteTimesMS[2] != 9.6 {
			t.Errorf("timing %+v", last.Timing)
		}
		whole := tp.appendWhole(nil, 42, 3, "length", 5, tm)
		var v map[string]any
		if err := json.Unmarshal(whole, &v); err != nil {
			t.Fatalf("non-streaming body: %v: %s", err, whole)
		}
		bad := tp.appendMalformed(nil, " x")
		if json.Valid([]byte(strings.TrimSpace(strings.TrimPrefix(string(bad), "data: ")))) {
			t.Errorf("malformed chunk is valid JSON: %s", bad)
		}
	}
}

func TestLagPercentiles(t *testing.T) {
	var h lagHist
	for i := int64(1); i <= 1000; i++ {
		h.add(i * 1000) // 1 µs .. 1 ms
	}
	h.add(5 * int64(time.Second)) // overflow, counted in max
	st := mergeLag([]*lagHist{&h})
	if st.Tokens != 1001 || st.P50 < 499*time.Microsecond || st.P50 > 502*time.Microsecond || st.P99 < 990*time.Microsecond || st.P99 > 1002*time.Microsecond || st.Max != 5*time.Second {
		t.Fatalf("%+v", st)
	}
	h.reset()
	if st := mergeLag([]*lagHist{&h}); st.Tokens != 0 || st.Max != 0 {
		t.Fatalf("after reset %+v", st)
	}
}

func TestFaultDrawsDeterministicAndProportional(t *testing.T) {
	f := Faults{ErrorRate: 0.2, CutRate: 0.05}
	n, fails, cuts := 20000, 0, 0
	for i := uint64(0); i < uint64(n); i++ {
		p := f.plan(3, i, 10)
		if p != f.plan(3, i, 10) {
			t.Fatal("not deterministic")
		}
		if p.fail {
			fails++
		}
		if p.cutAt >= 0 {
			cuts++
			if p.cutAt != 5 {
				t.Fatalf("cut at %d, want mid-stream 5", p.cutAt)
			}
		}
		if p.stallAt >= 0 || p.malformAt >= 0 {
			t.Fatal("fault that is off was drawn")
		}
	}
	if r := float64(fails) / float64(n); math.Abs(r-0.2) > 0.02 {
		t.Errorf("error share %v, want 0.2", r)
	}
	if r := float64(cuts) / float64(n); math.Abs(r-0.05) > 0.01 {
		t.Errorf("cut share %v, want 0.05", r)
	}
	if f.plan(3, 1, 10) == f.plan(4, 1, 10) && f.plan(3, 2, 10) == f.plan(4, 2, 10) && f.plan(3, 3, 10) == f.plan(4, 3, 10) && f.plan(3, 7, 10) == f.plan(4, 7, 10) {
		t.Error("seed has no effect")
	}
}

func TestClockMapping(t *testing.T) {
	c := clock{slowAt: 100, factor: 3}
	for _, v := range []int64{0, 50, 100, 101, 400, 10000} {
		if got := c.toVirtual(c.toServer(v)); got != v {
			t.Errorf("round trip %d -> %d", v, got)
		}
	}
	if c.toServer(200) != 400 || (clock{}).toServer(200) != 200 {
		t.Error("slow mapping wrong")
	}
}

// TestSlowDecodeFault: after SlowAfter, the server's intended token gaps
// are SlowFactor times the engine's.
func TestSlowDecodeFault(t *testing.T) {
	url, _ := startTest(t, func(c *Config) { c.Faults = Faults{SlowAfter: 60 * time.Millisecond, SlowFactor: 3} })
	resp, b := post(t, url, "/v1/completions", `{"prompt":"x","max_tokens":20}`)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	var c chunk
	json.Unmarshal(b, &c)
	tt := c.Timing.TokenTimesMS
	first, last := tt[2]-tt[1], tt[19]-tt[18]
	if r := last / first; r < 2.9 || r > 3.1 {
		t.Errorf("late gap %v ms / early gap %v ms = %v, want 3", last, first, r)
	}
}

func TestCloseCutsRunningStreams(t *testing.T) {
	url, srv := startTest(t, nil)
	done := make(chan error, 1)
	go func() {
		resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"x","max_tokens":8000,"stream":true}`))
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode == 200 {
				err = nil // a whole 200 stream: wrong
			} else if err == nil {
				err = fmt.Errorf("status %d", resp.StatusCode) // 503 before the first token: right
			}
		}
		done <- err
	}()
	waitFor(t, "request running", func() bool { return srv.EngineStats().Running == 1 })
	srv.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a stream cut by Close read as complete")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close left a stream hanging")
	}
}
